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
