"""Every leakage row states its baseline and the advantage over it.

The baselines are re-derived here from the ground truth, by code that does not
call the attacks' baseline helpers; a control (noise so large the release says
nothing) has an advantage of about 0 within its interval, a planted leak (a
non-private release) a clearly positive one; the ring coalition's claims and
single guesses are checked on a ring small enough to work out by hand, and a
larger coalition never guesses worse than a smaller one.
"""

from __future__ import annotations

import itertools
import json
import math
import warnings
from math import comb
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.leakage import score_attribution
from ppknn.core.messages import PUBLIC, RANDOM_FILL, Message
from ppknn.core.transcript import View
from ppknn.protocols.ppknn_ring.pp_topk_attacks import (
    coalition_attribution,
    single_guess,
    successor_attribution,
)
from ppknn.simulations.leakage.table import (
    COLUMNS,
    newcombe_paired,
    newcombe_unpaired,
    read_table,
)
from tests.test_leakage import PROTOCOLS, run_into, small

BASELINE_COLUMNS = ("baseline", "baseline_low", "baseline_high", "advantage", "advantage_low",
                    "advantage_high")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("baseline")
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.setattr("ppknn.simulations.results.plot_summary", lambda result, path: None)
        return {name: (base / name, run_into(base / name, small(name))) for name in PROTOCOLS}


def _rows(runs, name, attack=None):
    rows = read_table(runs[name][0] / "leakage.csv")
    return [r for r in rows if attack is None or r["attack"] == attack]


# -- intervals -----------------------------------------------------------------------------

def test_newcombe_unpaired_matches_the_published_example():
    # Newcombe (1998), Statistics in Medicine 17: 873-890, example (a): 56/70 - 48/80
    d, lo, hi = newcombe_unpaired(56, 70, 48, 80)
    assert (round(d, 4), round(lo, 4), round(hi, 4)) == (0.2, 0.0524, 0.3339)


def test_newcombe_paired_covers_the_true_difference():
    """Coverage over 2,000 seeded paired samples of 60 is at least 93% (nominal 95%).

    Tolerance: with true coverage 95% the observed rate of 2,000 falls below 93% with
    probability < 1e-4; an interval half as wide (a broken variant) covers ~70%.
    """
    rng = np.random.default_rng(1)
    p_attack, p_base, n, trials = 0.55, 0.4, 60, 2000
    covered = covered_half = 0
    for _ in range(trials):
        u = rng.random(n)
        hits, base = u < p_attack, u < p_base + 0.1 * (rng.random(n) < 0.5) - 0.05
        truth = p_attack - p_base
        d, lo, hi = newcombe_paired(hits, base)
        covered += lo <= truth <= hi
        covered_half += d - (d - lo) / 2 <= truth <= d + (hi - d) / 2
    assert covered / trials >= 0.93
    assert covered_half / trials < 0.85  # the test can fail: a narrower interval does


# -- every row carries the columns ---------------------------------------------------------

@pytest.mark.parametrize("name", PROTOCOLS)
def test_every_row_has_a_baseline_and_an_advantage(runs, name):
    assert set(BASELINE_COLUMNS) <= set(COLUMNS)
    rows = _rows(runs, name)
    assert rows
    for r in rows:
        if r["trials"] == 0:  # nothing measured (no model received): nothing to compare
            continue
        assert math.isfinite(r["baseline"]), (r["attack"], r["quantity"])
        assert math.isfinite(r["advantage"]), (r["attack"], r["quantity"])
        assert r["baseline_name"]
        # every row states both intervals (an upper end may be +inf: an ε of a perfect test)
        assert math.isfinite(r["baseline_low"]) and math.isfinite(r["advantage_low"]), \
            (r["attack"], r["quantity"])
        assert not (math.isnan(r["baseline_high"]) or math.isnan(r["advantage_high"]))
        assert r["baseline_low"] <= r["baseline"] + 1e-12 <= r["baseline_high"] + 2e-12
        assert r["advantage_low"] <= r["advantage"] + 1e-12
        assert r["advantage"] <= r["advantage_high"] + 1e-12


