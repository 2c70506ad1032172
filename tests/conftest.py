"""Shared fixtures and the order of the suite. One Ray instance on 127.0.0.1, while the tests that use it run."""

from __future__ import annotations

import gc
import os
import sys

import pytest

# Ray reads this when first imported (a test module may import it at collection): local Ray on 127.0.0.1.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# The suite's processes (its workers, the command lines it runs, Ray's workers) write and reuse bytecode caches,
# as Python does by default. With PYTHONDONTWRITEBYTECODE set, each of its few hundred processes compiled the
# project's modules again: a six-row `council run` used 2.7 s of a core without the caches and 2.1 s with them.
# The caches are __pycache__ folders, which git ignores.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture(scope="module")
def fresh_dir(tmp_path_factory):
    """A new empty folder per call: hypothesis runs many examples in one test, and ``tmp_path`` is one."""
    return lambda: tmp_path_factory.mktemp("example")


@pytest.fixture(autouse=True)
def _no_report_at_run_end(request, monkeypatch):
    """Every run ends by writing its report.html, about a second of matplotlib: over the suite's few hundred
    runs that is minutes. Tests marked ``report_at_end`` keep it (they test it); the report's own tests call
    ``write_report`` themselves."""
    if request.node.get_closest_marker("report_at_end") is None:
        monkeypatch.setenv("COUNCIL_NO_REPORT", "1")  # read at each run's end, here and in the command lines it runs


# The modules whose tests use Ray's instance of the session (``ray_session``): one unit of work, run by one
# worker one module after the other, so that the session starts one Ray instead of one on each worker that meets
# such a test (each about 5 s of a core to start: its GCS, raylet, agents and prestarted workers), and stops it
# when they are done (idle, an instance costs about 4% of a core). test_cluster.py is not one of them: it
# replaces that instance with a cluster of its own.
RAY_UNIT = "ray_session"
RAY_SESSION_MODULES = {
    "tests/council/test_end_to_end.py", "tests/elicitor/test_elicit_run.py", "tests/council/test_quota_stats.py",
    "tests/council/test_actor_crash.py", "tests/council/test_ray_quota.py", "tests/council/test_batch_shards.py",
}

# The modules that mostly wait (on a provider's rate limits, at a set pace): one unit of work, run one after the
# other by one worker while the others keep both cores busy. Side by side, as the order by length had them, they
# left about 20 s of a core idle (sampled from /proc/stat each second).
WAITING_MODULES = {"tests/council/test_loadtest.py", "tests/council/test_scheduling.py"}

# The units of work of more than one module (pytest-xdist's loadscope runs each unit on one worker); every other
# module is a unit of its own.
UNITS = {RAY_UNIT: RAY_SESSION_MODULES, "waiting": WAITING_MODULES}
_UNIT_OF = {module: unit for unit, modules in UNITS.items() for module in modules}

# Each module's wall seconds, measured with the suite on three workers of a 2-core machine (those of 5 s or more).
# Units of work start longest first (their modules' seconds summed), so that the workers end together instead of
# one finishing a long unit alone; the rest keep collection order. This orders the run; it never changes which
# tests run (pytest-xdist keeps collection order: --no-loadscope-reorder).
LONGEST_S = {
    "tests/council/test_cluster.py": 104, "tests/inspect/test_scorer.py": 66, "tests/council/test_stop_moments.py": 66,
    "tests/council/test_end_to_end.py": 59, "tests/council/test_interrupt.py": 48, "tests/report/test_report.py": 37,
    "tests/council/test_cli.py": 32, "tests/council/test_crossjudge_run.py": 31, "tests/inspect/test_retry.py": 29,
    "tests/council/test_scheduling.py": 28, "tests/council/test_fault_matrix.py": 26,
    "tests/council/test_quota_stats.py": 25, "tests/service/test_openapi.py": 25, "tests/council/test_run_states.py": 24,
    "tests/council/test_loadtest.py": 24, "tests/service/test_callbacks.py": 24, "tests/council/test_batch_run.py": 22,
    "tests/elicitor/test_elicit_run.py": 20, "tests/service/test_service.py": 19, "tests/council/test_batch_crash.py": 17,
    "tests/sim/test_sim.py": 16, "tests/inspect/test_interrupt.py": 16, "tests/council/test_importers_real.py": 14,
    "tests/council/test_crash_resume.py": 14, "tests/council/test_actor_crash.py": 12, "tests/service/test_client.py": 11,
    "tests/council/test_integrity.py": 11, "tests/council/test_shadow.py": 10, "tests/council/test_anonymise_run.py": 9,
    "tests/service/test_fair_share.py": 9, "tests/council/test_timings.py": 8, "tests/council/test_batch_audit.py": 8,
    "tests/service/test_durability.py": 8, "tests/council/test_anonymise.py": 8,
    "tests/bank/test_loader_properties.py": 7, "tests/council/test_importer_properties.py": 7,
    "tests/council/test_archive_zstd.py": 7, "tests/council/test_prompt_properties.py": 7,
    "tests/tools/test_estimate.py": 6, "tests/council/test_ray_quota.py": 6, "tests/council/test_tables.py": 6,
    "tests/council/test_deliberation.py": 5, "tests/council/test_failures.py": 5, "tests/council/test_scales.py": 5,
    "tests/council/test_secrets.py": 5, "tests/council/test_injection.py": 5,
}


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _scope(nodeid: str) -> str:
    """The unit of work of a test: the one of UNITS its module is in, else its module."""
    module = _module(nodeid)
    return _UNIT_OF.get(module, module)


def pytest_collection_modifyitems(config, items):
    modules = {_module(item.nodeid) for item in items if "ray_session" in getattr(item, "fixturenames", ())}
    if modules - RAY_SESSION_MODULES:
        raise pytest.UsageError(f"tests/conftest.py: {', '.join(sorted(modules - RAY_SESSION_MODULES))} use "
                                f"ray_session: add them to RAY_SESSION_MODULES")
    first: dict[str, int] = {}
    for k, item in enumerate(items):
        first.setdefault(_scope(item.nodeid), k)
    weight: dict[str, int] = {}
    for module, seconds in LONGEST_S.items():
        unit = _scope(module)
        weight[unit] = weight.get(unit, 0) + seconds
    items.sort(key=lambda item: (-weight.get(unit := _scope(item.nodeid), 0), first[unit]))  # units stay whole


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` (the suite's), with the units of work of :func:`_scope`."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return Scheduling(config, log)


@pytest.fixture
def ray_session():
    """Ray on 127.0.0.1, the session's instance: started by the first test that asks for it."""
    from council.cluster.raycluster import ensure_ray

    ensure_ray(num_cpus=2)


def pytest_collection_finish(session):
    """A worker's cyclic garbage collector, tuned for a test process: what collection left (the imports, the
    collected tests) is frozen out of its scans, and its youngest generation is collected when 20,000 objects
    have piled up instead of 700. A worker ends the suite holding 0.5-2 million objects, and each full
    collection took 0.4-0.9 s to scan them: 23 s of the three workers' CPU went to full collections in a run,
    against 4 s with these settings (timed with gc.callbacks in each worker)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)


@pytest.hookimpl(trylast=True)  # after the fixtures' teardown
def pytest_runtest_teardown(item, nextitem):
    """The session's Ray stops after the last test of RAY_SESSION_MODULES (a later one would start it again)."""
    if _scope(item.nodeid) == RAY_UNIT and (nextitem is None or _scope(nextitem.nodeid) != RAY_UNIT):
        from council.cluster.raycluster import shutdown_ray

        shutdown_ray()
