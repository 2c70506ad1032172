"""Starting or joining Ray, on the loopback and without Ray's notices on the user's screen.

Left to itself, a local Ray binds its GCS, raylet and worker sockets to the machine's address on all
interfaces. Ray decides the node address at import time: with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` it
takes the loopback address, and every socket of a local instance then listens on 127.0.0.1 only. We set
that (unless the caller already chose) before Ray is imported, and pass ``_node_ip_address`` as well.
Joining an existing cluster (``address``) leaves its networking to the cluster's own configuration.

Ray also talks on the driver's stderr, in two voices:

- its Python logging (the ``ray`` logger, whose handler writes to stderr), which says "Token authentication
  is enabled for this Ray cluster..." on every start (``ray._private.authentication.authentication_token_setup``).
  A filter on that logger's handlers hands each record to the log of the run being driven (``log.jsonl``,
  event ``ray.log``) instead. ``ray.init(configure_logging=False)`` would remove those handlers, and Python's
  last-resort handler would then print Ray's warnings anyway, so Ray configures its logger (level INFO).
- its C++ core worker, which writes ERROR lines to file descriptor 2 whatever its log level (and already
  writes them to its own log file, ``<ray session>/logs/python-core-driver-*.log``): a sharded run's
  restartable actors with their constructor arguments in the object store get "Actor with class name:
  'ShardActor' ... has constructor arguments in the object store and max_restarts > 0" (``core_worker.cc``).
  When a command line asks for it (:func:`keep_native_notices_off_stderr`) and this process's ``sys.stderr``
  is descriptor 2 itself, descriptor 2 is pointed at ``<ray session>/logs/council-driver-<pid>.err`` once Ray
  is up, and ``sys.stderr`` at a copy of the original descriptor: everything Python prints still reaches
  the terminal (or the pipe), and what Ray's C++ writes goes to that file, whose path the run's log records
  (``ray.native_stderr``). :func:`shutdown_ray` puts descriptor 2 back.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
import tempfile
import threading
import time
from typing import Any

from council.core import logs
from council.core.threads import in_thread

LOOPBACK = "127.0.0.1"
# Ray keeps the ``ray`` logger's handlers (with our filter on them) and sets its level; with
# ``configure_logging=False`` it would remove them, and Python's last-resort handler would print Ray's warnings.
_LOGGING = {"configure_logging": True, "logging_level": logging.INFO}

_divert_requested = False
_diverted: dict[str, Any] = {}  # saved descriptor, our sys.stderr, the file: while descriptor 2 points elsewhere


def keep_native_notices_off_stderr(enabled: bool = True) -> None:
    """Ask :func:`ensure_ray` to point descriptor 2 at a log file once Ray is up (see the module's docstring).
    For command-line processes, which own their stderr; a library caller's stderr is left alone."""
    global _divert_requested
    _divert_requested = enabled


def ensure_ray(address: str | None = None, *, num_cpus: int | None = None) -> None:
    """Initialise Ray once per process: a private local instance on 127.0.0.1, or join ``address``."""
    if address is None:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    if ray.is_initialized():
        return
    _route_ray_logging()
    if address is None:
        _loopback_even_if_imported_earlier()
        _started_here.append(True)
        node = _start_local_node(num_cpus)
        if node is not None:
            _local_node.append(node)
            ray.init(address=node.address, _node_ip_address=LOOPBACK, log_to_driver=False, **_LOGGING)
        else:  # "local": a new private instance, never one that happens to run on this machine already
            ray.init(address="local", _node_ip_address=LOOPBACK, include_dashboard=False, num_cpus=num_cpus,
                     log_to_driver=False, **_LOGGING)
    else:
        ray.init(address=address, log_to_driver=False, **_LOGGING)
    if _divert_requested:
        _divert_native_stderr()


_local_node: list[Any] = []  # the private instance this process started (:func:`_start_local_node`), until shut down
_started_here: list[bool] = []  # this process started the private instance it is connected to (either way)


def started_here() -> bool:
    """Whether this process is connected to a private local instance that it started itself (:func:`ensure_ray`
    without an address): no other process joins it unasked."""
    return bool(_started_here) and is_up()


def _start_local_node(num_cpus: int | None) -> Any | None:
    """A private single-node instance on 127.0.0.1, started as ``ray.init(address="local")`` starts one, less
    the three processes a run never reads: the log monitor (it forwards workers' output to drivers, and ours
    ask for none: ``log_to_driver=False``), the autoscaler's monitor (a private node never scales) and the
    dashboard's head, which without the dashboard (``include_dashboard=False``) serves only Ray's usage
    statistics and the job and state APIs, none of which a run calls. Each costs a Python process's start
    (the dashboard's head about a second of a core, and as much of the start's wall time), and at shutdown
    Ray waits for each to exit. ``None`` when this Ray's node API differs from the one this is written for
    (``ray.init`` then starts the instance, all of it).

    Once its processes are started, the node waits for its raylet to register with the GCS
    (:func:`_await_registration`) before Ray's own check, which finds no raylet when asked too early (the
    raylet registers once its agents are up, about half a second after it starts) and then sleeps a whole
    second before it asks again, with the machine idle."""
    try:
        from ray._private.node import Node
        from ray._private.parameter import RayParams

        class PrivateNode(Node):
            def start_api_server(self, **_: Any) -> None:  # the dashboard's head: not started
                return None

            def start_ray_processes(self) -> None:
                super().start_ray_processes()
                _await_registration(self.gcs_address, self.node_id)

        params = RayParams(node_ip_address=LOOPBACK, include_dashboard=False, num_cpus=num_cpus,
                           include_log_monitor=False, no_monitor=True)
        return PrivateNode(params, head=True, shutdown_at_exit=False, spawn_reaper=True, ray_init_cluster=True)
    except (ImportError, TypeError, AttributeError):
        return None


REGISTRATION_POLL_S = 0.02
REGISTRATION_WAIT_S = 30.0  # as long as Ray's own check waits (``raylet_start_wait_time_s``)


def _await_registration(gcs_address: str, node_id: str) -> None:
    """Return once the GCS lists the node ``node_id`` as alive, asking every :data:`REGISTRATION_POLL_S`, or
    after :data:`REGISTRATION_WAIT_S`, or at once if this Ray cannot be asked so: Ray's own check follows and
    decides whether the node started."""
    try:
        from ray._private import services
        from ray._private.state import GlobalState

        state = GlobalState()
        state._initialize_global_state(services._get_gcs_client_options(gcs_address))
    except (ImportError, AttributeError, TypeError):
        return
    deadline = time.monotonic() + REGISTRATION_WAIT_S
    try:
        while time.monotonic() < deadline:  # bounded
            if any(n.get("NodeID") == node_id and n.get("Alive") for n in state.node_table()):
                return
            time.sleep(REGISTRATION_POLL_S)
    except Exception:  # noqa: BLE001 - Ray's own check follows and reports what is wrong
        return
    finally:
        state.disconnect()


def ensure_ray_soon(address: str | None = None, *, num_cpus: int | None = None) -> asyncio.Future[None]:
    """:func:`ensure_ray` in a thread, so that the event loop goes on (answering a Ctrl-C, starting the
    embedded provider) while Ray starts. The thread never ends: Ray's local node processes die with the thread
    that started them (``PR_SET_PDEATHSIG``), so it lingers, idle, for the life of the process."""
    if is_up():
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    def start() -> None:
        try:
            ensure_ray(address, num_cpus=num_cpus)
        finally:
            _settled.set()

    _settled.clear()
    return in_thread(start, name="ray-start", linger=True)


_settled = threading.Event()  # the last start in a thread (:func:`ensure_ray_soon`) has ended, one way or another
_settled.set()


def still_starting() -> bool:
    """Whether Ray is being started in the background (:func:`ensure_ray_soon`) and is not up yet."""
    return not _settled.is_set()


def is_up() -> bool:
    """Whether this process is connected to a Ray instance (without importing Ray when nothing has)."""
    if "ray" not in sys.modules:
        return False
    import ray

    return ray.is_initialized()


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


class _ToRunLog(logging.Filter):
    """On the handlers of Ray's ``ray`` logger: each record goes to the log of the run in whose context it
    was emitted (:func:`council.core.logs.run_log`), and none to the screen."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            log = logs.get_logger("ray")
            emit = getattr(log, record.levelname.lower(), log.info)
            emit("ray.log", logger=record.name, message=record.getMessage())
        except Exception:  # noqa: BLE001 - a log line is never worth a failed run
            pass
        return False


def _route_ray_logging() -> None:
    """Put :class:`_ToRunLog` on every handler of the ``ray`` logger (Ray gives it a stderr handler when it is
    imported and stops it propagating); a ``ray`` logger without handlers gets one that only routes."""
    logger = logging.getLogger("ray")
    handlers = logger.handlers or []
    if not handlers:
        handler = logging.NullHandler()
        logger.addHandler(handler)
        logger.propagate = False
        handlers = [handler]
    for handler in handlers:
        if not any(isinstance(f, _ToRunLog) for f in handler.filters):
            handler.addFilter(_ToRunLog())


def _divert_native_stderr() -> None:
    """Point descriptor 2 at a file in Ray's log folder and ``sys.stderr`` at a copy of the original (see the
    module's docstring); nothing when ``sys.stderr`` is not descriptor 2 (a test's capture, a library caller)."""
    if _diverted:
        return
    stream = sys.stderr
    try:
        if stream is None or stream.fileno() != 2:
            return
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return
    path = os.path.join(_ray_logs_dir(), f"council-driver-{os.getpid()}.err")
    try:
        sink = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        return
    stream.flush()
    saved = os.dup(2)
    ours = open(saved, "w", buffering=1, encoding=stream.encoding, errors=stream.errors, closefd=False)  # noqa: SIM115
    os.dup2(sink, 2)
    os.close(sink)
    sys.stderr = ours
    _diverted.update(saved=saved, stream=ours, original=stream, path=path)
    logs.get_logger("council.ray").info("ray.native_stderr", path=path)


def _restore_native_stderr() -> None:
    if not _diverted:
        return
    ours, saved = _diverted["stream"], _diverted["saved"]
    try:
        ours.flush()
    except (OSError, ValueError):
        pass
    os.dup2(saved, 2)
    if sys.stderr is ours:
        sys.stderr = _diverted["original"]
    ours.close()
    os.close(saved)
    _diverted.clear()


def _ray_logs_dir() -> str:
    """The log folder of this process's Ray session, or the temporary folder."""
    try:
        from ray._private import worker

        node = _local_node[0] if _local_node else worker._global_node
        if node is not None and node.get_logs_dir_path():
            return node.get_logs_dir_path()
    except (ImportError, AttributeError):
        pass
    return tempfile.gettempdir()


def node_count() -> int:
    """Alive nodes of the Ray instance this process is connected to."""
    import ray

    return sum(1 for node in ray.nodes() if node.get("Alive"))


def shutdown_ray_soon(timings: Any) -> threading.Thread:
    """:func:`shutdown_ray` in a thread (most of it is waiting for Ray's processes to end), timed as ``ray stop``
    in ``timings`` (a :class:`council.run.timings.Timings`); join the thread before exiting."""
    def stop() -> None:
        with timings.phase("ray stop"):
            shutdown_ray()

    thread = threading.Thread(target=stop, name="ray-stop", daemon=True)
    thread.start()
    return thread


def shutdown_ray() -> None:
    if is_up():
        import ray

        ray.shutdown()  # a driver of an instance it did not start itself only disconnects...
    while _local_node:  # ...so the private node's processes are stopped here, as ray.shutdown stops its own
        _local_node.pop().kill_all_processes(check_alive=False, allow_graceful=True)
    _started_here.clear()
    _restore_native_stderr()