def test_summary_and_recompute_carry_the_baseline(runs):
    from ppknn.simulations.leakage.measure import recompute

    folder, _ = runs["dp-knn"]
    summary = json.loads((folder / "summary.json").read_text())
    table = summary["leakage"]["table"]
    assert all(k in table[0] for k in BASELINE_COLUMNS)
    again = [r.as_dict() for r in recompute(folder)]
    on_disk = _rows(runs, "dp-knn")
    for a, b in zip(again, on_disk):
        for k in BASELINE_COLUMNS:
            assert a[k] == pytest.approx(b[k], abs=1e-6, nan_ok=True)  # csv: 6 digits


# -- each baseline re-derived from the ground truth ----------------------------------------

def test_label_inference_baseline_is_the_majority_label(runs):
    _, result = runs["dp-knn"]
    data = result.prepared.data
    majority = int(np.argmax(np.bincount(data.train_y)))
    noiseless = np.asarray(result.outcome.baseline.predictions)
    requests = result.outcome.plan.public["requests"]
    for row in _rows(runs, "dp-knn", "analyst-label-inference"):
        positions = [i for a, _, lo, hi in requests if a == row["observer"]
                     for i in range(lo, hi)]
        expect = sum(int(noiseless[i] == majority) for i in positions) / len(positions)
        assert row["baseline"] == pytest.approx(expect)
        assert row["advantage"] == pytest.approx(row["value"] - expect)


def _own_mode_rate(truth, prefix, row, per_query):
    """The observers' most frequent own vector, named for every trial: its hit rate."""
    def rows_of(party):
        v = np.asarray(truth[f"{prefix}{party}"])
        return v.reshape(len(v), -1) if per_query else v.reshape(1, -1)

    own = [tuple(int(x) for x in r) for o in row["observer"].split("+") for r in rows_of(o)]
    top = max(own.count(r) for r in set(own))
    guess = min(r for r in set(own) if own.count(r) == top)  # first of the most frequent
    target = [tuple(int(x) for x in r) for r in rows_of(row["target"])]
    return sum(t == guess for t in target) / len(target)


def test_secure_sum_baseline_is_the_observers_own_most_frequent_vector(runs):
    """An attacker-realistic constant: the two neighbours' own vectors, not the target's."""
    from ppknn.simulations.leakage.truth import load_truth, truth_path

    for name, prefix, per_query in (("ppknn-ring", "votes/", True),
                                    ("ring-nb", "stats/", False)):
        folder, _ = runs[name]
        truth = load_truth(truth_path(folder / "transcript", name))
        rows = _rows(runs, name, "secure-sum-neighbours")
        assert rows
        for row in rows:
            assert "observers' own" in row["baseline_name"]
            assert row["baseline"] == pytest.approx(_own_mode_rate(truth, prefix, row,
                                                                   per_query))


def test_successor_baseline_is_the_random_claimer(runs):
    """Recomputed claim by claim with exact binomial coefficients (pure Python)."""
    folder, result = runs["ppknn-ring"]
    msgs = [m for m in result.transcript.messages(with_provenance=True)
            if m.protocol == "pp-topk"]
    public = result.outcome.plan.public
    ring, index, n_q = public["ring"], public["party_index"], int(public["n_queries"])
    by_key = {(m.protocol, m.round, m.sender, m.receiver, m.seq): m for m in msgs}
    rows = {r["target"]: r for r in _rows(runs, "ppknn-ring", "successor-attribution")}
    for i, target in enumerate(ring):
        succ = ring[(i + 1) % len(ring)]
        claims = successor_attribution(View.of(msgs, succ),
                                       max_distance=public["max_distance"])
        miss = [1.0] * n_q
        for c in claims.items:
            if c.target != target:
                continue
            prov = by_key[c.message].provenance["g"]
            for q in range(n_q):
                k = c.mask.shape[1]
                claimed = int(c.mask[q].sum())
                theirs = int(np.sum(prov[q] == index[target]))
                miss[q] *= comb(k - theirs, claimed) / comb(k, claimed)
        expect = sum(1 - m for m in miss) / n_q
        assert rows[target]["baseline"] == pytest.approx(expect, abs=1e-9)


