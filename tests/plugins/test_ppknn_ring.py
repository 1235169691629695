"""``ppknn-ring``'s per-run metrics the reproduction's grids pool: attacks and messages."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ppknn.core.leakage import Claims, score_attribution
from ppknn.core.transcript import View
from ppknn.protocols.ppknn_ring.driver import ring_from_start
from ppknn.protocols.ppknn_ring.plugin import attribution_detail
from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL as TOPK
from ppknn.protocols.ppknn_ring.pp_topk_attacks import informed_successor, successor_attribution
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario


def _scenario(n: int = 5, rounds: int = 2, secure_sum: str = "ring", seed: int = 7,
              score: str = "detail"):
    return parse_scenario({
        "data": {"dataset": "glass", "test_fraction": 1 / 3, "scale": "none",
                 "bounds": "data"},
        "parties": {"n": n, "partition": "iid"},
        "protocol": {"name": "ppknn-ring", "k": 5, "rounds": rounds, "p0": 1.0, "d": 0.5,
                     "secure_sum": secure_sum, "score": score},
        "runtime": {"kind": "inprocess"}, "run": {"seed": seed}}, source="test")


def _whole_transcript(msgs, public, attack):
    """The reference: the whole-transcript attack per node, scored, and exact rows."""
    claims = Claims("ref")
    for view in View.per_party(msgs, public["party_index"]).values():
        claims.items.extend(attack(view, max_distance=float(public["max_distance"])).items)
    rep = score_attribution(claims, msgs, dict(public["party_index"]),
                            int(public["n_queries"]))
    by_key = {(m.protocol, m.round, m.sender, m.receiver, m.seq): m for m in msgs}
    rows = hits = 0
    for c in claims.items:
        prov = np.broadcast_to(by_key[c.message].provenance[c.key], c.mask.shape)
        claimed = c.mask.any(axis=1)
        right = np.all(~c.mask | (prov == public["party_index"][c.target]), axis=1)
        rows += int(claimed.sum())
        hits += int((claimed & right).sum())
    return rep, rows, hits


@pytest.fixture(scope="module")
def run():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return execute(_scenario())


def test_attribution_detail_equals_the_whole_transcript_attacks(run):
    outcome = run.outcome
    public = outcome.plan.public
    msgs = run.transcript.messages(with_provenance=True, protocol=TOPK)
    detail = attribution_detail(run.transcript, public)
    order = ring_from_start(public["ring"], public["start"])
    for prefix, attack in (("disclosure", successor_attribution),
                           ("informed", informed_successor)):
        rep, rows, hits = _whole_transcript(msgs, public, attack)
        by_party = {d.party: d for d in rep.parties}
        assert detail[f"{prefix}_by_position"] == [by_party[p].disclosed for p in order]
        assert detail[f"{prefix}_claimed"] == sum(d.claimed for d in rep.parties)
        assert detail[f"{prefix}_correct"] == sum(d.correct for d in rep.parties)
        assert (detail[f"{prefix}_exact_rows"], detail[f"{prefix}_exact_hits"]) == (rows, hits)
        assert rows > 0 and 0 < hits < rows
    assert detail["disclosure_trials"] == public["n_queries"]
    # the run's registered metrics carry the same counts (the grid's row)
    m = outcome.measured.metrics
    assert m["disclosure_by_position"] == detail["disclosure_by_position"]
    assert np.mean(m["disclosure_by_position"]) / m["disclosure_trials"] == pytest.approx(
        m["disclosure_mean"])
    assert m["informed_mean"] < m["disclosure_mean"]


def test_score_chooses_the_attacks(run):
    import warnings

    from ppknn.core.errors import ConfigError

    detail = run.outcome.measured.metrics
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = execute(_scenario(score="successor")).outcome.measured.metrics
        none = execute(_scenario(score="none")).outcome.measured.metrics
    assert plain["disclosure_mean"] == detail["disclosure_mean"]
    assert plain["informed_by_position"] is None and "disclosure_mean" not in none
    for m in (plain, none):  # the protocol and the accuracy do not depend on it
        assert m["accuracy_ppknn"] == detail["accuracy_ppknn"]
        assert m["messages_topk"] == detail["messages_topk"]
    with pytest.raises(ConfigError, match="score"):
        _scenario(score="informed")


@pytest.mark.parametrize("secure_sum, n, rounds, sum_messages", [
    ("ring", 5, 3, 2 * 5 - 1), ("shared", 4, 1, 4 * 3 + 2 * 3)])
def test_messages_per_protocol_match_the_formulas(secure_sum, n, rounds, sum_messages):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = execute(_scenario(n=n, rounds=rounds, secure_sum=secure_sum))
    m = res.outcome.measured.metrics
    assert m["messages_topk"] == n * rounds + (n - 1)
    assert m["messages_sum"] == sum_messages
    totals = res.transcript.totals()
    assert m["messages_topk"] + m["messages_sum"] == totals.messages
    assert m["bytes_topk"] + m["bytes_sum"] == totals.bytes
    assert m["union_size"] == 214 - 71


def test_grid_rows_carry_the_lists_as_json():
    from ppknn.simulations.sweep import run_one

    sc = _scenario(n=4)
    row = run_one(({"seed": 7}, sc.model_dump()))
    by_pos = json.loads(row["disclosure_by_position"])
    assert len(by_pos) == 4 and all(0 <= v <= row["queries"] for v in by_pos)
    for key in ("informed_exact_hits", "messages_sum", "agreement_with_knn_excluding_ties"):
        assert key in row


def test_value_cache_keys_on_values_and_evicts_by_bytes():
    from ppknn.protocols.ppknn_ring.plugin import ValueCache

    cache = ValueCache(max_bytes=3 * 80)
    calls = []

    def compute(v):
        calls.append(v)
        return np.full(10, float(v)), np.zeros(0)

    a = np.arange(6.0)
    first = cache.get((a,), ("x", 1), lambda: compute(1))
    again = cache.get((a.copy(),), ("x", 1), lambda: compute(99))  # equal values: a hit
    assert again is first and calls == [1] and cache.hits == 1
    with pytest.raises(ValueError):
        first[0][0] = 5.0  # handed out read-only
    assert cache.get((a,), ("x", 2), lambda: compute(2))[0][0] == 2  # other extra: a miss
    assert cache.get((a + 1e-12,), ("x", 1), lambda: compute(3))[0][0] == 3  # other values
    assert cache.get((a.astype(np.float32),), ("x", 1), lambda: compute(4))[0][0] == 4
    assert cache.held <= 3 * 80 and len(cache.entries) == 3  # the oldest went
    cache.get((a,), ("x", 1), lambda: compute(5))
    assert calls[-1] == 5


def test_cached_references_equal_fresh_ones(run):
    from ppknn.simulations.knn import sklearn_knn, union_topk_and_ties
    from ppknn.simulations.runner import prepare

    sc = _scenario()
    data = prepare(sc).data
    m = run.outcome.measured
    topk, ties = union_topk_and_ties(data.queries, data.union_X, 5)
    assert m.metrics["queries_with_tie_at_kth"] == int(ties.sum())
    np.testing.assert_array_equal(m.per_query["tie_at_kth"], ties.astype(int))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        second = execute(sc)  # the references now come from the cache
    assert second.outcome.measured.metrics == m.metrics
    knn = sklearn_knn(data.union_X, data.union_y, data.queries, k=5)
    assert m.metrics["accuracy_knn"] == pytest.approx(float(np.mean(knn == data.query_labels)))
