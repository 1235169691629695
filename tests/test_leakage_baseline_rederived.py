"""The baselines no other test re-derives, recomputed here without the attacks' baseline code.

Every default attack of every protocol is listed in :data:`REDERIVED` with the test
that recomputes its baseline from the ground truth on a small seeded run
(:mod:`tests.test_leakage_baseline` holds most of them; the rest are here): the
informed successor's random claimer, the start node's aggregate, the GEO server's
centroid guess (an oracle constant) and the correlation attack's per-column
intervals. A default attack missing from the list fails
:func:`test_every_default_attack_has_an_independent_baseline_test`.
"""

from __future__ import annotations

import math
import warnings
from math import comb

import numpy as np
import pytest
from scipy import stats

from ppknn.core.transcript import View
from ppknn.simulations.leakage.table import newcombe_paired, read_table
from tests import test_leakage_baseline as tlb
from tests.test_leakage import run_into, small

REDERIVED = {
    ("dp-knn", "analyst-label-inference"): "test_label_inference_baseline_is_the_majority_label",
    ("dp-knn", "owner-sees-queries"): "test_exact_sightings_have_a_zero_baseline",
    ("dp-nb", "model-membership-inference"):
        "test_membership_baseline_is_chance_on_class_matched_samples",
    ("dp-nb", "owner-sees-requests"): "test_exact_sightings_have_a_zero_baseline",
    ("dptt", "client-sees-training-points"): "test_exact_sightings_have_a_zero_baseline",
    ("dptt", "geo-server-location-inference"): "test_geo_baseline_is_the_queries_centroid",
    ("dptt", "server-location-inference"): "test_dptt_baselines",
    ("dptt", "server-side-inference"): "test_dptt_baselines",
    ("pca-perturbation", "correlation-attack"):
        "test_correlation_attack_intervals_are_over_the_columns",
    ("pca-perturbation", "sanitizer-sees-instances"): "test_exact_sightings_have_a_zero_baseline",
    ("pca-perturbation", "transform-attack"): "test_pca_baselines_guess_from_the_miners_rows",
    ("ppknn-ring", "informed-successor"): "test_informed_successor_baseline_is_the_random_claimer",
    ("ppknn-ring", "secure-sum-neighbours"):
        "test_secure_sum_baseline_is_the_observers_own_most_frequent_vector",
    ("ppknn-ring", "successor-attribution"): "test_successor_baseline_is_the_random_claimer",
    ("ring-nb", "model-membership-inference"):
        "test_membership_baseline_is_chance_on_class_matched_samples",
    ("ring-nb", "secure-sum-neighbours"):
        "test_secure_sum_baseline_is_the_observers_own_most_frequent_vector",
    ("ring-nb", "start-node-aggregate"): "test_start_node_aggregate_baseline_is_nothing_seen",
}
"""(protocol, default attack) -> the test re-deriving its baseline (here or in tlb)."""


def test_every_default_attack_has_an_independent_baseline_test():
    from ppknn.simulations import registry
    from ppknn.simulations.leakage import attacks
    from ppknn.testing import builtin_names  # a protocol installed beside them is not ours

    assert set(builtin_names()) <= set(registry.names())
    defaults = {(p, a.attack) for p in builtin_names() for a in attacks.defaults(p)}
    assert defaults <= set(REDERIVED), sorted(defaults - set(REDERIVED))
    here = globals()
    for name in REDERIVED.values():
        assert callable(here.get(name) or getattr(tlb, name, None)), name


def _run(tmp_path, name, **changes):
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.setattr("ppknn.simulations.results.plot_summary", lambda result, path: None)
        result = run_into(tmp_path, small(name, **changes))
    return result, read_table(tmp_path / "leakage.csv")


def test_informed_successor_baseline_is_the_random_claimer(tmp_path):
    """Claim by claim, exact binomial coefficients: P(a random claim of as many hits)."""
    from ppknn.protocols.ppknn_ring.pp_topk_attacks import informed_successor

    result, table = _run(tmp_path, "ppknn-ring")
    msgs = [m for m in result.transcript.messages(with_provenance=True)
            if m.protocol == "pp-topk"]
    public = result.outcome.plan.public
    ring, index, n_q = public["ring"], public["party_index"], int(public["n_queries"])
    by_key = {(m.protocol, m.round, m.sender, m.receiver, m.seq): m for m in msgs}
    rows = {r["target"]: r for r in table if r["attack"] == "informed-successor"}
    assert len(rows) == len(ring)
    for i, target in enumerate(ring):
        succ = ring[(i + 1) % len(ring)]
        claims = informed_successor(View.of(msgs, succ), max_distance=public["max_distance"])
        miss = [1.0] * n_q
        for c in claims.items:
            if c.target != target:
                continue
            prov = by_key[c.message].provenance["g"]
            k = c.mask.shape[1]
            for q in range(n_q):
                claimed = int(c.mask[q].sum())
                theirs = int(np.sum(prov[q] == index[target]))
                miss[q] *= comb(k - theirs, claimed) / comb(k, claimed)
        expect = sum(1 - m for m in miss) / n_q
        assert rows[target]["baseline"] == pytest.approx(expect, abs=1e-9)
        assert rows[target]["advantage"] == pytest.approx(rows[target]["value"] - expect,
                                                          abs=1e-9)