def test_pca_baselines_guess_from_the_miners_rows(runs):
    from ppknn.protocols.pca_perturbation.sanitize import normalise

    _, result = runs["pca-perturbation"]
    data = result.prepared.data
    records = normalise(data.train_X, data.bounds.lower, data.bounds.upper)
    own = normalise(np.asarray(result.outcome.plan.queries), data.bounds.lower,
                    data.bounds.upper)
    rows = {r["quantity"]: r for r in _rows(runs, "pca-perturbation", "transform-attack")}
    rmse = np.sqrt(np.mean((records - own.mean(axis=0)) ** 2, axis=1)).mean()
    assert rows["reconstruction RMS error per record (normalised)"]["baseline"] == \
        pytest.approx(rmse)
    # brute force: every window [v - reach, v + reach] around a point of the miner's column
    reach = 0.05
    guess = []
    for j in range(own.shape[1]):
        col = own[:, j]
        scores = [(np.sum(np.abs(col - c) <= reach + 1e-12), c)
                  for v in col for c in (v - reach, v + reach)]
        guess.append(max(scores)[1])
    hit = np.mean(np.abs(records - np.array(guess)) <= reach)
    within = rows["values reconstructed within ±0.05 of the range"]
    # ties between windows holding as many of the miner's rows may pick another centre
    assert within["baseline"] == pytest.approx(hit, abs=0.03)


def test_membership_baseline_is_chance_on_class_matched_samples(runs):
    for name in ("dp-nb", "ring-nb"):
        for row in _rows(runs, name, "model-membership-inference"):
            if row["trials"]:
                assert row["baseline"] == 0.0  # a class-only score cannot tell them apart
                assert row["advantage"] == pytest.approx(row["value"])


def test_dptt_baselines(runs):
    from ppknn.protocols.dptt.adversary import side_claims, true_sides

    _, result = runs["dptt"]
    queries = np.asarray(result.outcome.plan.queries)
    claims = side_claims(View.of(result.transcript.messages(protocol="dptt"), "server"))
    right = true_sides(claims, queries)
    best = max(right.mean(), 1 - right.mean())
    (side,) = _rows(runs, "dptt", "server-side-inference")
    assert side["baseline"] == pytest.approx(math.log(best / (1 - best)) if best > 0.5 else 0)
    (loc,) = _rows(runs, "dptt", "server-location-inference")
    centre = np.linalg.norm(queries - queries.mean(axis=0), axis=1).mean()
    assert loc["baseline"] == pytest.approx(centre, rel=0.05)  # the queries released


@pytest.mark.parametrize("name", PROTOCOLS)
def test_exact_sightings_have_a_zero_baseline(runs, name):
    for row in _rows(runs, name):
        if "seen exactly" in row["quantity"] or "carrying" in row["quantity"]:
            assert row["baseline"] == 0.0


# -- control and planted leak --------------------------------------------------------------

def _transform(tmp_path: Path, **protocol) -> dict:
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.setattr("ppknn.simulations.results.plot_summary", lambda result, path: None)
        run_into(tmp_path, small("pca-perturbation", protocol=protocol,
                                 data={"max_queries": 200}))
    (row,) = [r for r in read_table(tmp_path / "leakage.csv")
              if r["attack"] == "transform-attack" and "within" in r["quantity"]]
    return row


