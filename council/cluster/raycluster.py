"""Starting or joining Ray.

Left to itself, a local Ray binds its GCS, raylet and worker sockets to the machine's address on all
interfaces. Ray decides the node address at import time: with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` it
takes the loopback address, and every socket of a local instance then listens on 127.0.0.1 only. We set
that (unless the caller already chose) before Ray is imported, and pass ``_node_ip_address`` as well.
Joining an existing cluster (``address``) leaves its networking to the cluster's own configuration.
"""

from __future__ import annotations

import os

LOOPBACK = "127.0.0.1"


def ensure_ray(address: str | None = None, *, num_cpus: int | None = None) -> None:
    """Initialise Ray once per process: a private local instance on 127.0.0.1, or join ``address``."""
    if address is None:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    if ray.is_initialized():
        return
    if address is None:
        _loopback_even_if_imported_earlier()
        ray.init(  # "local": a new private instance, never one that happens to run on this machine already
            address="local", _node_ip_address=LOOPBACK, include_dashboard=False, num_cpus=num_cpus, log_to_driver=False,
            configure_logging=False,
        )
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False)


def _loopback_even_if_imported_earlier() -> None:
    """Ray reads the variable above into a constant when it is first imported; if something imported Ray
    before us (a library, a test module), set the constant too, or the node registers the machine's address."""
    if os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") != "0":
        return  # the caller chose otherwise
    try:
        from ray._private import ray_constants
    except ImportError:  # a Ray without this module: the environment variable is all there is
        return
    ray_constants.ENABLE_RAY_CLUSTER = False


def node_count() -> int:
    """Alive nodes of the Ray instance this process is connected to."""
    import ray

    return sum(1 for node in ray.nodes() if node.get("Alive"))


def shutdown_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()
