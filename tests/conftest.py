"""Shared fixtures. One Ray instance per test session, on 127.0.0.1, started only if a test asks for it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_session():
    from council.raycluster import ensure_ray, shutdown_ray

    ensure_ray(num_cpus=2)
    yield
    shutdown_ray()
