"""The Xiong et al. reproduction: quick mode end to end, and its building blocks."""

from __future__ import annotations

import csv
import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ppknn.core.data import load_dataset
from ppknn.core.leakage import multiset_new
from ppknn.core.messages import RANDOM_FILL
from ppknn.core.transcript import View
from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL as TOPK
from ppknn.protocols.ppknn_ring.pp_topk_attacks import coalition_attribution, successor_attribution
from ppknn.protocols.ppknn_ring.secure_sum_attacks import (
    recovery_rate,
    ring_sum_estimate,
    shared_sum_estimate,
)
from ppknn_reproductions.experiments.ring import (
    SplitSession,
    make_split_batch,
    per_split,
    run_split_batch,
    sklearn_split_predictions,
    split_truth,
)


def test_quick_reproduction_writes_every_figure(tmp_path, quick_reproduction):
    from ppknn.simulations.reporting import Table
    from ppknn_reproductions import xiong
    from ppknn_reproductions.xiong_report import build_report

    run = quick_reproduction("xiong")  # `ppknn reproduce xiong --quick`, run once
    assert run.exit_code == 0, run.cli_output
    out, figures = run.output, run.figures
    text = run.report.read_text()
    for name in ("accuracy", "fig5_large_k", "fig6_disclosure", "correctness_bound",
                 "collusion", "communication", "fig2_readings", "vote_rules"):
        rows = list(csv.DictReader((out / f"{name}.csv").open()))
        assert rows, name
        assert (figures / f"{name}.csv").is_file(), name
    # the report rebuilt from the run's CSVs: the same claims, figures and numbers
    tables = {key: Table.read_csv(out / f"{name}.csv")
              for key, name in xiong.TABLES.items()}
    rebuilt = build_report(tables, xiong.QUICK, quick=True, timings={"total": 1.0},
                           runtime="inprocess", seed=xiong.SEED)
    pngs = sorted(p.name for p in (figures).glob("*.png"))
    assert pngs == sorted(f.png for f in rebuilt.figures) and len(pngs) == 11
    for png in pngs:
        assert f"xiong/{png}" in text
    for figure in rebuilt.figures:
        assert (figures / figure.csv).is_file(), figure.name
    claims = {c.id: c for c in rebuilt.claims}
    assert claims["exact-knn"].measured == 0 and claims["exact-knn"].verdict == "reproduced"
    assert claims["messages"].measured == 1.0 and claims["messages"].verdict == "reproduced"
    assert claims["bound"].measured == 1.0 and claims["bound"].verdict == "reproduced"
    assert all(c.verdict != "not measured" for c in rebuilt.claims)
    for c in rebuilt.claims:
        assert f"{c.where}: {c.statement}" in text and f"**{c.verdict}**" in text
    assert len(rebuilt.deviations) == 8 and "## Where this differs from the paper" in text
    assert text.split("\n")[4].startswith("Claims: ")
    # the grids: one row per (point, split), through the registry plugin
    from ppknn_reproductions.xiong_report import vote_decision

    grid_rows = list(csv.DictReader((out / "grids" / "grid-votes-glass.csv").open()))
    assert len(grid_rows) == 3 and {r["protocol.vote"] for r in grid_rows} == set(xiong.VOTES)
    assert len({r["disclosure_mean"] for r in grid_rows}) == 1  # PP-TopK does not see the rule
    readings = tables["readings"]
    assert {(r["schedule"], r["start_step"]) for r in readings.rows} == set(xiong.READINGS)
    for sched, start in xiong.READINGS:
        assert f"fig2-reading-{sched}-{start}" in claims
    assert set(vote_decision(tables["votes"])) == {"exact-k", "k-weighted"}
    assert "## Beyond the paper: vote rules" in text and "stays the default" in text
    # re-rendered with the batched studies taken from another run's CSVs: said so
    import shutil

    only_grids = tmp_path / "grids-only"
    only_grids.mkdir()
    for name in ("fig2_readings", "vote_rules"):
        shutil.copy(out / f"{name}.csv", only_grids)
    again = xiong.report_from_tables(only_grids, quick=True, runtime="inprocess",
                                     report=tmp_path / "docs2" / "xiong.md", timings={},
                                     reused=out).read_text()
    assert "NOT RE-RUN in this run: `accuracy.csv`" in again
    # the grids' rows of a run are enough to rebuild its grid tables (grids_from)
    from_rows = xiong.Xiong(xiong.QUICK, grids_from=str(out / "grids")
                            ).grid_studies()
    for key in ("readings", "votes"):
        assert [r["acc_ppknn"] for r in from_rows[key].rows] == pytest.approx(
            [r["acc_ppknn"] for r in tables[key].rows])


