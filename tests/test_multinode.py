"""Multi-node: parties pinned to nodes by custom resources, and a node lost mid-run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.multinode, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent

# Both checks of tests/multinode_script.py on one cluster, in one separate process:
# placement first (it needs both worker nodes), then the node loss (it removes one). Each
# check's own cluster start is replaced by the shared cluster, and its shutdown (Ray's and
# the cluster's) waits until both have run.
_BOTH = """
import json, traceback

import tests.multinode_script as checks


class _Later:
    # the object itself, but its shutdown waits for the last check
    def __init__(self, target):
        self._target = target

    def shutdown(self):
        pass

    def __getattr__(self, name):
        return getattr(self._target, name)


ray = checks.ray
cluster, nodes = checks.start_cluster()
checks.ray = _Later(ray)
checks.start_cluster = lambda: (_Later(cluster), nodes)
try:
    for name, check in (("placement", checks.check_placement),
                        ("node-loss", checks.check_node_loss)):
        try:
            print(f"RESULT {name} " + json.dumps(check()), flush=True)
        except Exception:
            traceback.print_exc()
finally:
    ray.shutdown()
    cluster.shutdown()
"""


@pytest.fixture(scope="module")
def results() -> dict:
    """``{check: result}`` of both checks, run once for the module on one cluster."""
    proc = subprocess.run([sys.executable, "-c", _BOTH], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    out: dict = {"tail": f"exit {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                         f"{proc.stderr[-3000:]}"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            name, _, data = line[len("RESULT "):].partition(" ")
            out[name] = json.loads(data)
    return out


def _result(results: dict, check: str) -> dict:
    assert check in results, f"no result of {check!r} ({results['tail']})"
    return results[check]


def test_parties_on_their_nodes_and_same_predictions(results):
    r = _result(results, "placement")
    assert r["same_predictions"]
    assert r["nodes_used"] == 2
    assert r["org_a_on_a"] and r["org_b_on_b"]


def test_node_removed_mid_run_fails_promptly_with_a_party_of_that_node(results):
    r = _result(results, "node-loss")
    assert r["raised"], r
    assert r["party_on_removed_node"], r
    assert r["seconds"] < 45, r
