"""The ledger's accountants: basic (today's), advanced and PLD; exact check-then-spend kept."""

from __future__ import annotations

import threading

import pytest

from ppknn.core.dp.accounting import PrivacyCost, advanced_composition
from ppknn.core.dp.ledger import PrivacyLedger
from ppknn.core.dp.mechanisms import Gaussian, Laplace
from ppknn.core.dp.pld import LaplaceLoss, compose_epsilon
from ppknn.core.errors import BudgetExhausted, ConfigError

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as ref  # noqa: E402


def _answered(ledger: PrivacyLedger, release: object, n: int, **kw: object) -> int:
    done = 0
    for _ in range(n):
        try:
            ledger.charge(release, **kw)
        except BudgetExhausted:
            break
        done += 1
    return done


def test_auto_is_pld_with_delta_and_basic_without() -> None:
    assert PrivacyLedger(owner="o", epsilon=1.0, delta=1e-6).accountant == "pld"
    assert PrivacyLedger(owner="o", epsilon=1.0).accountant == "basic"
    assert PrivacyLedger(owner="o", epsilon=1.0, delta=1e-6, accountant="basic").accountant == (
        "basic")


@pytest.mark.parametrize("name", ["pld", "advanced"])
def test_a_tighter_accountant_needs_delta(name: str) -> None:
    with pytest.raises(ConfigError, match=f"'{name}' needs a budget with delta > 0"):
        PrivacyLedger(owner="o", epsilon=1.0, accountant=name)


def test_unknown_accountant_is_named() -> None:
    with pytest.raises(ConfigError, match="'rdp'"):
        PrivacyLedger(owner="o", epsilon=1.0, delta=1e-6, accountant="rdp")


def test_pld_ledger_spends_what_dp_accounting_composes() -> None:
    """100 Laplace releases at 0.1: the ledger's ε within 1% of dp-accounting's, not below."""
    ledger = PrivacyLedger(owner="o", epsilon=100.0, delta=1e-6)
    for _ in range(100):
        ledger.charge(Laplace(epsilon=0.1))
    theirs = ref.from_laplace_mechanism(10.0).self_compose(100).get_epsilon_for_delta(1e-6)
    spent = ledger.spent()
    assert theirs <= spent.epsilon <= 1.01 * theirs
    assert spent.delta == 1e-6
    assert spent.epsilon == pytest.approx(4.693317115, rel=1e-8)  # pinned (incremental)


def test_pld_ledger_on_mixed_gaussians() -> None:
    ledger = PrivacyLedger(owner="o", epsilon=100.0, delta=1e-6)
    mechs = [Gaussian(epsilon=e, delta=1e-7) for e in (0.5, 1.0, 2.0)]
    theirs = None
    for m in mechs:
        ledger.charge(m)
        one = ref.from_gaussian_mechanism(m.scale)
        theirs = one if theirs is None else theirs.compose(one)
    expected = theirs.get_epsilon_for_delta(1e-6)
    assert expected <= ledger.spent().epsilon <= 1.01 * expected


def test_dp_owner_workload_answers_a_quarter_more() -> None:
    """200 Laplace requests at ε = 0.05 under (2, 1e-6): basic 40, PLD 84 (+110%)."""
    basic = PrivacyLedger(owner="o", epsilon=2.0, delta=1e-6, accountant="basic")
    tight = PrivacyLedger(owner="o", epsilon=2.0, delta=1e-6)
    advanced = PrivacyLedger(owner="o", epsilon=2.0, delta=1e-6, accountant="advanced")
    n_basic = _answered(basic, Laplace(epsilon=0.05), 200)
    n_pld = _answered(tight, Laplace(epsilon=0.05), 200)
    n_adv = _answered(advanced, Laplace(epsilon=0.05), 200)
    assert (n_basic, n_adv, n_pld) == (40, 50, 84)
    assert n_pld >= 1.25 * n_basic
    # the last answered one fits and the next does not, by the composition itself
    assert compose_epsilon([LaplaceLoss(0.05)] * 84, 1e-6) <= 2.0
    assert compose_epsilon([LaplaceLoss(0.05)] * 85, 1e-6) > 2.0


def test_advanced_accountant_is_the_drv_bound() -> None:
    ledger = PrivacyLedger(owner="o", epsilon=100.0, delta=1e-6, accountant="advanced")
    ledger.charge(Laplace(epsilon=0.1), repeat=100)
    assert ledger.spent().epsilon == pytest.approx(advanced_composition(0.1, 0, 100, 1e-6).epsilon,
                                                   rel=1e-12)


def test_basic_stays_exact() -> None:
    ledger = PrivacyLedger(owner="o", epsilon=1.0, delta=1e-6, accountant="basic")
    assert _answered(ledger, Laplace(epsilon=0.1), 20) == 10
    assert ledger.spent() == PrivacyCost(1.0, 0.0)


def test_a_release_without_a_loss_law_is_added_by_basic_composition() -> None:
    ledger = PrivacyLedger(owner="o", epsilon=100.0, delta=1e-6)
    for _ in range(100):
        ledger.charge(Laplace(epsilon=0.1))
    ledger.charge(PrivacyCost(0.5, 2e-7))  # e.g. smooth-sensitivity noise
    expected = compose_epsilon([LaplaceLoss(0.1)] * 100, 1e-6 - 2e-7) + 0.5
    assert ledger.spent().epsilon == pytest.approx(expected, rel=1e-3)
    assert ledger.spent().epsilon >= expected - 1e-3


def test_never_refuses_what_basic_serves() -> None:
    """Two releases at ε = 1 fit a budget of 2 exactly, as by summation."""
    ledger = PrivacyLedger(owner="o", epsilon=2.0, delta=1e-6)
    assert _answered(ledger, Laplace(epsilon=1.0), 3) == 2


def test_cancelled_reservation_is_recomposed_away() -> None:
    ledger = PrivacyLedger(owner="o", epsilon=10.0, delta=1e-6)
    for _ in range(10):
        ledger.charge(Laplace(epsilon=0.1), analyst="a")
    before = ledger.spent(), ledger.spent("a")
    res = ledger.reserve(Laplace(epsilon=0.5), analyst="a")
    assert ledger.spent().epsilon > before[0].epsilon
    res.cancel()
    assert (ledger.spent(), ledger.spent("a")) == before


def test_analyst_cap_composes_by_the_same_accountant() -> None:
    ledger = PrivacyLedger(owner="o", epsilon=10.0, delta=1e-6, analyst_epsilon=1.0)
    served = _answered(ledger, Laplace(epsilon=0.05), 100, analyst="a")
    assert served > 20  # basic would stop at 20
    assert ledger.remaining("a").epsilon >= 0


def test_concurrent_reservations_never_overspend() -> None:
    """8 threads x 25 requests race for the budget: exactly the sequential count is served."""
    ledger = PrivacyLedger(owner="o", epsilon=2.0, delta=1e-6)
    served: list[int] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        for _ in range(25):
            try:
                with ledger.reserve(Laplace(epsilon=0.05), analyst=name):
                    with lock:
                        served.append(1)
            except BudgetExhausted:
                pass

    threads = [threading.Thread(target=worker, args=(f"a{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(served) == 84
    assert ledger.spent().epsilon <= 2.0


def test_refusal_names_the_accountant() -> None:
    ledger = PrivacyLedger(owner="o", epsilon=0.5, delta=1e-6)
    with pytest.raises(BudgetExhausted, match="by pld composition"):
        ledger.charge(Laplace(epsilon=0.6))
