"""``scenarios/mixed.toml``: ppknn-ring, ring-nb and dp-nb over the same parties and data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.transcript import Transcript
from ppknn.simulations.pipeline import write_results
from ppknn.simulations.runner import execute, prepare
from ppknn.simulations.scenario import parse_scenario, tomllib
from tests.plugins.equivalence import assert_ray_equals_inprocess

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "mixed.toml"
NAMES = ["ppknn-ring", "ring-nb", "dp-nb"]


def raw(kind: str = "inprocess", only: str | None = None, **runtime) -> dict:
    """The mixed scenario as a mapping (``only``: keep one protocol's table)."""
    data = tomllib.loads(SCENARIO.read_text())
    data["runtime"].update(kind=kind, **runtime)
    if only is not None:
        data["protocol"] = [t for t in data["protocol"] if t["name"] == only]
    return data


def scenario(kind: str = "inprocess", only: str | None = None, **runtime):
    return parse_scenario(raw(kind, only, **runtime), source="test")


def test_one_set_of_parties_shared_by_the_two_ring_protocols():
    sc = scenario()
    assert [c.name for c in sc.protocols] == NAMES and sc.runtime.kind == "inprocess"
    assert tomllib.loads(SCENARIO.read_text())["runtime"]["kind"] == "ray"
    prepared = prepare(sc)
    specs = prepared.specs()
    n, analysts = sc.parties.n, sc.parties.analysts
    assert (n, analysts) == (4, 1) and len(specs) == n + 1 + analysts
    names = [s.party_id for s in specs]
    assert len(set(names)) == len(names)
    ppknn, ring_nb, dp_nb = prepared.protocols
    assert ppknn.plan.roles == ring_nb.plan.roles  # the same owners, ring and start node
    assert [s.party_id for s in ppknn.plan.specs] == [s.party_id for s in ring_nb.plan.specs]
    assert set(dp_nb.plan.roles["owner"]) | set(dp_nb.plan.roles["analyst"]) == \
        set(names) - set(ppknn.plan.roles["owner"])


def test_runs_in_process_and_every_protocol_stands_beside_its_baseline(tmp_path):
    result = execute(scenario(), transcript_dir=tmp_path / "run" / "transcript")
    folder = write_results(result, tmp_path / "run")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["protocols"] == NAMES and set(summary["results"]) == set(NAMES)
    assert summary["parties"] == 6
    for name in NAMES:
        r = summary["results"][name]
        assert 0.5 < r["accuracy"] <= 1.0 and 0.5 < r["baseline"]["accuracy"] <= 1.0
        assert set(r["privacy"]) == {"guarantee", "epsilon", "delta", "per_party"}
    results = summary["results"]
    assert results["ppknn-ring"]["baseline"]["name"] == "kNN (union, non-private)"
    assert results["ppknn-ring"]["privacy"]["epsilon"] is None
    assert results["ring-nb"]["privacy"]["epsilon"] == 1.0
    assert results["dp-nb"]["privacy"]["epsilon"] == 1.0
    ring_nb, dp_nb = result.outcome_of("ring-nb"), result.outcome_of("dp-nb")
    # the two Naive Bayes protocols stand beside the very same GaussianNB baseline
    assert ring_nb.baseline.name == dp_nb.baseline.name
    np.testing.assert_array_equal(ring_nb.baseline.predictions, dp_nb.baseline.predictions)
    head = (folder / "predictions.csv").read_text().splitlines()[0].split(",")
    for name in NAMES:
        assert name in head and f"{name}:baseline" in head
    rows = {line.split(",")[0]: line.split(",")[1]
            for line in (folder / "parties.csv").read_text().splitlines()[1:]}
    start = ring_nb.plan.roles["start"][0]
    assert len(rows) == 6 and set(rows[start].split(";")) == {
        "ppknn-ring:owner", "ppknn-ring:start", "ring-nb:owner", "ring-nb:start"}
    assert rows["nb-owner"] == "dp-nb:owner" and rows["nb-analyst-00"] == "dp-nb:analyst"


def test_adding_protocols_changes_no_others_result(tmp_path):
    """Named seed streams: each protocol alone gives what it gives in the mixed run."""
    mixed = execute(scenario(), transcript_dir=tmp_path / "mixed")
    mixed_rows = set(Transcript(tmp_path / "mixed").canonical_rows())
    for name in NAMES:
        alone = execute(scenario(only=name), transcript_dir=tmp_path / name)
        a, m = alone.outcome, mixed.outcome_of(name)
        np.testing.assert_array_equal(a.predictions, m.predictions)
        np.testing.assert_array_equal(a.baseline.predictions, m.baseline.predictions)
        assert a.summary()["privacy"] == m.summary()["privacy"]
        if name == "ppknn-ring":  # it runs first: even its messages are the same
            rows = Transcript(tmp_path / name).canonical_rows()
            assert rows and set(rows) <= mixed_rows


@pytest.mark.ray
def test_ray_hosted_equals_inprocess(ray_local, tmp_path):
    _, _, rows = assert_ray_equals_inprocess(scenario(), tmp_path, layout="hosted", hosts=2)
    assert {r[1] for r in rows} == {"pp-topk", "secure-sum", "ring-nb", "dp-nb"}
