"""Shared fixtures: a Ray instance for the session, small builders."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
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


def _init_with_a_free_agent_port(**kwargs) -> None:
    """``ray.init(**kwargs)`` whose dashboard agent listens on a free port.

    Ray gives every local instance's dashboard agent the same fixed port (52365). While the
    session's instance holds it, each other local Ray a test starts (``ppknn run`` in a
    fresh process, the benchmarks, a multi-node cluster's head) finds it taken, and its
    agent retries for about 3 s before that node comes up. ``ray.cluster_utils.Cluster``
    starts its extra nodes the same way (no fixed agent port).
    """
    import ray
    from ray._private import parameter

    fixed = getattr(parameter, "RayParams", None)
    if fixed is None:  # another Ray layout: start as it is
        ray.init(**kwargs)
        return

    class FreeAgentPort(fixed):
        def __init__(self, *args, **params):
            super().__init__(*args, **params)
            self.dashboard_agent_listen_port = None  # the node picks a free one

    parameter.RayParams = FreeAgentPort
    try:
        ray.init(**kwargs)
    finally:
        parameter.RayParams = fixed


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray instance shared by the Ray tests; shut down at the end of the session.

    (Multi-node tests run their own cluster in a separate process.)
    """
    import ray

    from ppknn.core.runtime.ray_runtime import await_ray_shutdown

    await_ray_shutdown()  # a run that stopped its own Ray in the background
    if not ray.is_initialized():
        _init_with_a_free_agent_port(address="local", num_cpus=2, include_dashboard=False,
                                     logging_level="ERROR", log_to_driver=False,
                                     runtime_env=ray_env())
    yield ray


def pytest_sessionfinish(session, exitstatus):
    import sys

    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            from ppknn.core.runtime.ray_runtime import stop_ray

            stop_ray()


@pytest.fixture(autouse=True)
def _quiet_bounds_warning():
    """Scenarios in tests derive bounds from data on purpose."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=PrivacyLeakWarning,
                                message=".*domain bounds derived.*")
        yield


@dataclass(frozen=True)
class QuickReproduction:
    """One ``ppknn reproduce NAME --quick --output OUTPUT`` run from the checkout."""

    output: Path
    """``--output``: the CSVs; the report ``NAME.md`` and its figures ``NAME/`` beside them."""
    report: Path
    exit_code: int
    cli_output: str
    tracked_before: str
    """``git status`` of the checkout's tracked files before the run, and after it."""
    tracked_after: str

    @property
    def figures(self) -> Path:
        return self.report.parent / self.report.stem


SNAPSHOT_SKIP = {".git", ".venv", "results", "build", "__pycache__", ".pytest_cache",
                 ".hypothesis", ".ruff_cache", ".mypy_cache"}
"""Folders of a checkout that is not a git repository whose changes are not the project's."""


def _tracked_changes(root: Path) -> str:
    """``git status`` of the tracked files; outside git (a source tarball), every file's
    path, size and modification time, so a run that changed one is seen either way."""
    import subprocess

    if (root / ".git").exists():
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                              cwd=root, capture_output=True, text=True, check=True).stdout
    lines = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SNAPSHOT_SKIP and not d.endswith(
            ".egg-info"))
        for name in sorted(files):
            stat = (Path(folder) / name).stat()
            lines.append(f"{Path(folder, name).relative_to(root)} {stat.st_size} "
                         f"{stat.st_mtime_ns}")
    return "\n".join(lines)


@pytest.fixture(scope="session")
def quick_reproduction(tmp_path_factory):
    """``quick_reproduction(NAME)``: the CLI's quick reproduction, run once per session.

    The CLI test (exit code, nothing tracked touched) and each reproduction's own tests
    (figures, tables, claims) read the same run instead of running it twice.
    """
    from typer.testing import CliRunner

    from ppknn.cli import app

    root = Path(__file__).resolve().parents[1]
    runs: dict[str, QuickReproduction] = {}

    def run(name: str) -> QuickReproduction:
        if name not in runs:
            output = tmp_path_factory.mktemp(f"reproduce-{name}") / "out"
            here = os.getcwd()
            os.chdir(root)  # as a user would run it, from the checkout
            try:
                before = _tracked_changes(root)
                result = CliRunner().invoke(app, ["reproduce", name, "--quick", "--output",
                                                  str(output)])
                after = _tracked_changes(root)
            finally:
                os.chdir(here)
            runs[name] = QuickReproduction(output, output / f"{name}.md", result.exit_code,
                                           result.output, before, after)
        return runs[name]

    return run


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def runs(monkeypatch):
    """Counts the protocol runs the scikit-learn estimators start."""
    from ppknn.simulations.estimators import base

    started = []
    real = base.run_planned

    def counting(planned):
        started.append(planned)
        return real(planned)

    monkeypatch.setattr(base, "run_planned", counting)
    return started
