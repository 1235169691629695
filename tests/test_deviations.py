"""Active deviations: each scripted scenario, run beside its honest twin, has its effect."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ppknn.core.errors import ConfigError
from ppknn.simulations.leakage.deviations import run_with_deviations
from ppknn.simulations.scenario import parse_scenario

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def scripted(name: str, **data_changes) -> dict:
    """``scenarios/deviation_NAME.toml``, channels off to keep it quick."""
    data = tomllib.loads((ROOT / "scenarios" / f"deviation_{name}.toml").read_text())
    data["runtime"].update(kind="inprocess", channels=False)
    data["data"].update(data_changes)
    return data


def run(name: str, **data_changes):
    return run_with_deviations(parse_scenario(scripted(name, **data_changes)))


def changed(report, attack: str, target: str | None = None) -> list[dict]:
    return [c for c in report.leakage if c["attack"] == attack
            and (target is None or c["target"] == target)]


def test_tiny_distances_take_over_the_vote_silently():
    result, report = run("ring_tiny_distances", max_queries=60)
    acc = report.accuracy["ppknn-ring"]
    assert not report.detected
    # every query is classified as the deviant's class 1 (the share of class 1)
    labels = result.outcome.labels
    assert acc["deviant"] == pytest.approx(float((labels == 1).mean()))
    assert (result.outcome.predictions == 1).all()
    assert acc["honest"] - acc["deviant"] > 0.2


def test_a_node_that_never_randomises_is_disclosed_to_its_successor():
    result, report = run("ring_never_randomise", max_queries=60)
    assert not report.detected
    acc = report.accuracy["ppknn-ring"]
    assert abs(acc["honest"] - acc["deviant"]) < 0.15  # correctness barely moves
    (row,) = changed(report, "successor-attribution", "owner-03")
    assert row["deviant"] > row["honest"] + 0.3
    assert row["deviant"] > 0.9  # every query where its values entered


def test_a_start_node_reusing_its_mask_lets_one_node_read_the_ring_sum():
    """Honest: one node at chance (0 of 60 exact); a reused mask: every partial sum, exactly."""
    from ppknn.simulations.leakage.measure import run_table

    result, report = run("ring_reuse_mask", max_queries=60)
    assert not report.detected
    acc = report.accuracy["ppknn-ring"]
    assert acc["honest"] == acc["deviant"]  # the total is still right
    rows = changed(report, "mask-reuse")
    assert len(rows) == 4  # every non-start node whose successor is not the start node
    assert all(r["honest"] == 0.0 and r["honest_verdict"] == "within bound" for r in rows)
    assert all(r["deviant"] == 1.0 and r["deviant_verdict"] == "above bound" for r in rows)
    public = result.outcome.plan.public
    ring, start = public["ring"], public["start"]
    first = ring[(ring.index(start) + 1) % len(ring)]
    (row,) = [r for r in run_table(result, save=False)
              if r.attack == "mask-reuse" and r.target == first]
    assert "its vote vector" in row.note and row.value == 1.0
    assert row.bound is not None and row.ci_low > row.bound  # chance level of guessing


def test_drop_out_is_detected_as_a_party_failure():
    result, report = run("ring_drop_out", max_queries=30)
    assert report.detected
    assert report.detected_by.startswith("PartyFailure")
    assert "owner-03" in report.detected_by
    assert report.accuracy["ppknn-ring"]["deviant"] is None
    assert result.accuracy == report.accuracy["ppknn-ring"]["honest"]  # the honest twin kept


def test_repeated_queries_are_charged_and_sharpen_one_label():
    result, report = run("dpknn_repeat_query", max_queries=80)
    assert not report.detected  # the ledger charged every repeat: nothing to refuse
    (row,) = [r for r in changed(report, "analyst-label-inference")
              if r["observer"] == "analyst-0"] or [None]
    assert row is not None and row["deviant"] == 1.0
    acc = report.accuracy["dp-knn"]
    assert acc["deviant"] < acc["honest"]
    answered = report.answered["dp-knn"]
    assert answered["deviant"] == answered["honest"] == 1.0


def test_a_lying_dptt_client_ruins_accuracy_and_fools_the_server():
    _, report = run("dptt_lie_bits")
    assert not report.detected
    acc = report.accuracy["dptt"]
    assert acc["honest"] - acc["deviant"] > 0.15
    (side,) = changed(report, "server-side-inference")
    assert side["honest"] > 0.5 and side["deviant"] == 0.0
    (loc,) = changed(report, "server-location-inference")
    assert loc["deviant"] > 1.5 * loc["honest"]


def test_a_sanitizer_adding_less_noise_than_claimed_is_above_its_bound():
    _, report = run("pca_weak_noise")
    assert not report.detected
    rows = [c for c in changed(report, "transform-attack")
            if c["quantity"].startswith("values reconstructed")]
    assert len(rows) == 1
    assert rows[0]["honest_verdict"] == "within bound"
    assert rows[0]["deviant_verdict"] == "above bound"


@pytest.mark.parametrize(("entry", "message"), [
    ({"party": "owner-01", "kind": "steal"}, "unknown deviation kind 'steal'; allowed: "),
    ({"party": "owner-01", "kind": "drop-out", "params": {"when": 2}},
     "unknown parameter(s) ['when']; allowed: ['round']"),
])
def test_bad_deviations_are_refused_by_the_scenario(entry, message):
    data = scripted("ring_drop_out")
    data["deviation"] = [entry]
    with pytest.raises(ConfigError, match="deviation\\[0\\].kind") as err:
        parse_scenario(data)
    assert message in str(err.value)


def test_a_deviation_of_the_wrong_role_or_party_is_refused_before_parties_start():
    data = scripted("ring_drop_out")
    data["deviation"] = [{"party": "owner-01", "kind": "lie-bits"}]
    with pytest.raises(ConfigError, match="applies to DPTTClient parties"):
        run_with_deviations(parse_scenario(data))
    data["deviation"] = [{"party": "owner-99", "kind": "drop-out"}]
    with pytest.raises(ConfigError, match="deviation\\[0\\].party = 'owner-99': no such"):
        run_with_deviations(parse_scenario(data))
