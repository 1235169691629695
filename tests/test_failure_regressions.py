"""Regression tests for the failure path, written against the command line only.

Each test drives ``ppknn run`` in a fresh process and injects its fault from *outside*
the project (a ``sitecustomize`` module on ``PYTHONPATH`` that wraps the ring owner's
``topk_step``, in the driver and in every Ray worker), so the same file also runs
against an older checkout of the project: point ``PPKNN_CLI`` at its command (e.g.
``"python -m simulations"``) and put its root on ``PYTHONPATH``. On the code before the
one failure path existed, all four fail:

1. a party raising inside a protocol step on Ray surfaced as a raw ``RayTaskError``
   with no ``totals.json``;
2. a hung party with ``party_timeout_s = 5`` took about a minute to fail (most of it in
   closing the transcript);
3. an output path that is a file, or under a file, gave a traceback;
4. with a stale record of a dead ``ray start`` head, the embedded default attached to it
   and hung instead of starting its own local Ray.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray

_INJECT = '''
import functools, os, time
_spec = os.environ.get("PPKNN_TEST_INJECT")
if _spec:
    _kind, _party, _round, _mark = _spec.split(":", 3)
    for _name in ("ppknn.protocols.ppknn_ring.parties.ring_owner",
                  "protocols.ppknn_ring.parties.ring_owner"):
        try:
            _mod = __import__(_name, fromlist=["RingDataOwner"])
        except ImportError:
            continue

        def _wrap(_step):
            @functools.wraps(_step)
            def topk_step(self, incoming, round):
                if str(self.party_id) == _party and int(round) == int(_round):
                    with open(_mark, "a") as fh:
                        fh.write(repr(time.time()) + "\\n")
                    if _kind == "raise":
                        raise RuntimeError("injected failure in topk_step")
                    time.sleep(3600)
                return _step(self, incoming, round)
            return topk_step

        _mod.RingDataOwner.topk_step = _wrap(_mod.RingDataOwner.topk_step)
'''

_SCENARIO = """
[run]
name = "regression"
seed = 3

[data]
dataset = "sklearn:breast_cancer"
test_fraction = 0.3333333333333333
bounds = "data"
max_queries = 20

[parties]
n = 4

[protocol]
k = 3
rounds = 2

[runtime]
kind = "ray"
party_timeout_s = {timeout}
"""


def _cli() -> list[str]:
    return shlex.split(os.environ["PPKNN_CLI"]) if os.environ.get("PPKNN_CLI") else \
        [sys.executable, "-m", "ppknn"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(tmp: Path, *args: str, timeout: float = 60.0, inject: str | None = None,
         wait_s: float = 240.0, env_extra: dict[str, str] | None = None
         ) -> tuple[subprocess.CompletedProcess[str] | None, float]:
    """Run ``ppknn run`` on the regression scenario; (process or None on hang, seconds)."""
    site = tmp / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_INJECT)
    scenario = tmp / "scenario.toml"
    scenario.write_text(_SCENARIO.format(timeout=timeout))
    env = {**os.environ, **(env_extra or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    env.pop("RAY_ADDRESS", None)
    if inject:
        env["PPKNN_TEST_INJECT"] = inject
    t0 = time.monotonic()
    try:
        proc = subprocess.run([*_cli(), "run", str(scenario), *args], capture_output=True,
                              text=True, env=env, timeout=wait_s, cwd=tmp)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0
    return proc, time.monotonic() - t0


def _transcript_rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(p).num_rows for p in folder.rglob("part-*.parquet"))


def _failed_folder(tmp: Path, name: str) -> Path:
    hits = [p for p in tmp.iterdir() if p.name.startswith(name) and p.is_dir()]
    assert len(hits) == 1, sorted(p.name for p in tmp.iterdir())
    return hits[0]


def test_a_party_raising_on_ray_fails_the_run_naming_it_with_the_transcript_on_disk(tmp_path):
    mark = tmp_path / "fired"
    proc, _ = _run(tmp_path, "--output", str(tmp_path / "out"),
                   inject=f"raise:owner-02:2:{mark}")
    assert proc is not None, "the run hung"
    err = proc.stderr.strip()
    assert mark.is_file(), "the fault never fired"
    assert proc.returncode not in (0, 1), (proc.returncode, err[-2000:])
    assert "Traceback" not in err and "RayTaskError" not in err, err[-2000:]
    assert "owner-02" in err
    folder = _failed_folder(tmp_path, "out")
    assert (folder / "transcript" / "totals.json").is_file()
    assert _transcript_rows(folder / "transcript") > 0


def test_a_hung_party_fails_within_the_timeout_plus_five_seconds(tmp_path):
    mark = tmp_path / "fired"
    timeout = 2.0  # as the Ray fault tests use: the bound below scales with it
    proc, _ = _run(tmp_path, "--output", str(tmp_path / "out"), timeout=timeout,
                   inject=f"hang:owner-01:2:{mark}", wait_s=150.0)
    done = time.time()
    assert mark.is_file(), "the fault never fired"
    assert proc is not None, "still running 150 s after start"
    fired = float(mark.read_text().split()[0])
    assert done - fired <= timeout + 5.0 + 1.0, f"failed {done - fired:.1f} s after the hang"
    assert proc.returncode not in (0, 1) and "owner-01" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("where", ["file", "under-file"])
def test_an_output_that_cannot_be_a_folder_is_one_line_and_exit_2(tmp_path, where):
    (tmp_path / "f").write_text("x")
    target = tmp_path / "f" if where == "file" else tmp_path / "f" / "res"
    proc, _ = _run(tmp_path, "--output", str(target), "--runtime", "inprocess")
    assert proc is not None
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and str(target.name) in proc.stderr
    assert (tmp_path / "f").read_text() == "x"


def test_the_embedded_default_ignores_a_stale_ray_start_record(tmp_path):
    ray_tmp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: Ray's socket paths
    request_cleanup = ray_tmp
    (ray_tmp / "ray").mkdir(parents=True)
    (ray_tmp / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{_free_port()}\n")
    try:
        proc, took = _run(tmp_path, "--output", str(tmp_path / "out"), wait_s=150.0,
                          env_extra={"RAY_TMPDIR": str(ray_tmp)})
    finally:
        shutil.rmtree(request_cleanup, ignore_errors=True)
    assert proc is not None, f"hung for {took:.0f} s attaching to the dead head"
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["accuracy"] > 0.5