def test_batched_splits_equal_independent_runs():
    """One batched run over several splits = each split on its own (exact protocol)."""
    ds = load_dataset("glass")
    batch = make_split_batch(ds, n=3, splits=4, seed=5)
    batched = run_split_batch(batch, k=3, p0=0.0, d=0.5, rounds=1)
    sk = sklearn_split_predictions(batch, k=3)
    _, ties = split_truth(batch, 3)
    assert ((batched.predictions != sk) & ~ties).sum() == 0
    # and scikit-learn per split equals a direct fit on that split's training rows
    from sklearn.neighbors import KNeighborsClassifier

    for s in range(batch.splits):
        q = batch.query_block == s
        train = batch.train_index[s]
        direct = KNeighborsClassifier(n_neighbors=3, algorithm="brute").fit(
            ds.X[train], ds.y[train]).predict(batch.queries[q])
        np.testing.assert_array_equal(sk[q], direct)


def test_chunked_run_equals_single_chunk():
    ds = load_dataset("glass")
    batch = make_split_batch(ds, n=3, splits=4, seed=1)
    whole = run_split_batch(batch, k=10, p0=0.0, d=0.5, rounds=1)
    chunked = run_split_batch(batch, k=10, p0=0.0, d=0.5, rounds=1, max_elements=800)
    np.testing.assert_array_equal(whole.predictions, chunked.predictions)
    np.testing.assert_array_equal(whole.final_vector, chunked.final_vector)


def test_session_reuses_parties_across_runs():
    ds = load_dataset("pima")
    batch = make_split_batch(ds, n=3, splits=2, seed=0)
    with SplitSession(batch) as sess:
        a = sess.run(k=5, p0=0.0, d=0.5, rounds=1)
        sess.run(k=9, p0=1.0, d=0.5, rounds=2)
        b = sess.run(k=5, p0=0.0, d=0.5, rounds=1)
        sess.close()
    np.testing.assert_array_equal(a.predictions, b.predictions)
    acc = per_split(a.predictions == batch.labels, batch.query_block, batch.splits)
    assert acc.shape == (2,) and (acc > 0.5).all()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_multiset_new_matches_counting(data):
    # widths up to 20: both the pairwise (<= 16) and the sorting algorithm
    q = data.draw(st.integers(1, 4))
    values = st.sampled_from([0.0, -0.0, 1.0, 2.0, 3.5, np.inf, np.nan])
    a = data.draw(arrays(np.float64, (q, data.draw(st.integers(1, 20))), elements=values))
    b = data.draw(arrays(np.float64, (q, data.draw(st.integers(1, 20))), elements=values))
    out = multiset_new(a, b)
    for r in range(q):
        have, seen = Counter(b[r].tolist()), Counter()
        for i, v in enumerate(a[r].tolist()):
            seen[v] += 1
            assert out[r, i] == (seen[v] > have[v])


def test_multiset_new_pairwise_in_chunks_equals_the_sort(monkeypatch):
    """Many rows (once taken in chunks, now column by column): same masks as sorting."""
    from ppknn.core import leakage

    rng = np.random.default_rng(7)
    a = rng.integers(0, 5, (10_000, 16)).astype(np.float64)
    b = rng.integers(0, 5, (10_000, 12)).astype(np.float64)
    pairwise = multiset_new(a, b)
    monkeypatch.setattr(leakage, "_PAIRWISE_WIDTH", 0)  # every width sorted
    assert np.array_equal(pairwise, multiset_new(a, b))
    assert 0 < pairwise.sum() < pairwise.size


