"""Fault injection: every fault in every protocol ends in one clean, named, bounded failure.

Each case runs a registered protocol's example scenario with one fault
injected at the host (``[faults]``) and checks: the run ends in
``PartyFailure`` (party lifecycle faults) or ``IntegrityError`` (faults on
the wire) naming the faulty party; from the protocols' start to the error
takes at most ``party_timeout_s`` + 5 s (measured, reported; the bound is
the property); the transcript on disk is readable, closed (``totals.json``)
and says why it ends (``failure.json``), and it ends at the failure: no
message the faulty party sent after the fault. Earlier results in the same
output root are untouched.

In-process: 6 protocols x 9 fault kinds. On Ray (one shared local
instance): 5 protocols x 7 kinds, the layouts alternating by protocol, in
``test_faults_ray.py``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ppknn.core.errors import ConfigError
from ppknn.core.runtime import FaultPlan
from ppknn.core.transcript import Transcript
from ppknn.simulations.faults import SLACK_S, chaos_cases, run_with_fault
from ppknn.simulations.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 1.0

# Who is faulty, per protocol: ``life`` for kill/raise/hang/slow/memory (a call in the
# middle of the protocol), ``send`` for drop/reorder/tamper (a party whose next message
# goes to another party), ``recv`` for duplicate (a party that receives messages).
VICTIMS: dict[str, dict[str, tuple[str, int]]] = {
    "ppknn-ring": {"life": ("owner-02", 3), "send": ("owner-02", 2), "recv": ("owner-02", 2)},
    "ring-nb": {"life": ("owner-04", 2), "send": ("owner-04", 2), "recv": ("owner-04", 2)},
    "dptt": {"life": ("server", 3), "send": ("server", 1), "recv": ("server", 1)},
    "pca-perturbation": {"life": ("miner", 2), "send": ("sanitizer", 1),
                         "recv": ("miner", 1)},
    "dp-knn": {"life": ("analyst-0", 2), "send": ("analyst-0", 1), "recv": ("analyst-0", 2)},
    "dp-nb": {"life": ("nb-analyst-00", 2), "send": ("nb-analyst-00", 1),
              "recv": ("nb-analyst-00", 2)},
}
WIRE = {"drop": "send", "reorder": "send", "tamper": "send", "duplicate": "recv"}
EXPECTED = {"drop": "IntegrityError", "reorder": "IntegrityError", "tamper": "IntegrityError",
            "duplicate": "IntegrityError"}


def scenario(protocol: str, **runtime):
    """The protocol's example scenario, small, channels on, a short timeout."""
    sc = load_scenario(ROOT / "scenarios" / f"{protocol}.toml")
    return sc.with_overrides(runtime={"kind": "inprocess", "channels": True,
                                      "party_timeout_s": TIMEOUT_S, **runtime}
                             ).set_key("data.max_queries", 20)


def fault_for(protocol: str, kind: str, timeout: float = TIMEOUT_S) -> FaultPlan:
    party, occurrence = VICTIMS[protocol][WIRE.get(kind, "life")]
    (plan,) = chaos_cases(party, channels=True, occurrence=occurrence, party_timeout_s=timeout,
                          kinds=[kind])
    return plan


def check_outcome(outcome, transcript_dir: Path) -> None:
    """The properties every case must have (see the module docstring)."""
    fault = outcome.fault
    assert outcome.error == EXPECTED.get(fault.kind, "PartyFailure"), outcome
    assert outcome.named, outcome.message
    assert outcome.seconds <= outcome.bound_s, outcome
    assert outcome.closed and outcome.transcript_rows >= 0
    record = json.loads((transcript_dir / "failure.json").read_text())
    assert record["error"] == outcome.error and record["traceback"]
    if record["error"] == "PartyFailure":
        # exact, or (a process of several parties died or hung: hosted layout on Ray) the
        # party is among those its host held, all named
        assert record["party"] == fault.party or (
            "also held" in record["reason"] and repr(fault.party) in record["reason"]), record
    table = Transcript(transcript_dir).table()
    assert table.num_rows == outcome.transcript_rows
    if record["error"] == "PartyFailure" and record["protocol"]:
        # the transcript ends at the failure: the faulty party sent nothing in a later round
        later = [r for r in table.select(["sender", "protocol", "round"]).to_pylist()
                 if r["sender"] == fault.party and r["protocol"] == record["protocol"]
                 and r["round"] > record["round"]]
        assert not later, later[:3]


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


KINDS = ["kill", "raise", "hang", "slow", "memory", "drop", "duplicate", "reorder", "tamper"]


@pytest.mark.parametrize("protocol", sorted(VICTIMS))
def test_every_fault_fails_cleanly_in_process(protocol, tmp_path):
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "summary.json").write_text('{"accuracy": 0.9}')
    before = _digest(earlier)
    sc = scenario(protocol)
    report = []
    for kind in KINDS:
        folder = tmp_path / kind / "transcript"
        outcome = run_with_fault(sc, fault_for(protocol, kind), folder)
        report.append((kind, outcome.error, round(outcome.seconds, 2)))
        check_outcome(outcome, folder)
    assert _digest(earlier) == before


def test_honest_run_is_unchanged_by_the_fault_machinery(tmp_path):
    """No ``[faults]``: the same transcript as a fault that never fires (occurrence too high)."""
    from ppknn.simulations.runner import execute

    sc = scenario("ppknn-ring")
    honest = execute(sc, transcript_dir=tmp_path / "a")
    never = execute(sc.with_overrides(faults={"party": "owner-02", "kind": "kill",
                                              "occurrence": 10_000}),
                    transcript_dir=tmp_path / "b")
    assert (honest.predictions == never.predictions).all()
    rows = Transcript(tmp_path / "a").canonical_rows()
    assert rows == Transcript(tmp_path / "b").canonical_rows()


def test_faults_section_is_validated():
    sc = scenario("ppknn-ring")
    with pytest.raises(ConfigError, match=r"faults.kind = 'explode'"):
        sc.with_overrides(faults={"party": "owner-01", "kind": "explode"})
    with pytest.raises(ConfigError, match=r"faults.party = 'nobody' is not a party"):
        from ppknn.simulations.runner import execute

        execute(sc.with_overrides(faults={"party": "nobody"}))
    with pytest.raises(ConfigError, match="fault kind 'slow' needs delay_s"):
        FaultPlan("owner-01", kind="slow")


def test_chaos_command_reports_every_kind(tmp_path):
    from typer.testing import CliRunner

    from ppknn.cli import app

    out = tmp_path / "chaos"
    result = CliRunner().invoke(app, [
        "chaos", str(ROOT / "scenarios" / "ring-nb.toml"), "--output", str(out),
        "--runtime", "inprocess", "--party", "owner-04", "--set", "data.max_queries=20",
        "--set", "runtime.party_timeout_s=1", "--kind", "raise", "--kind", "drop",
        "--kind", "hang"])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "chaos.json").read_text())
    assert [r["kind"] for r in rows] == ["raise", "drop", "hang"]
    assert all(r["ok"] and r["names_party"] for r in rows)
    assert all(r["seconds"] <= 1 + SLACK_S for r in rows)
    again = CliRunner().invoke(app, ["chaos", str(ROOT / "scenarios" / "ring-nb.toml"),
                                     "--output", str(out)])
    assert again.exit_code == 2 and "already exists" in again.output
