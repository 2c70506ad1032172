"""Ray stays on the loopback even when something imported Ray before the council did (a test module at
collection, a user's script): Ray reads its cluster switch into a constant at first import."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import ray  # first, before the council sets anything
from council.cluster.raycluster import ensure_ray, shutdown_ray
ensure_ray(num_cpus=1)
print(sorted({n["NodeManagerAddress"] for n in ray.nodes()}))
shutdown_ray()
"""


def test_ray_imported_first_still_binds_the_loopback():
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "['127.0.0.1']"


CLUSTER = """
import os, sys
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
from ray.cluster_utils import Cluster
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
cluster.add_node(num_cpus=1)
cluster.wait_for_nodes()
from council.cli import main
try:
    code = main(["run", "--backend", "ray", "--ray-address", cluster.address, "--runs-dir", sys.argv[1]])
finally:
    import ray
    ray.shutdown()
    cluster.shutdown()
print("exit", code)
"""


def test_the_embedded_provider_is_refused_on_a_cluster_it_cannot_serve(tmp_path):
    """Two nodes (both on 127.0.0.1 here): judges on the other node could not reach a provider bound to the
    driver's loopback, so the run is refused with a clear message instead of failing silently."""
    done = subprocess.run([sys.executable, "-c", CLUSTER, str(tmp_path / "runs")], capture_output=True, text=True,
                          timeout=180)
    assert done.stdout.strip().splitlines()[-1] == "exit 2", (done.stdout[-1000:], done.stderr[-2000:])
    assert "other nodes of the cluster cannot reach" in done.stderr