@pytest.fixture(scope="module")
def recorded():
    ds = load_dataset("pima")
    batch = make_split_batch(ds, n=6, splits=2, seed=3)
    runs = {}
    for kind in ("ring", "shared"):
        with SplitSession(batch, record=True, tag=kind) as sess:
            sess.run(k=5, p0=1.0, d=0.5, rounds=2, secure_sum=kind)
            votes = {p: sess.runtime.state(p, "last_votes") for p in batch.party_names}
            transcript = sess.close()
        runs[kind] = (transcript.messages(with_provenance=True), votes, sess.public(5))
    return runs


def test_neighbour_coalition_claims_only_what_the_target_inserted(recorded):
    msgs, _, public = recorded["ring"]
    ring, start, index = public["ring"], public["start"], public["party_index"]
    topk = [m for m in msgs if m.protocol == TOPK]
    claimed = 0
    for i, target in enumerate(ring):
        members = [ring[(i - 1) % len(ring)], ring[(i + 1) % len(ring)]]
        view = View.of(topk, members)
        claims = coalition_attribution(view, target=target, ring=ring, start=start,
                                       max_distance=public["max_distance"])
        by_key = {(m.protocol, m.round, m.sender, m.receiver, m.seq): m for m in topk}
        for c in claims.items:
            prov = by_key[c.message].provenance["g"][c.mask]
            assert np.isin(prov, [index[target], RANDOM_FILL]).all()
            claimed += int(c.mask.sum())
    assert claimed > 0


def test_single_member_coalition_is_the_paper_attack(recorded):
    msgs, _, public = recorded["ring"]
    ring, start = public["ring"], public["start"]
    topk = [m for m in msgs if m.protocol == TOPK]
    for i, target in enumerate(ring):
        succ = ring[(i + 1) % len(ring)]
        view = View.of(topk, succ)
        a = coalition_attribution(view, target=target, ring=ring, start=start,
                                  max_distance=public["max_distance"])
        b = successor_attribution(view, max_distance=public["max_distance"])
        mine = [c for c in b.items if c.target == target]
        # the vectors' claims are the paper's; the final broadcast (a public output the
        # successor holds) adds one claim when the ring's last node precedes it
        kinds = {(m.protocol, m.round, m.sender, m.receiver, m.seq): m.kind for m in topk}
        vectors = [c for c in a.items if kinds[c.message] == "topk-vector"]
        assert len(a.items) - len(vectors) <= 1
        assert [c.message for c in vectors] == [c.message for c in mine]
        for x, y in zip(vectors, mine):
            np.testing.assert_array_equal(x.mask, y.mask)


def test_sum_coalitions(recorded):
    for kind, expect_recovery in (("ring", True), ("shared", False)):
        msgs, votes, public = recorded[kind]
        ring, start = public["ring"], public["start"]
        for i, target in enumerate(ring):
            if target == start:
                continue
            members = [ring[(i - 1) % len(ring)], ring[(i + 1) % len(ring)]]
            view = View.of(msgs, members)
            est = (ring_sum_estimate(view, target=target, ring=ring, start=start)
                   if kind == "ring" else shared_sum_estimate(view, target=target))
            assert recovery_rate(est, votes[target]).all() == expect_recovery


def _tiny_settings():
    from dataclasses import replace

    from ppknn_reproductions import xiong

    return replace(xiong.QUICK, datasets=("glass",), fig2_k=(1, 5), fig3_r=(1, 2),
                   fig4_d=(0.5,), splits=2, bound_k=(1,), bound_r=(2,), comm_n=(4,),
                   comm_r=(2,), leak_dataset="glass")


def test_accuracy_points_run_shared_points_once():
    from ppknn_reproductions import xiong

    pts = xiong.accuracy_points(_tiny_settings())
    assert pts == {(1, 1, 0.5, 1.0): ["fig2"], (5, 1, 0.5, 1.0): ["fig2", "fig3"],
                   (5, 2, 0.5, 1.0): ["fig3", "fig4"], (1, 1, 0.5, 0.0): ["exact"],
                   (5, 1, 0.5, 0.0): ["exact"]}
    full = xiong.accuracy_points(xiong.FULL)
    assert len(full) == 8 + 4 + 9 + 8  # 23 figure points, two shared, and the exact check
    grids = {g.name: g for g in xiong.study_grids(xiong.FULL)}
    assert len(grids["accuracy-abalone"].points()) == 29 * 100
    assert len(grids["bound"].points()) == 25 * 100
    assert len(grids["disclosure"].points()) == 4 * 7 * 20
    assert len(grids["large_k-abalone-all"].points()) == 12  # 50e6 / (2785 x 1392) splits
    assert xiong.union_size("abalone") == 2785


