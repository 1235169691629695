"""Privacy-loss distributions: against dp-accounting's PLD accountant, pinned, and a broken variant.

dp-accounting (the test extra) discretises by "connect the dots", a tighter
pessimistic estimate than rounding every loss up; ours must stay above it
(both are upper bounds on the exact ε) and within 1% of it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppknn.core.dp import pld
from ppknn.core.dp.mechanisms import Gaussian, Geometric, Laplace
from ppknn.core.dp.pld import (
    BoundedRangeLoss,
    Composite,
    DiscreteLaplaceLoss,
    GaussianLoss,
    LaplaceLoss,
    RandomisedResponseLoss,
    compose,
    compose_epsilon,
    loss_model,
)
from ppknn.core.dp.selection import ExponentialMechanism
from ppknn.core.errors import ConfigError

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as ref  # noqa: E402

DELTA = 1e-6


def _ref_epsilon(parts: list[tuple[str, float, int]], delta: float = DELTA) -> float:
    """dp-accounting's ε for ``(kind, parameter, count)`` parts."""
    out = None
    for kind, param, k in parts:
        if kind == "laplace":
            one = ref.from_laplace_mechanism(1.0 / param)  # scale b = Δ/ε with Δ = 1
        else:
            one = ref.from_gaussian_mechanism(param)  # σ with Δ = 1
        one = one.self_compose(k) if k > 1 else one
        out = one if out is None else out.compose(one)
    return out.get_epsilon_for_delta(delta)


def _ours(parts: list[tuple[str, float, int]], delta: float = DELTA) -> float:
    laws = []
    for kind, param, k in parts:
        law = LaplaceLoss(param) if kind == "laplace" else GaussianLoss.from_sigma(param)
        laws += [law] * k
    return compose_epsilon(laws, delta)


SEQUENCES = {
    "100 x Laplace 0.1": [("laplace", 0.1, 100)],
    "1000 x Laplace 0.05": [("laplace", 0.05, 1000)],
    "200 x Laplace 0.05": [("laplace", 0.05, 200)],
    "10 x Laplace 1": [("laplace", 1.0, 10)],
    "Gaussian sigma 0.5, 1, 2, 4, 8": [("gaussian", s, 1) for s in (0.5, 1.0, 2.0, 4.0, 8.0)],
    "50 x Gaussian 10 + 50 x Laplace 0.1": [("gaussian", 10.0, 50), ("laplace", 0.1, 50)],
}

