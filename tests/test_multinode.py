"""Multi-node: parties pinned to nodes by custom resources, and a node lost mid-run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.multinode, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent


def _run(check: str, timeout: float = 300) -> dict:
    proc = subprocess.run([sys.executable, "-m", "tests.multinode_script", check], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    tail = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert lines, f"no result (exit {proc.returncode}):\n{tail}"
    return json.loads(lines[-1][len("RESULT "):])


def test_parties_on_their_nodes_and_same_predictions():
    r = _run("placement")
    assert r["same_predictions"]
    assert r["nodes_used"] == 2
    assert r["org_a_on_a"] and r["org_b_on_b"]


def test_node_removed_mid_run_fails_promptly_with_a_party_of_that_node():
    r = _run("node-loss")
    assert r["raised"], r
    assert r["party_on_removed_node"], r
    assert r["seconds"] < 45, r