def test_start_node_aggregate_baseline_is_nothing_seen(tmp_path):
    """The start node's received minus sent sum is the others' total (mod 2^64); without the
    transcript an exact 64-bit total is not guessed: baseline 0, advantage the paired one."""
    result, table = _run(tmp_path, "ring-nb")
    from ppknn.simulations.leakage.truth import truth_of

    truth = truth_of(result.outcome, result.prepared.data)
    public = result.outcome.plan.public
    start = public["start"]
    total = [0] * np.asarray(truth[f"stats/{start}"]).size
    for p in public["ring"]:
        if p != start:
            total = [(a + int(b)) % 2**64 for a, b in zip(total, np.ravel(truth[f"stats/{p}"]))]
    msgs = [m for m in result.transcript.messages() if m.kind == "partial-sum"]
    got = [int(v) for v in np.ravel([m for m in msgs if m.receiver == start][0].payload["s"])]
    sent = [int(v) for v in np.ravel([m for m in msgs if m.sender == start][0].payload["s"])]
    recovered = [(g - s) % 2**64 for g, s in zip(got, sent)] == total
    (row,) = [r for r in table if r["attack"] == "start-node-aggregate"]
    assert row["value"] == float(recovered) == 1.0
    assert (row["baseline"], row["baseline_low"]) == (0.0, 0.0)
    d, lo, hi = newcombe_paired(np.array([recovered]), np.array([False]))
    assert (row["advantage"], row["advantage_low"]) == pytest.approx((d, lo), abs=1e-6)


def test_geo_baseline_is_the_queries_centroid(tmp_path):
    """An oracle constant: every answered query guessed as those queries' own centroid."""
    from ppknn.simulations.leakage.truth import truth_of

    result, table = _run(tmp_path, "dptt", protocol={"geo_radius": 0.1})
    truth = truth_of(result.outcome, result.prepared.data)
    queries = np.asarray(result.outcome.plan.queries, dtype=float)
    answered = sorted(set(int(s) for s in truth["geo/slot"]))
    q = queries[answered]
    dist = [math.dist(row, q.mean(axis=0)) for row in q]
    (row,) = [r for r in table if r["attack"] == "geo-server-location-inference"]
    assert row["baseline"] == pytest.approx(np.mean(dist), rel=1e-5)
    half = stats.t.ppf(0.975, len(dist) - 1) * np.std(dist, ddof=1) / math.sqrt(len(dist))
    assert row["baseline_low"] == pytest.approx(np.mean(dist) - half, rel=1e-4)
    assert "oracle" in row["baseline_name"]
    assert row["advantage"] == pytest.approx(row["baseline"] - row["value"], abs=1e-5)


def test_correlation_attack_intervals_are_over_the_columns(tmp_path):
    """The guess from the miner's rows: per column the width of the central 95% of its errors
    (numpy's quantile), mean and Student-t interval over the columns."""
    from ppknn.protocols.pca_perturbation.sanitize import normalise

    result, table = _run(tmp_path, "pca-perturbation")
    data = result.prepared.data
    records = normalise(data.train_X, data.bounds.lower, data.bounds.upper)
    own = normalise(np.asarray(result.outcome.plan.queries), data.bounds.lower,
                    data.bounds.upper)
    err = own.mean(axis=0)[None, :] - records
    widths = np.quantile(err, 0.975, axis=0) - np.quantile(err, 0.025, axis=0)
    half = stats.t.ppf(0.975, len(widths) - 1) * widths.std(ddof=1) / math.sqrt(len(widths))
    (row,) = [r for r in table if r["attack"] == "correlation-attack"]
    assert (row["baseline"], row["baseline_low"], row["baseline_high"]) == pytest.approx(
        (widths.mean(), widths.mean() - half, widths.mean() + half), abs=1e-6)
    assert row["ci_low"] <= row["value"] <= row["ci_high"]
    assert row["advantage_low"] <= row["advantage"] <= row["advantage_high"]
    assert row["advantage"] == pytest.approx(row["baseline"] - row["value"], abs=1e-6)