# our ε at δ = 1e-6 (grid 1e-4), pinned; dp-accounting 0.6.0 in the comments
PINNED = {
    "100 x Laplace 0.1": 4.693038835,  # 4.692667439
    "1000 x Laplace 0.05": 8.207469370,  # 8.204440452
    "200 x Laplace 0.05": 3.245942651,  # 3.245545049
    "10 x Laplace 1": 9.998978528,  # 9.998978094
    "Gaussian sigma 0.5, 1, 2, 4, 8": 13.09592912,  # 13.09567712
    "50 x Gaussian 10 + 50 x Laplace 0.1": None,
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_within_one_percent_of_dp_accounting_and_never_below(name: str) -> None:
    parts = SEQUENCES[name]
    ours, theirs = _ours(parts), _ref_epsilon(parts)
    assert theirs <= ours <= 1.01 * theirs, (ours, theirs)


@pytest.mark.parametrize("name", [n for n, v in PINNED.items() if v is not None])
def test_pinned_values(name: str) -> None:
    assert _ours(SEQUENCES[name]) == pytest.approx(PINNED[name], rel=1e-9, abs=0)


def test_an_optimistic_discretisation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rounding losses *down* (a broken variant) lands below dp-accounting: the check fails."""

    rounded_up = LaplaceLoss.pld

    def rounded_down(self: LaplaceLoss, interval: float = pld.INTERVAL) -> pld.PLD:
        up = rounded_up(self, interval)  # every loss one grid step lower: rounded down
        return pld.PLD(up.interval, up.offset - 1, up.masses, up.infinity, up.error)

    monkeypatch.setattr(LaplaceLoss, "pld", rounded_down)
    parts = SEQUENCES["100 x Laplace 0.1"]
    assert _ours(parts) < _ref_epsilon(parts)


def test_randomised_response_is_dp_accountings_privacy_parameters_pair() -> None:
    """(ε, δ)-RR is the pair dp-accounting builds from (ε, δ) (KOV's worst case)."""
    theirs = ref.from_privacy_parameters(ref.common.DifferentialPrivacyParameters(0.5, 1e-7))
    ours = compose([RandomisedResponseLoss(0.5, 1e-7)] * 20)
    expected = theirs.self_compose(20).get_epsilon_for_delta(1e-5)
    assert expected <= ours.epsilon(1e-5) <= expected * 1.01


def test_gaussian_single_release_matches_the_exact_curve() -> None:
    law = GaussianLoss.from_sigma(2.0)
    eps = law.pld().epsilon(DELTA)
    assert law.delta(eps) <= DELTA  # the exact δ at our ε is within the target
    assert eps <= 1.001 * compose_epsilon([law], DELTA)


def test_discrete_laplace_of_sensitivity_one_is_randomised_response() -> None:
    a, b = DiscreteLaplaceLoss(0.3, 1).pld(), RandomisedResponseLoss(0.3).pld()
    assert a.offset == b.offset
    np.testing.assert_allclose(a.masses, b.masses, rtol=1e-12)


def test_discrete_laplace_approaches_laplace_with_a_fine_grid() -> None:
    fine = compose_epsilon([DiscreteLaplaceLoss(0.1, 1000)] * 50, DELTA)
    cont = compose_epsilon([LaplaceLoss(0.1)] * 50, DELTA)
    assert fine == pytest.approx(cont, rel=1e-3)


def test_vector_laplace_is_dominated_by_one_coordinate() -> None:
    """Laplace(0.3) x Laplace(0.7) never has a larger δ than Laplace(1.0) (the L1 argument)."""
    split, whole = compose([LaplaceLoss(0.3), LaplaceLoss(0.7)]), LaplaceLoss(1.0).pld()
    for eps in np.linspace(0.0, 1.0, 21):
        assert split.delta(eps) <= whole.delta(eps) + 1e-9


def test_pure_composition_has_no_loss_above_the_sum() -> None:
    four = compose([LaplaceLoss(0.25)] * 4)
    assert four.delta(1.0 + 4e-4) == four.error  # only the float-error bound is left
    assert four.error < 1e-9


def test_loss_models_of_the_core_mechanisms() -> None:
    assert loss_model(Laplace(epsilon=0.5)).law == LaplaceLoss(0.5)
    secure = loss_model(Laplace(epsilon=0.5, mode="secure")).law
    assert isinstance(secure, DiscreteLaplaceLoss) and secure.epsilon == 0.5
    assert loss_model(Geometric(epsilon=0.5, sensitivity=2)).law == DiscreteLaplaceLoss(0.5, 2)
    g = Gaussian(epsilon=1.0, delta=1e-5)
    assert loss_model(g).law == GaussianLoss.from_sigma(g.scale)
    assert loss_model(g).cost == g.cost
    assert loss_model(ExponentialMechanism(epsilon=1.0)).law == BoundedRangeLoss(1.0)
    assert loss_model(Gaussian(epsilon=1.0, delta=1e-5, mode="secure")) is None
    from ppknn.core.dp.accounting import PrivacyCost
    from ppknn.core.dp.smooth import Cauchy

    assert loss_model(PrivacyCost(1.0)) is None
    assert loss_model(Cauchy(epsilon=1.0)) is None


def test_composite_adds_costs_and_composes_laws() -> None:
    c = Composite((RandomisedResponseLoss(1.0), LaplaceLoss(0.5)))
    assert c.cost.epsilon == 1.5
    direct = compose([RandomisedResponseLoss(1.0), LaplaceLoss(0.5)])
    assert c.pld().epsilon(DELTA) == direct.epsilon(DELTA)


def test_bad_input_names_the_value() -> None:
    with pytest.raises(ConfigError, match="interval"):
        LaplaceLoss(0.1).pld(interval=0.5)
    with pytest.raises(ConfigError, match="mu"):
        GaussianLoss(-1.0)
    with pytest.raises(ConfigError, match="no known privacy-loss"):
        compose([object()])
    with pytest.raises(ConfigError, match="no single"):
        _ = GaussianLoss(1.0).cost
    with pytest.raises(ConfigError, match="grids"):
        LaplaceLoss(0.1).pld(1e-4).compose(LaplaceLoss(0.1).pld(1e-3))


def test_epsilon_is_infinite_when_delta_is_below_the_infinite_mass() -> None:
    assert math.isinf(RandomisedResponseLoss(1.0, 1e-3).pld().epsilon(1e-4))
