"""Ray stays on the loopback even when something imported Ray before the council did (a test module at
collection, a user's script): Ray reads its cluster switch into a constant at first import. The private
instance the council starts runs without the three processes no run reads (the log monitor, the
autoscaler's monitor and the dashboard's head), starts without Ray's idle second (its raylet is registered
before Ray's own check asks), and its shutdown leaves none of its processes behind."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import os, time
import ray  # first, before the council sets anything
from council.cluster import raycluster
from council.cluster.raycluster import ensure_ray, shutdown_ray

registered = []  # the node as the GCS lists it once the council's wait returned, before Ray's own check asks
waited = raycluster._await_registration

def watched(gcs_address, node_id):
    waited(gcs_address, node_id)
    from ray._private import services
    from ray._private.state import GlobalState
    state = GlobalState()
    state._initialize_global_state(services._get_gcs_client_options(gcs_address))
    registered.extend(n["Alive"] for n in state.node_table() if n["NodeID"] == node_id)
    state.disconnect()

raycluster._await_registration = watched

def descendants():
    children = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(pid))
        except OSError:
            pass
    found, todo = {}, [os.getpid()]
    while todo:
        for pid in children.get(todo.pop(), []):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    found[pid] = f.read().replace(b"\\0", b" ").decode()
            except OSError:
                continue
            todo.append(pid)
    return found

ensure_ray(num_cpus=1)
print(registered)
# The wait is bounded and leaves the verdict to Ray: for a node the GCS never lists (an id no node has) it asks
# until its bound and returns without raising; for a listed node it asks once.
from ray._private.state import GlobalState
asked = []
listed = GlobalState.node_table
GlobalState.node_table = lambda self: asked.append(1) or listed(self)
raycluster.REGISTRATION_WAIT_S = 0.3
gcs = ray.get_runtime_context().gcs_address
waited(gcs, "f" * 56)
unknown, asked[:] = len(asked), []
waited(gcs, ray.get_runtime_context().get_node_id())
print([unknown > 1, len(asked)])
print(sorted({n["NodeManagerAddress"] for n in ray.nodes()}))
started = descendants()
print(sorted({kind for kind in ("raylet", "gcs_server", "log_monitor", "monitor.py", "dashboard/dashboard.py")
              if any(kind in cmd for cmd in started.values())}))
shutdown_ray()
deadline = time.monotonic() + 10
while set(descendants()) & set(started) and time.monotonic() < deadline:
    time.sleep(0.1)
print(sorted(cmd[:60] for pid, cmd in descendants().items() if pid in started))
"""


def test_ray_imported_first_still_binds_the_loopback():
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    registered, bounded, addresses, kinds, left = done.stdout.strip().splitlines()[-5:]
    # Ray's own check (GlobalStateAccessor::GetNode) sleeps a whole second when it finds no raylet at its first
    # ask; the council's wait returned only once the GCS listed the node alive, so that check found it at once.
    assert registered == "[True]"
    assert bounded == "[True, 1]"  # an unknown node: asked until the bound; the node itself: asked once
    assert addresses == "['127.0.0.1']"
    assert kinds == "['gcs_server', 'raylet']"  # no monitor, no dashboard head: nothing reads them
    assert left == "[]"  # every process of the instance ended with shutdown_ray
