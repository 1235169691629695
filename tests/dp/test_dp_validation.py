"""Table-driven test of every rejected parameter and its message."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest

from ppknn.core.dp.accounting import PrivacyCost, advanced_composition, bounded_range_epsilon
from ppknn.core.dp.audit import audit
from ppknn.core.dp.calibration import analytic_gaussian_sigma, classic_gaussian_sigma
from ppknn.core.dp.ledger import PrivacyLedger
from ppknn.core.dp.mechanisms import Gaussian, Geometric, Laplace
from ppknn.core.dp.planar import PlanarLaplace
from ppknn.core.dp.selection import ExponentialMechanism, ReportNoisyMax
from ppknn.core.dp.smooth import Cauchy, PolynomialTail, StudentT
from ppknn.core.errors import ConfigError

NAN, INF = math.nan, math.inf

# (id, callable, expected exception, fragment of the message)
BAD_INPUTS = [
    # epsilon <= 0 / not finite / wrong type
    (
        "laplace eps=0",
        partial(Laplace, epsilon=0.0),
        ConfigError,
        "epsilon must be a finite number > 0, got 0.0",
    ),
    (
        "laplace eps<0",
        partial(Laplace, epsilon=-1.0),
        ConfigError,
        "epsilon must be a finite number > 0, got -1.0",
    ),
    (
        "laplace eps=nan",
        partial(Laplace, epsilon=NAN),
        ConfigError,
        "epsilon must be a finite number > 0, got nan",
    ),
    (
        "laplace eps=inf",
        partial(Laplace, epsilon=INF),
        ConfigError,
        "epsilon must be a finite number > 0, got inf",
    ),
    (
        "laplace eps str",
        partial(Laplace, epsilon="1"),
        TypeError,
        "epsilon must be a real number, got str",
    ),
    (
        "laplace eps None",
        partial(Laplace, epsilon=None),
        TypeError,
        "epsilon must be a real number, got NoneType",
    ),
    (
        "laplace eps bool",
        partial(Laplace, epsilon=True),
        TypeError,
        "epsilon must be a real number, got bool",
    ),
    (
        "laplace eps complex",
        partial(Laplace, epsilon=1j),
        TypeError,
        "epsilon must be a real number",
    ),
    # sensitivity
    (
        "laplace sens<0",
        partial(Laplace, epsilon=1.0, sensitivity=-2.0),
        ConfigError,
        "sensitivity must be a finite number > 0, got -2.0",
    ),
    (
        "laplace sens=0",
        partial(Laplace, epsilon=1.0, sensitivity=0),
        ConfigError,
        "sensitivity must be a finite number > 0, got 0",
    ),
    (
        "laplace sens=inf",
        partial(Laplace, epsilon=1.0, sensitivity=INF),
        ConfigError,
        "sensitivity must be finite, got inf",
    ),
    (
        "geometric sens frac",
        partial(Geometric, epsilon=1.0, sensitivity=1.5),
        ConfigError,
        "sensitivity must be a whole number >= 1, got 1.5",
    ),
    (
        "gaussian sens<0",
        partial(Gaussian, epsilon=1.0, delta=1e-5, sensitivity=-1),
        ConfigError,
        "sensitivity must be a finite number > 0, got -1",
    ),
    # delta outside [0, 1) / (0, 1) for the Gaussian
    (
        "gaussian delta=0",
        partial(Gaussian, epsilon=1.0, delta=0.0),
        ConfigError,
        "delta must be in (0, 1), got 0.0",
    ),
    (
        "gaussian delta=1",
        partial(Gaussian, epsilon=1.0, delta=1.0),
        ConfigError,
        "delta must be in (0, 1), got 1.0",
    ),
    (
        "gaussian delta<0",
        partial(Gaussian, epsilon=1.0, delta=-1e-5),
        ConfigError,
        "delta must be in (0, 1), got -1e-05",
    ),
    (
        "gaussian delta nan",
        partial(Gaussian, epsilon=1.0, delta=NAN),
        ConfigError,
        "delta must be finite, got nan",
    ),
    (
        "gaussian delta str",
        partial(Gaussian, epsilon=1.0, delta="0.1"),
        TypeError,
        "delta must be a real number, got str",
    ),
    (
        "cost delta=1",
        partial(PrivacyCost, 1.0, 1.0),
        ConfigError,
        "delta must be in [0, 1), got 1.0",
    ),
    (
        "cost eps<0",
        partial(PrivacyCost, -0.1),
        ConfigError,
        "epsilon of a privacy cost must be >= 0, got -0.1",
    ),
    (
        "br delta=1",
        partial(bounded_range_epsilon, [0.1], 1.0),
        ConfigError,
        "delta must be in [0, 1), got 1.0",
    ),
    (
        "br eps=0",
        partial(bounded_range_epsilon, [0.0], 1e-5),
        ConfigError,
        "epsilons[i] must be a finite number > 0, got 0.0",
    ),
    (
        "advanced k=0",
        partial(advanced_composition, 0.1, 0.0, 0, 1e-6),
        ConfigError,
        "k must be an integer >= 1, got 0",
    ),
    (
        "advanced k float",
        partial(advanced_composition, 0.1, 0.0, 2.0, 1e-6),
        TypeError,
        "k must be an integer, got float",
    ),
    (
        "advanced slack=0",
        partial(advanced_composition, 0.1, 0.0, 5, 0.0),
        ConfigError,
        "delta_slack must be in (0, 1), got 0.0",
    ),
    (
        "analytic delta=0",
        partial(analytic_gaussian_sigma, 1.0, 0.0, 1.0),
        ConfigError,
        "delta must be in (0, 1), got 0.0",
    ),
    (
        "classic eps>=1",
        partial(classic_gaussian_sigma, 1.5, 1e-5, 1.0),
        ConfigError,
        "needs epsilon < 1, got 1.5",
    ),
    # modes and options
    (
        "mode unknown",
        partial(Laplace, epsilon=1.0, mode="fast"),
        ConfigError,
        "mode must be 'reproducible' or 'secure', got 'fast'",
    ),
    (
        "mode type",
        partial(Laplace, epsilon=1.0, mode=1),
        TypeError,
        "mode must be 'reproducible' or 'secure', got int",
    ),
    (
        "rnm noise",
        partial(ReportNoisyMax, epsilon=1.0, noise="gumbel"),
        ConfigError,
        "noise must be 'laplace' or 'exponential', got 'gumbel'",
    ),
    (
        "em monotonic type",
        partial(ExponentialMechanism, epsilon=1.0, monotonic="yes"),
        TypeError,
        "monotonic must be a bool, got 'yes'",
    ),
    (
        "poly gamma<=1",
        partial(PolynomialTail, epsilon=1.0, gamma=1.0),
        ConfigError,
        "gamma must be a finite number > 1, got 1.0",
    ),
    (
        "student dof<1",
        partial(StudentT, epsilon=1.0, dof=0.5),
        ConfigError,
        "dof must be a finite number >= 1, got 0.5",
    ),
    (
        "cauchy eps=0",
        partial(Cauchy, epsilon=0),
        ConfigError,
        "epsilon must be a finite number > 0, got 0",
    ),
    (
        "planar eps<0",
        partial(PlanarLaplace, epsilon=-0.1),
        ConfigError,
        "epsilon must be a finite number > 0, got -0.1",
    ),
    # values handed to mechanisms
    (
        "value nan",
        lambda: Laplace(epsilon=1.0).randomise([1.0, NAN], np.random.default_rng()),
        ConfigError,
        "value must be finite",
    ),
    (
        "value inf",
        lambda: Gaussian(epsilon=1.0, delta=1e-5).randomise(INF, np.random.default_rng()),
        ConfigError,
        "value must be finite",
    ),
    (
        "value str",
        lambda: Laplace(epsilon=1.0).randomise("3", np.random.default_rng()),
        TypeError,
        "value must be numeric",
    ),
    (
        "utilities nan",
        lambda: ExponentialMechanism(epsilon=1.0).randomise([0.0, NAN], np.random.default_rng()),
        ConfigError,
        "utilities must be finite",
    ),
    (
        "smooth sens<=0",
        lambda: Cauchy(epsilon=1.0).randomise(0.0, -1.0, np.random.default_rng()),
        ConfigError,
        "smooth_sensitivity must be > 0",
    ),
    (
        "beta out of range",
        lambda: Laplace(epsilon=1.0).error_bound(1.5),
        ConfigError,
        "beta must be in (0, 1), got 1.5",
    ),
    # ledger
    (
        "ledger eps=0",
        partial(PrivacyLedger, owner="o", epsilon=0.0),
        ConfigError,
        "epsilon budget must be a finite number > 0, got 0.0",
    ),
    (
        "ledger delta=1",
        partial(PrivacyLedger, owner="o", epsilon=1.0, delta=1.0),
        ConfigError,
        "delta budget must be in [0, 1), got 1.0",
    ),
    (
        "ledger owner",
        partial(PrivacyLedger, owner="", epsilon=1.0),
        ConfigError,
        "owner must be a non-empty string",
    ),
    (
        "ledger cost type",
        lambda: PrivacyLedger(owner="o", epsilon=1.0).charge(0.1),
        TypeError,
        "expected a PrivacyCost",
    ),
    (
        "ledger repeat=0",
        lambda: PrivacyLedger(owner="o", epsilon=1.0).charge(PrivacyCost(0.1), repeat=0),
        ConfigError,
        "repeat must be an integer >= 1, got 0",
    ),
    # auditor
    (
        "audit n too small",
        lambda: audit(lambda x, r: x, 0, 1, n_samples=10, rng=np.random.default_rng()),
        ConfigError,
        "n_samples must be an integer >= 100, got 10",
    ),
    (
        "audit confidence",
        lambda: audit(
            lambda x, r: x, 0, 1, n_samples=100, rng=np.random.default_rng(), confidence=1.0
        ),
        ConfigError,
        "confidence must be in (0, 1), got 1.0",
    ),
]


@pytest.mark.parametrize(
    ("call", "exc", "message"), [row[1:] for row in BAD_INPUTS], ids=[row[0] for row in BAD_INPUTS]
)
def test_bad_input_is_rejected_with_a_clear_message(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert message in str(info.value)


def test_config_errors_are_value_errors():
    with pytest.raises(ValueError):
        Laplace(epsilon=-1.0)


def test_numpy_scalars_are_accepted():
    mech = Laplace(epsilon=np.float32(0.5), sensitivity=np.int64(2))
    assert (mech.epsilon, mech.sensitivity) == (0.5, 2.0)
    assert isinstance(mech.epsilon, float)
