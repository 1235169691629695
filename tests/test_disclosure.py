"""Per-node disclosure: computed from the transcript alone, checked against known cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.core.leakage import wilson_interval
from ppknn.core.transcript import Transcript, View
from ppknn.protocols.ppknn_ring.plugin.disclosure import measure_disclosure
from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL
from ppknn.protocols.ppknn_ring.pp_topk_attacks import successor_attribution
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario


def _run(tmp_path, **protocol):
    sc = parse_scenario({
        "run": {"name": "disc", "seed": 3},
        "data": {"dataset": "pima"},
        "parties": {"n": 6},
        "protocol": {"k": 5, **protocol},
        "runtime": {"kind": "inprocess", "channels": False},
    })
    return execute(sc, transcript_dir=tmp_path / "t")


def test_full_randomisation_single_round_discloses_nothing(tmp_path):
    out = _run(tmp_path, p0=1.0, rounds=1)
    assert all(d.disclosed == 0 for d in out.outcome.leakage.parties)
    assert sum(d.claimed for d in out.outcome.leakage.parties) > 0  # it did claim, wrongly


def test_no_randomisation_every_inserted_value_is_caught(tmp_path):
    out = _run(tmp_path, p0=0.0, rounds=1)
    msgs = Transcript(tmp_path / "t").messages(with_provenance=True, protocol=PROTOCOL)
    index = out.outcome.plan.public["party_index"]
    for d in out.outcome.leakage.parties:
        sent = [m for m in msgs if m.sender == d.party and m.kind == "topk-vector"]
        inserted = np.zeros(out.prepared.data.queries.shape[0], bool)
        for m in sent:
            inserted |= (m.provenance["g"] == index[d.party]).any(axis=1)
        assert d.disclosed == int(inserted.sum())
    assert out.outcome.leakage.mean_probability > 0.2


def test_disclosure_grows_with_k(tmp_path):
    small = _run(tmp_path / "a", p0=1.0, d=0.5, rounds=2, k=1).outcome.leakage
    large = _run(tmp_path / "b", p0=1.0, d=0.5, rounds=2, k=40).outcome.leakage
    assert large.pooled_interval[0] > small.pooled_interval[1]


def test_recomputed_from_transcript_alone_matches(tmp_path):
    out = _run(tmp_path, p0=1.0, rounds=2)
    again = measure_disclosure(Transcript(tmp_path / "t"), out.outcome.plan.public)
    assert again == out.outcome.leakage


def test_adversary_sees_no_provenance(tmp_path):
    _run(tmp_path, p0=1.0, rounds=2)
    msgs = Transcript(tmp_path / "t").messages(with_provenance=True)
    view = View.of(msgs, "owner-01")
    assert all(m.provenance == {} for m in view.received + view.sent)
    claims = successor_attribution(view, max_distance=1e9)
    assert all(c.observer == ("owner-01",) for c in claims.items)


@pytest.mark.parametrize("s, n, lo, hi", [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634),
                                         (10, 10, 0.7225, 1.0)])
def test_wilson_interval_values(s, n, lo, hi):
    a, b = wilson_interval(s, n)
    assert a == pytest.approx(lo, abs=1e-4) and b == pytest.approx(hi, abs=1e-4)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 100_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_always_holds_the_estimate(sn):
    s, n = sn
    lo, hi = wilson_interval(s, n)
    assert 0.0 <= lo <= s / n <= hi <= 1.0
    if s == 0:
        assert lo == 0.0
    if s == n:
        assert hi == 1.0
