"""The transcript survives the recorder's death: its process killed, or its node lost.

Each run is killed mid-run (see ``tests/recorder_faults_script.py``): the run
must end in ``PartyFailure`` naming who died -- the recorder, or a party of the
lost node -- within ``party_timeout_s`` + 5 s of the kill, and the transcript
the recorder had received before it must be on disk, closed (``totals.json``
with each part's digest) and whole (:meth:`Transcript.check`), with
``failure.json`` beside it. Both checks run in a process of their own: one
kills a worker of its Ray, the other a node of its cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ppknn.core.transcript import Transcript
from ppknn.simulations.faults import SLACK_S

pytestmark = [pytest.mark.ray, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent


def _check(name: str, folder: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "tests.recorder_faults_script", name,
                           str(folder)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError(f"no result (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n"
                         f"{proc.stderr[-3000:]}")


def _transcript_kept(r: dict, folder: Path) -> None:
    assert r["raised"] == "PartyFailure", r
    assert r["seconds_after_kill"] <= r["timeout_s"] + SLACK_S, r
    transcript = folder / "transcript"
    assert {"totals.json", "failure.json"} <= set(r["files"]), r
    assert not [f for f in r["files"] if f.startswith("journal-") or f.endswith(".tmp")], r
    # what the recorder had received before the kill is on disk, whole, with its digests
    assert r.get("checked_rows", -1) >= r["received_before_kill"] >= 1, r
    totals = json.loads((transcript / "totals.json").read_text())
    assert totals["recovered"] is True
    assert set(totals["part_sha256"]) == {p.name for p in Transcript(transcript).parts()}
    failure = json.loads((transcript / "failure.json").read_text())
    assert failure["party"] == r["party"]


def test_recorder_process_killed_mid_run(tmp_path):
    r = _check("recorder", tmp_path)
    _transcript_kept(r, tmp_path)
    assert r["party"] == "transcript-recorder", r


@pytest.mark.multinode
def test_node_of_the_recorder_and_parties_lost_mid_run(tmp_path):
    r = _check("raylet", tmp_path)
    _transcript_kept(r, tmp_path)
    # the party named is one of the lost node's (every owner, and the recorder, were there)
    assert r["party"] in {"owner-00", "owner-01", "owner-02", "owner-03",
                          "transcript-recorder"}, r
