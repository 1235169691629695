"""Shared fixtures: a Ray instance for the session, small builders."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.errors import PrivacyLeakWarning

os.environ.setdefault("RAY_DEDUP_LOGS", "0")


def ray_env() -> dict:
    """Runtime env so workers import test-defined parties from the ``tests`` package."""
    root = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {"env_vars": {"PYTHONPATH": path}}


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray instance shared by the Ray tests; shut down at the end of the session.

    (Multi-node tests run their own cluster in a separate process.)
    """
    import ray

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR",
                 log_to_driver=False, runtime_env=ray_env())
    yield ray


def pytest_sessionfinish(session, exitstatus):
    import sys

    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            ray.shutdown()


@pytest.fixture(autouse=True)
def _quiet_bounds_warning():
    """Scenarios in tests derive bounds from data on purpose."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=PrivacyLeakWarning,
                                message=".*domain bounds derived.*")
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