def test_accuracy_table_from_grid_rows():
    from ppknn_reproductions import xiong

    s = _tiny_settings()
    rows = []
    for (k, r, d, p0) in xiong.accuracy_points(s):
        for seed, acc in ((0, 0.5), (1, 0.7)):
            rows.append({"protocol.k": k, "protocol.rounds": r, "protocol.d": d,
                         "protocol.p0": p0, "seed": seed, "queries": 71,
                         "accuracy_ppknn": acc + 0.1 * (p0 == 1.0 and r == 1),
                         "accuracy_knn": acc, "queries_with_tie_at_kth": 1 + seed,
                         "agreement_with_knn_excluding_ties": 0.9 if k == 5 else 1.0})
    t = xiong.accuracy_table({"accuracy-glass": rows}, s)
    assert [(r["figure"], r["k"], r["rounds"]) for r in t.rows] == [
        ("fig2", 1, 1), ("fig2", 5, 1), ("fig3", 5, 1), ("fig3", 5, 2), ("fig4", 5, 2)]
    f2 = t.where(figure="fig2", k=5)[0]
    assert f2["acc_ppknn"] == pytest.approx(0.7) and f2["acc_knn"] == pytest.approx(0.6)
    assert f2["abs_diff"] == pytest.approx(0.1) and f2["diff_lo"] == pytest.approx(0.1)
    # exact check at k = 5: round(0.1 x (71 - ties)) per split = 7 + 7; ties 1 + 2
    assert (f2["exact_knn_mismatch_non_tied"], f2["tied"]) == (14, 3)
    assert t.where(figure="fig2", k=1)[0]["exact_knn_mismatch_non_tied"] == 0
    assert t.where(figure="fig3", k=5, rounds=2)[0]["exact_knn_mismatch_non_tied"] == -1
    assert t.where(figure="fig3", k=5, rounds=2)[0]["abs_diff"] == 0


def test_disclosure_table_pools_splits_by_ring_position():
    from ppknn.core.leakage import wilson_interval
    from ppknn_reproductions import xiong

    def row(seed, plain, informed):
        return {"parties.n": 3, "protocol.k": 2, "seed": seed, "disclosure_trials": 10,
                "disclosure_by_position": json.dumps(plain), "disclosure_claimed": 20,
                "disclosure_correct": 5, "disclosure_exact_rows": 8,
                "disclosure_exact_hits": 2, "informed_by_position": str(informed),
                "informed_claimed": 10, "informed_correct": 5, "informed_exact_rows": 4,
                "informed_exact_hits": 3}

    t = xiong.disclosure_table([row(0, [1, 2, 9], [0, 1, 2]), row(1, [3, 2, 1], [0, 0, 2])],
                               _tiny_settings())
    paper, informed = t.where(adversary="paper")[0], t.where(adversary="informed")[0]
    assert paper["mean_probability"] == pytest.approx(18 / 60)
    assert (paper["min_node"], paper["max_node"]) == (pytest.approx(0.2), pytest.approx(0.5))
    assert (paper["ci_low"], paper["ci_high"]) == pytest.approx(wilson_interval(18, 60), rel=1e-5)
    assert paper["precision"] == pytest.approx(10 / 40)
    assert paper["exact_attribution"] == pytest.approx(4 / 16)
    assert informed["min_node"] == 0 and informed["max_node"] == pytest.approx(0.2)
    assert informed["exact_attribution"] == pytest.approx(6 / 8)


def test_bound_and_communication_tables_from_grid_rows():
    from ppknn.core.leakage import wilson_interval
    from ppknn_reproductions import xiong

    s = _tiny_settings()
    rows = [{"protocol.k": 1, "protocol.rounds": 2, "seed": i, "queries": 71,
             "topk_exact_fraction": f, "topk_correctness_bound": 0.5}
            for i, f in enumerate((40 / 71, 31 / 71))]
    b = xiong.bound_table(rows, s).rows[0]
    assert b["measured"] == pytest.approx(71 / 142) and b["holds"]
    assert (b["ci_low"], b["ci_high"]) == pytest.approx(wilson_interval(71, 142), rel=1e-5)
    comm = [{"parties.n": 4, "protocol.rounds": 2, "protocol.secure_sum": kind, "queries": 71,
             "messages_topk": 11, "bytes_topk": 710, "messages_sum": m, "bytes_sum": 142}
            for kind, m in (("ring", 7), ("shared", 18))]
    t = xiong.communication_table(comm, s)
    assert [(r["protocol"], r["messages"], r["expected_messages"]) for r in t.rows] == [
        ("pp-topk", 11, 11), ("secure-sum", 7, 7), ("shared-sum", 18, 18)]
    assert t.rows[0]["bytes_per_query"] == 10


