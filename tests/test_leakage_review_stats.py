"""Leakage rows whose statistics or bounds must be honest: each test has a case the row
must get right and the wrong answer it would give otherwise."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ppknn.core.messages import Message
from ppknn.core.transcript import Transcript, View
from ppknn.protocols.dp_nb.plugin import membership
from ppknn.protocols.pca_perturbation.attacks import reconstruct, release_message
from ppknn.simulations.leakage import attacks, scorers
from ppknn.simulations.leakage.measure import run_table
from ppknn.simulations.leakage.table import (
    NO_BOUND,
    WITHIN,
    clustered_proportion_row,
    epsilon_from_rates,
)
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario

from .test_leakage import small


class _Messages:
    """A transcript stand-in holding a list of messages (no provenance needed)."""

    def __init__(self, messages):
        self._messages = list(messages)

    def messages(self, *, with_provenance=False, protocol=None):
        return [m for m in self._messages if protocol is None or m.protocol == protocol]


def _message(protocol, sender, receiver, kind, payload, round=1):
    return Message(run_id="r", protocol=protocol, round=round, seq=0, sender=sender,
                   receiver=receiver, kind=kind, payload=payload, provenance={})


# -- membership inference: one test, fixed before the test half is read -------------------

def _membership_scores(selection_in, selection_out, test_in, test_out):
    """Candidates whose log-density under N(0, 1) is high (x = 0) or low (x = 2).

    Even positions are the selection half, odd ones the test half.
    """
    def interleave(sel, test):
        out = np.empty(len(sel) + len(test))
        out[0::2], out[1::2] = sel, test
        return out[:, None]
    return interleave(selection_in, test_in), interleave(selection_out, test_out)


def test_membership_reports_the_event_chosen_on_the_selection_half():
    n = 100
    high, low = 0.0, 2.0
    # selection half: "claim member when the score is high" separates perfectly
    sel_in = np.r_[np.full(n // 2, high), np.full(n // 2, low)]
    sel_out = np.full(n, low)
    # test half: that event has a likelihood ratio of 2; its complement ("claim held out
    # when the score is low") would show a far larger one, but it was not the test chosen
    test_in = np.full(n, high)
    test_out = np.r_[np.full(n // 2, high), np.full(n // 2, low)]
    members, others = _membership_scores(sel_in, sel_out, test_in, test_out)
    truth = {"members_X": members, "members_y": np.zeros(2 * n, dtype=np.int64),
             "others_X": others, "others_y": np.zeros(2 * n, dtype=np.int64),
             # the samples compared, in this order (a run draws them at random)
             "members_pick": np.arange(2 * n), "others_pick": np.arange(2 * n)}
    model = {"theta": np.array([[0.0]]), "var": np.array([[1.0]]),
             "lower": np.array([-10.0]), "upper": np.array([10.0])}
    ctx = attacks.Context(protocol="dp-nb", transcript=None, public={}, truth=truth)
    adv = attacks.Adversary("dp-nb", "model-membership-inference")

    row = membership.membership_rows(ctx, adv, observers=("a",), models=[model], claimed=1.0,
                                  bound_name="ε")

    expected = epsilon_from_rates(n, n, n // 2, n)  # TPR 1 vs FPR 1/2 on the test half
    assert (row.value, row.ci_low, row.ci_high) == pytest.approx(expected)
    assert row.ci_low < 1.0 and row.verdict == WITHIN
    # the complement's bound on the same half is far above the claim: reporting the
    # better of the two after looking would call a 90% bound 95% (and here, "above")
    assert epsilon_from_rates(n // 2, n, 0, n)[1] > 2.0


def test_non_private_nb_models_are_compared_with_no_bound():
    data = small("dp-nb")
    data["protocol"].update(method="non-private")
    rows = [r for r in run_table(execute(parse_scenario(data)), save=False)
            if r.attack == "model-membership-inference"]
    assert rows
    for r in rows:  # charged ε = 0 is no promise of ε = 0
        assert r.bound is None and r.verdict == NO_BOUND, r
        assert "non-private" in r.bound_name


# -- the transform attack's interval: records are the independent trials ------------------

def test_clustered_rate_with_whole_clusters_is_a_rate_over_clusters():
    hits = np.repeat(np.array([[True]] * 3 + [[False]] * 27), 13, axis=1)
    row = clustered_proportion_row(hits=hits, protocol="p", observer="o", target="t",
                                   attack="a", quantity="q")
    from ppknn.core.leakage import wilson_interval

    assert row.value == pytest.approx(0.1) and row.trials == 390
    assert (row.ci_low, row.ci_high) == pytest.approx(wilson_interval(3, 30))


def test_transform_attack_interval_is_as_wide_as_the_records_make_it(tmp_path):
    # one component: a record's single noisy score moves all its values together
    data = small("pca-perturbation")
    data["protocol"].update(components=1, b=1.0, method="fixed-k")
    result = execute(parse_scenario(data), transcript_dir=tmp_path / "transcript")
    (row,) = [r for r in run_table(result, save=False)
              if r.attack == "transform-attack" and r.quantity.startswith("values")]
    truth = np.asarray(result.prepared.data.train_X)
    from ppknn.protocols.pca_perturbation.sanitize import normalise

    records = normalise(truth, result.prepared.data.bounds.lower,
                        result.prepared.data.bounds.upper)
    view = View.of(Transcript(tmp_path / "transcript").messages(), ["miner"])
    rounds = sorted({m.round for m in view.received})
    within = np.abs(reconstruct(release_message(view, rounds[-1])) - records) <= 0.05
    rates = within.mean(axis=1)
    cluster_half = 1.96 * rates.std(ddof=1) / np.sqrt(len(rates))
    binomial_half = 1.96 * np.sqrt(within.mean() * (1 - within.mean()) / within.size)
    assert cluster_half > 1.2 * binomial_half  # the case where counting values misleads
    assert row.value == pytest.approx(within.mean())
    assert (row.ci_high - row.ci_low) / 2 >= 0.95 * cluster_half


# -- parties that should learn nothing: measured, with power -------------------------------

def test_sanitizer_appears_and_a_leaked_instance_is_seen():
    instances = np.array([[0.25, 1.5], [3.0, 4.0], [5.0, 6.0]])
    public = {}
    leak = _message("pca-perturbation", "miner", "sanitizer", "note",
                    {"rows": instances[1:2].copy(), "k": np.asarray(5)})
    adv = attacks.Adversary("pca-perturbation", "sanitizer-sees-instances")
    scorer = attacks.get("pca-perturbation", "sanitizer-sees-instances").scorer
    honest = scorer(attacks.Context("pca-perturbation", _Messages([]), public,
                                    {"instances": instances}), adv)
    leaky = scorer(attacks.Context("pca-perturbation", _Messages([leak]), public,
                                   {"instances": instances}), adv)
    assert [(r.observer, r.value, r.trials) for r in honest] == [("sanitizer", 0.0, 3)]
    assert [(r.observer, r.value, r.trials) for r in leaky] == [("sanitizer", 1 / 3, 3)]


def test_every_pca_party_is_in_a_plain_runs_table():
    rows = run_table(execute(parse_scenario(small("pca-perturbation"))), save=False)
    observers = {r.observer for r in rows}
    assert observers == {"miner", "sanitizer"}
    (row,) = [r for r in rows if r.observer == "sanitizer"]
    assert row.value == 0.0 and row.trials > 0


def test_nb_owner_row_measures_what_a_request_carries():
    queries = np.array([[0.1, 0.2], [0.3, 0.4]])
    public = {"owner": "nb-owner", "analysts": ["a0", "a1"]}
    honest = _message("dp-nb", "a0", "nb-owner", "train",
                      {"epsilon": np.asarray(1.0), "method": np.asarray(0)})
    leaky = _message("dp-nb", "a1", "nb-owner", "train",
                     {"epsilon": np.asarray(1.0), "x": queries[1:].copy()})
    ctx = attacks.Context("dp-nb", _Messages([honest, leaky]), public,
                          {"others_X": queries})
    rows = attacks.get("dp-nb", "owner-sees-requests").scorer(
        ctx, attacks.Adversary("dp-nb", "owner-sees-requests"))
    assert {(r.target, r.value, r.trials) for r in rows} == {("a0", 0.0, 1), ("a1", 1.0, 1)}


def test_rows_carried_ignores_scalars_and_other_widths():
    rows = np.array([[1.0, 2.0]])
    msgs = [SimpleNamespace(payload={"eps": np.asarray(1.0), "v": np.array([1.0, 2.0, 3.0]),
                                     "i": np.array([[1, 2]])})]
    assert not scorers.rows_carried(msgs, rows).any()
    msgs.append(SimpleNamespace(payload={"x": np.array([[9.0, 9.0], [1.0, 2.0]])}))
    assert scorers.rows_carried(msgs, rows).tolist() == [True]
