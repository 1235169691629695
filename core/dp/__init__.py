"""Differential privacy core: mechanisms, secure samplers, accounting, ledger, auditor.

Modules
-------
validation
    Parameter checks (``ConfigError`` naming the value, ``TypeError`` for types).
exact, samplers
    Exact CKS samplers from OS entropy (``secure``) and numpy (``reproducible``).
calibration
    Analytic, classic and zCDP Gaussian calibration.
mechanisms, selection, smooth, planar
    Laplace, Geometric, Gaussian; ExponentialMechanism, ReportNoisyMax;
    Cauchy, StudentT, PolynomialTail (smooth sensitivity); PlanarLaplace.
accounting, ledger
    Composition theorems (pure functions) and the PrivacyLedger.
audit
    Empirical lower bounds on ε.

Examples
--------
>>> import numpy as np
>>> from ppknn.core.dp import Laplace, PrivacyLedger
>>> ledger = PrivacyLedger(owner="owner-0", epsilon=1.0)
>>> mech = Laplace(epsilon=0.25, sensitivity=1.0)
>>> with ledger.reserve(mech, label="noisy count"):
...     release = mech.randomise(42.0, np.random.default_rng(7))
>>> ledger.remaining().epsilon, release.mode.value
(0.75, 'reproducible')
"""

from ppknn.core.dp.accounting import (
    PrivacyCost,
    advanced_composition,
    advanced_composition_epsilon,
    bounded_range_composition,
    bounded_range_epsilon,
    bounded_range_kl,
    parallel_composition,
    sequential_composition,
)
from ppknn.core.dp.audit import AuditResult, audit, clopper_pearson
from ppknn.core.dp.calibration import (
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_delta,
    zcdp_gaussian_sigma,
    zcdp_to_delta,
)
from ppknn.core.dp.exact import SeededEntropy, SystemEntropy
from ppknn.core.dp.ledger import LedgerEntry, PrivacyLedger, Reservation
from ppknn.core.dp.mechanisms import Gaussian, Geometric, Laplace, Release
from ppknn.core.dp.planar import PlanarLaplace, planar_radius
from ppknn.core.dp.selection import ExponentialMechanism, ReportNoisyMax
from ppknn.core.dp.smooth import Cauchy, PolynomialTail, StudentT

__all__ = [
    "AuditResult",
    "Cauchy",
    "ExponentialMechanism",
    "Gaussian",
    "Geometric",
    "Laplace",
    "LedgerEntry",
    "PlanarLaplace",
    "PolynomialTail",
    "PrivacyCost",
    "PrivacyLedger",
    "Release",
    "ReportNoisyMax",
    "Reservation",
    "SeededEntropy",
    "StudentT",
    "SystemEntropy",
    "advanced_composition",
    "advanced_composition_epsilon",
    "analytic_gaussian_sigma",
    "audit",
    "bounded_range_composition",
    "bounded_range_epsilon",
    "bounded_range_kl",
    "classic_gaussian_sigma",
    "clopper_pearson",
    "gaussian_delta",
    "parallel_composition",
    "planar_radius",
    "sequential_composition",
    "zcdp_gaussian_sigma",
    "zcdp_to_delta",
]
