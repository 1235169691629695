"""PrivacyLedger: exact check-then-spend, caps, composition, reservations, concurrency."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.core.dp.accounting import PrivacyCost, bounded_range_epsilon
from ppknn.core.dp.ledger import PrivacyLedger, exact
from ppknn.core.dp.mechanisms import Laplace
from ppknn.core.errors import BudgetExhausted, ConfigError


def test_ten_charges_of_a_tenth_fill_a_budget_of_one_exactly():
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    for _ in range(10):
        ledger.charge(PrivacyCost(0.1))
    assert ledger.spent_exact() == (Fraction(1), Fraction(0))
    assert ledger.remaining().epsilon == 0.0
    with pytest.raises(BudgetExhausted):
        ledger.charge(PrivacyCost(1e-12))


def test_exact_uses_the_decimal_representation():
    assert exact(0.1) == Fraction(1, 10)
    assert sum(exact(0.1) for _ in range(3)) == exact(0.3)


@pytest.mark.parametrize(
    ("amount", "count", "budget"), [(0.01, 100, 1.0), (0.3, 3, 0.9), (1 / 3, 3, 1.0), (0.7, 3, 2.1)]
)
def test_exactly_fitting_sequences_are_accepted(amount, count, budget):
    ledger = PrivacyLedger(owner="o", epsilon=budget)
    ledger.charge(PrivacyCost(amount), repeat=count)
    assert ledger.remaining().epsilon == pytest.approx(0.0, abs=1e-15)


def test_refusal_happens_before_any_data_access():
    ledger = PrivacyLedger(owner="o", epsilon=0.5)
    touched = []
    mech = Laplace(epsilon=0.3)

    def protocol():
        with ledger.reserve(mech, label="query"):
            touched.append("data")  # a protocol reads its data only after reserving

    protocol()
    with pytest.raises(BudgetExhausted, match="would exceed the owner's budget"):
        protocol()
    assert touched == ["data"]
    assert ledger.spent().epsilon == pytest.approx(0.3)


def test_refused_charge_leaves_the_ledger_unchanged():
    ledger = PrivacyLedger(owner="o", epsilon=1.0, delta=1e-6)
    ledger.charge(PrivacyCost(0.6, 5e-7), analyst="a")
    before = (ledger.spent_exact(), ledger.spent_exact("a"), ledger.entries)
    with pytest.raises(BudgetExhausted):
        ledger.charge(PrivacyCost(0.1, 6e-7), analyst="a")  # delta overflows
    assert (ledger.spent_exact(), ledger.spent_exact("a"), ledger.entries) == before


def test_message_says_what_was_asked_and_what_is_left():
    ledger = PrivacyLedger(owner="hospital", epsilon=1.0)
    ledger.charge(PrivacyCost(0.8))
    with pytest.raises(BudgetExhausted) as info:
        ledger.charge(PrivacyCost(0.3), label="q")
    msg = str(info.value)
    assert "'hospital'" in msg and "epsilon=0.3" in msg and "0.8 of 1 used" in msg
    assert "lower the per-release epsilon" in msg


def test_per_analyst_caps():
    ledger = PrivacyLedger(owner="o", epsilon=1.0, analyst_epsilon=0.4)
    ledger.charge(PrivacyCost(0.4), analyst="alice")
    with pytest.raises(BudgetExhausted, match="analyst 'alice'"):
        ledger.charge(PrivacyCost(0.1), analyst="alice")
    ledger.charge(PrivacyCost(0.4), analyst="bob")
    assert ledger.remaining("bob").epsilon == pytest.approx(0.0)
    assert ledger.remaining("carol").epsilon == pytest.approx(0.2)  # owner total binds
    with pytest.raises(BudgetExhausted, match="owner's budget"):
        ledger.charge(PrivacyCost(0.3), analyst="carol")
    assert ledger.spent("alice").epsilon == pytest.approx(0.4)


def test_check_and_can_afford_do_not_spend():
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    ledger.check(PrivacyCost(1.0))
    assert ledger.can_afford(PrivacyCost(0.5), repeat=2)
    assert not ledger.can_afford(PrivacyCost(0.5), repeat=3)
    assert ledger.spent().epsilon == 0.0 and ledger.entries == ()


def test_mechanisms_and_releases_can_be_charged_directly():
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    entry = ledger.charge(Laplace(epsilon=0.25), analyst="a", label="count")
    assert (entry.epsilon, entry.label, entry.analyst, entry.seq) == (
        Fraction(1, 4),
        "count",
        "a",
        0,
    )


def test_parallel_charge_costs_the_maximum():
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    entry = ledger.charge_parallel([PrivacyCost(0.2), PrivacyCost(0.5), PrivacyCost(0.3)])
    assert entry.epsilon == Fraction(1, 2) and entry.composition == "parallel"
    assert entry.releases == 3


def test_advanced_charge_is_cheaper_than_summation():
    ledger = PrivacyLedger(owner="o", epsilon=20.0, delta=1e-5)
    entry = ledger.charge_advanced(PrivacyCost(0.05), 1000, 1e-6)
    assert float(entry.epsilon) < 1000 * 0.05 and entry.delta == exact(1e-6)


def test_bounded_range_charge_uses_ddr_bound():
    ledger = PrivacyLedger(owner="o", epsilon=1.0, delta=1e-5)
    entry = ledger.charge_bounded_range([0.1] * 10, 1e-5, label="dp-tt")
    assert float(entry.epsilon) == pytest.approx(bounded_range_epsilon([0.1] * 10, 1e-5))
    assert round(float(entry.epsilon), 4) == 0.7712 and entry.composition == "bounded_range"


def test_bounded_range_charge_falls_back_to_exact_summation():
    ledger = PrivacyLedger(owner="o", epsilon=42.0)
    entry = ledger.charge_bounded_range([3.5] * 12, 1e-5)
    assert entry.epsilon == Fraction(42) and entry.delta == 0
    assert ledger.remaining().epsilon == 0.0


def test_reservation_commits_on_exit_and_can_be_cancelled():
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    with ledger.reserve(PrivacyCost(0.3), label="run") as res:
        assert ledger.remaining().epsilon == pytest.approx(0.7)  # held while running
    assert res.state == "committed" and ledger.entries[-1].label == "run"
    res2 = ledger.reserve(PrivacyCost(0.5))
    res2.cancel()
    assert ledger.remaining().epsilon == pytest.approx(0.7) and len(ledger.entries) == 1
    with pytest.raises(ConfigError, match="already cancelled"):
        res2.commit()


def test_failed_run_keeps_its_budget_spent():
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    with pytest.raises(RuntimeError), ledger.reserve(PrivacyCost(0.4), label="run"):
        raise RuntimeError("party died")
    assert ledger.entries[-1].aborted and ledger.spent().epsilon == pytest.approx(0.4)


async def test_async_reservation():
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    async with ledger.reserve(PrivacyCost(0.5)):
        await asyncio.sleep(0)
    assert ledger.spent().epsilon == pytest.approx(0.5)


# ---------------------------------------------------------------- properties
costs = st.tuples(
    st.sampled_from([0.01, 0.05, 0.1, 0.2, 0.25, 1 / 3, 0.5, 1.0]),
    st.sampled_from([0.0, 0.0, 1e-7, 1e-6]),
    st.sampled_from([None, "a", "b"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(costs, max_size=40), st.sampled_from([0.5, 1.0, 2.0]))
def test_ledger_never_overspends_and_never_goes_negative(ops, budget):
    ledger = PrivacyLedger(owner="o", epsilon=budget, delta=2e-6, analyst_epsilon=budget * 0.75)
    accepted = Fraction(0)
    for eps, delta, analyst in ops:
        try:
            ledger.charge(PrivacyCost(eps, delta), analyst=analyst)
            accepted += exact(eps)
        except BudgetExhausted:
            pass
        spent_eps, spent_delta = ledger.spent_exact()
        assert 0 <= spent_eps <= exact(budget) and 0 <= spent_delta <= exact(2e-6)
        assert ledger.remaining().epsilon >= 0 and ledger.remaining().delta >= 0
        for who in ("a", "b"):
            assert ledger.spent_exact(who)[0] <= exact(budget * 0.75)
    assert ledger.spent_exact()[0] == accepted == sum(e.epsilon for e in ledger.entries)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([0.1, 0.2, 0.3]), min_size=1, max_size=30))
def test_a_charge_is_refused_exactly_when_it_would_not_fit(amounts):
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    for a in amounts:
        fits = ledger.spent_exact()[0] + exact(a) <= 1
        assert ledger.can_afford(PrivacyCost(a)) == fits
        if fits:
            ledger.charge(PrivacyCost(a))


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=2, max_value=8), st.sampled_from([0.1, 0.05, 0.3]))
def test_concurrent_threads_never_double_spend(n_threads, amount):
    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    start = threading.Barrier(n_threads)
    results = []

    def worker():
        start.wait()
        ok = 0
        for _ in range(40):
            try:
                ledger.charge(PrivacyCost(amount))
                ok += 1
            except BudgetExhausted:
                pass
        results.append(ok)

    with ThreadPoolExecutor(n_threads) as pool:
        for f in [pool.submit(worker) for _ in range(n_threads)]:
            f.result()
    expected = int(Fraction(1) // exact(amount))
    assert sum(results) == expected == len(ledger.entries)
    assert ledger.spent_exact()[0] == expected * exact(amount) <= 1


async def test_concurrent_asyncio_tasks_never_double_spend():
    ledger = PrivacyLedger(owner="o", epsilon=1.0)

    async def request(i):
        try:
            async with ledger.reserve(PrivacyCost(0.1), label=f"q{i}"):
                await asyncio.sleep(0.001)  # interleave with the other tasks
            return True
        except BudgetExhausted:
            return False

    async def threaded(i):
        try:
            await asyncio.to_thread(ledger.charge, PrivacyCost(0.1), label=f"t{i}")
            return True
        except BudgetExhausted:
            return False

    outcomes = await asyncio.gather(
        *[request(i) for i in range(15)], *[threaded(i) for i in range(15)]
    )
    assert sum(outcomes) == 10 == len(ledger.entries)
    assert ledger.spent_exact()[0] == 1


def test_ledger_pickles_as_a_snapshot():
    import pickle

    from ppknn.core.dp import PrivacyCost, PrivacyLedger

    ledger = PrivacyLedger(owner="o", epsilon=1.0)
    ledger.charge(PrivacyCost(0.25))
    copy = pickle.loads(pickle.dumps(ledger))
    assert copy.remaining().epsilon == 0.75
    copy.charge(PrivacyCost(0.5))  # the copy has a working lock of its own
    assert ledger.remaining().epsilon == 0.75