def test_collusion_runs_come_from_the_grid_and_votes_are_the_owners():
    from dataclasses import replace

    from ppknn_reproductions import xiong

    s = replace(_tiny_settings(), coalition_n=5, leak_splits=2)
    grid = xiong.collusion_grid(s)
    runs = xiong.recorded_runs(grid)
    assert [(p["protocol.secure_sum"], p["seed"]) for p, _ in runs] == [
        ("ring", xiong.SEED), ("ring", xiong.SEED + 1), ("shared", xiong.SEED),
        ("shared", xiong.SEED + 1)]
    for _, result in runs:
        outcome = result.outcome
        votes = xiong.owner_votes(outcome)
        assert set(votes) == set(outcome.plan.public["ring"])
        total = np.zeros_like(next(iter(votes.values())))
        for v in votes.values():
            total = total + v  # uint64: the secure sum's arithmetic
        np.testing.assert_array_equal(total, outcome.result.detail.totals)
    # the ring's secure sum falls to its two neighbours (every node but the start
    # node, whose mask hides its votes), the shared one does not
    t = xiong.Xiong(s).collusion()
    ring2 = t.where(protocol="ring-sum", placement="neighbours", c=2)[0]
    shared = [r["disclosure"] for r in t.rows if r["protocol"] == "shared-sum"]
    assert ring2["disclosure"] == pytest.approx(4 / 5) and max(shared) == 0.0
    assert t.where(protocol="ring-sum", placement="neighbours", c=1)[0]["disclosure"] == 0.0


def test_committed_report_renders_from_its_csvs_with_its_command_and_reference(tmp_path):
    """The committed report's tables re-render (nothing re-run): the header names the
    ``--runtime ray`` the run used, and the non-private reference accuracies are called
    what they are (not the paper's values)."""
    import shutil
    from pathlib import Path

    from ppknn_reproductions import xiong

    committed = Path(__file__).resolve().parents[2] / "docs" / "reproductions" / "xiong"
    out = tmp_path / "tables"
    out.mkdir()
    for f in committed.glob("*.csv"):
        shutil.copy(f, out / f.name)
    text = xiong.report_from_tables(out, quick=False, runtime="ray",
                                    report=tmp_path / "docs" / "xiong.md",
                                    timings={"total": 60.0}).read_text()
    assert text.splitlines()[2].startswith(
        "Generated by `ppknn reproduce xiong --runtime ray` (full settings, ray runtime")
    assert ("| dataset | k | 10-fold CV, whole dataset [95% CI] | this run's scikit-learn "
            "[95% CI] |") in text
    assert "Neither is the paper's" in text and "issue" not in text


def test_the_baseline_reference_is_computed_by_cross_validation_not_stated():
    """The reference beside the run's baseline is stratified 10-fold CV over the whole dataset,
    computed from the data: it equals scikit-learn's own cross-validated accuracy, moves with
    k, and a dataset that cannot be loaded gives n/a instead of a number."""
    from sklearn.datasets import load_iris
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    from ppknn_reproductions.xiong_report import cv_reference

    X, y = load_iris(return_X_y=True)
    for k in (1, 15):
        expected = cross_val_score(KNeighborsClassifier(n_neighbors=k, algorithm="brute"), X, y,
                                   cv=StratifiedKFold(10, shuffle=True, random_state=0)).mean()
        acc, lo, hi = cv_reference("iris", k)
        assert acc == pytest.approx(expected, abs=1e-12)  # equal folds: mean of folds = pooled
        assert lo < acc < hi
    assert cv_reference("iris", 1) != cv_reference("iris", 60)
    assert cv_reference("no-such-dataset", 5) is None