def test_control_shows_no_advantage_and_a_planted_leak_a_clear_one(tmp_path):
    """Noise 20 times the range (the release says nothing) vs a release without noise.

    The baseline is the best guess without the release, so an attacker reading a release
    that says nothing is at or below it (here below: it does not clip its estimates); the
    planted leak is far above it.
    """
    control = _transform(tmp_path / "control", b=20.0)
    assert control["advantage_low"] <= 0 and control["advantage"] < 0.05
    leak = _transform(tmp_path / "leak", scheme="pca-no-noise")
    assert leak["advantage_low"] > 0.1  # s < m components: truncation, not noise, limits it


def test_membership_control_is_at_chance(runs):
    """dp-nb at ε = 1 on class-matched samples: the advantage interval holds 0."""
    rows = [r for r in _rows(runs, "dp-nb", "model-membership-inference") if r["trials"]]
    assert rows
    for r in rows:
        assert r["advantage_low"] <= 0 <= r["advantage_high"]


# -- ring coalitions by hand ---------------------------------------------------------------

RING = ["A", "B", "C", "D"]  # A starts; k = 2, one query, one round, maximum distance 10
INDEX = {p: i for i, p in enumerate(RING)}


def _ring(d_inserts: bool) -> list[Message]:
    """A inserts 0.2, B a random fill 7, C its value 0.5; D passes or inserts 0.3."""
    def msg(sender, receiver, kind, g, prov, seq=0):
        return Message(run_id="r", protocol="pp-topk", round=1, seq=seq, sender=sender,
                       receiver=receiver, kind=kind, payload={"g": np.array([g])},
                       provenance={"g": np.array([prov], dtype=np.int32)})

    final = ([0.2, 0.3], [0, 3]) if d_inserts else ([0.2, 0.5], [0, 2])
    msgs = [msg("A", "B", "topk-vector", [0.2, 10.0], [0, PUBLIC]),
            msg("B", "C", "topk-vector", [0.2, 7.0], [0, RANDOM_FILL]),
            msg("C", "D", "topk-vector", [0.2, 0.5], [0, 2]),
            msg("D", "A", "topk-vector", *final)]
    return msgs + [msg("A", p, "topk-final", *final) for p in RING[1:]]


def _score(msgs, members, target):
    view = View.of(msgs, members)
    claims = coalition_attribution(view, target=target, ring=RING, start="A",
                                   max_distance=10.0)
    guess = single_guess(view, claims)
    d = {x.party: x for x in score_attribution(claims, msgs, INDEX, 1).parties}[target]
    g = {x.party: x for x in score_attribution(guess, msgs, INDEX, 1).parties}[target]
    return d.disclosed, d.correct, d.claimed, g.disclosed


def test_coalition_values_by_hand():
    msgs = _ring(d_inserts=False)
    # D alone: new against the initial [10, 10] are 0.2 (A's) and 0.5 (C's); its one
    # guess is the smallest of them in the final vector, 0.2: wrong
    assert _score(msgs, ["D"], "C") == (1, 1, 2, 0)
    # B and D: only 0.5 is new between them; it is in the final vector: right
    assert _score(msgs, ["B", "D"], "C") == (1, 1, 1, 1)
    # B's fill is all A and C see new from it
    assert _score(msgs, ["A", "C"], "B") == (0, 0, 1, 0)


def test_a_stretch_past_the_start_node_reads_the_final_vector():
    msgs = _ring(d_inserts=True)
    # C and B around D and A: B only sees A's round-1 vector (0.2, A's); D's 0.3 enters
    # in the last step of the round and is public in the final vector only
    disclosed, correct, claimed, guessed = _score(msgs, ["B", "C"], "D")
    assert (disclosed, correct, claimed) == (1, 1, 2)
    assert guessed == 0  # the smallest candidate in the final vector is A's 0.2


