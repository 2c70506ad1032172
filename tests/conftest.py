"""Shared fixtures. One Ray instance per test session, on 127.0.0.1, started only if a test asks for it."""

from __future__ import annotations

import os

import pytest

# Ray reads this when first imported (a test module may import it at collection): local Ray on 127.0.0.1.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


@pytest.fixture(scope="module")
def fresh_dir(tmp_path_factory):
    """A new empty folder per call: hypothesis runs many examples in one test, and ``tmp_path`` is one."""
    return lambda: tmp_path_factory.mktemp("example")


@pytest.fixture(scope="session")
def ray_session():
    from council.cluster.raycluster import ensure_ray, shutdown_ray

    ensure_ray(num_cpus=2)
    yield
    shutdown_ray()


@pytest.fixture(autouse=True)
def _no_report_at_run_end(request, monkeypatch):
    """Every run ends by writing its report.html, about a second of matplotlib: over the suite's few hundred
    runs that is minutes. Tests marked ``report_at_end`` keep it (they test it); the report's own tests call
    ``write_report`` themselves."""
    if request.node.get_closest_marker("report_at_end") is None:
        monkeypatch.setattr("council.run.runner._write_report", lambda run_dir, log: None)
        monkeypatch.setenv("COUNCIL_NO_REPORT", "1")  # the command lines a test runs in child processes too