def test_a_larger_coalition_never_guesses_worse(runs):
    """Over every target and nested pair of coalitions of a recorded ring."""
    _, result = runs["ppknn-ring"]
    msgs = [m for m in result.transcript.messages(with_provenance=True)
            if m.protocol == "pp-topk"]
    public = result.outcome.plan.public
    ring, index, n_q = public["ring"], public["party_index"], int(public["n_queries"])
    by_key = {(m.protocol, m.round, m.sender, m.receiver, m.seq): m for m in msgs}

    def right(members, target):
        view = View.of(msgs, members)
        claims = coalition_attribution(view, target=target, ring=ring,
                                       start=public["start"],
                                       max_distance=public["max_distance"])
        hit = np.zeros(n_q, dtype=bool)
        for c in single_guess(view, claims).items:
            hit |= (c.mask & (by_key[c.message].provenance["g"] == index[target])).any(axis=1)
        return hit

    checked = grew = 0
    for target in ring:
        others = [p for p in ring if p != target]
        for small_c in itertools.combinations(others, 1):
            for extra in others:
                if extra in small_c:
                    continue
                a, b = right(list(small_c), target), right([*small_c, extra], target)
                assert not np.any(a & ~b), (target, small_c, extra)
                checked += 1
                grew += int(b.sum() > a.sum())
    assert checked and grew  # some larger coalition does better


class _Stub:
    """A transcript of hand-made messages (what the scorer asks of one)."""

    def __init__(self, msgs):
        self.msgs = msgs

    def messages(self, *, with_provenance=False, protocol=None):
        return [m if with_provenance else m.without_provenance() for m in self.msgs
                if protocol is None or m.protocol == protocol]


def test_coalition_rows_and_their_baselines_by_hand():
    from ppknn.simulations.leakage.attacks import Adversary, Context, get

    msgs = _ring(d_inserts=False)
    public = {"ring": RING, "start": "A", "max_distance": 10.0, "party_index": INDEX,
              "n_queries": 1}
    ctx = Context(protocol="ppknn-ring", transcript=_Stub(msgs), public=public, truth={})

    def rows(members):
        adv = Adversary("ppknn-ring", "coalition-attribution", tuple(members), {}, True)
        out = get("ppknn-ring", "coalition-attribution").scorer(ctx, adv)
        return {(r.target, r.quantity.split(" (")[0]): r for r in out}

    alone, pair = rows(["D"]), rows(["B", "D"])
    # D alone claims both values of C's vector (one is C's): a random claimer of two of
    # two values hits too; its one guess (0.2, A's) misses, a random value of the final
    # [0.2 (A), 0.5 (C)] is C's half the time
    r = alone[("C", "disclosure probability")]
    assert (r.value, r.baseline, r.advantage) == (1.0, 1.0, 0.0)
    r = alone[("C", "single guess right")]
    assert (r.value, r.baseline, r.advantage) == (0.0, 0.5, -0.5)
    # B and D claim 0.5 only: a random claim of one of two values is right half the time
    r = pair[("C", "disclosure probability")]
    assert (r.value, r.baseline, r.advantage) == (1.0, 0.5, 0.5)
    r = pair[("C", "single guess right")]
    assert (r.value, r.baseline, r.advantage) == (1.0, 0.5, 0.5)


def test_correlation_attack_baseline_is_the_column_mean_guess(runs):
    from ppknn.protocols.pca_perturbation.privacy import interval_widths
    from ppknn.protocols.pca_perturbation.sanitize import normalise

    _, result = runs["pca-perturbation"]
    data = result.prepared.data
    records = normalise(data.train_X, data.bounds.lower, data.bounds.upper)
    own = normalise(np.asarray(result.outcome.plan.queries), data.bounds.lower,
                    data.bounds.upper)
    guess = np.broadcast_to(own.mean(axis=0), records.shape)
    (row,) = _rows(runs, "pca-perturbation", "correlation-attack")
    assert row["baseline"] == pytest.approx(float(np.mean(interval_widths(guess, records))),
                                            abs=1e-6)
    assert row["advantage"] == pytest.approx(row["baseline"] - row["value"], abs=1e-6)
