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

from typing import TYPE_CHECKING

# imported now: the function ``audit`` shares its name with its module, and importing the
# module ``ppknn.core.dp.audit`` sets the package's ``audit`` to the module
from ppknn.core.dp.audit import AuditResult, audit, clopper_pearson

if TYPE_CHECKING:  # the names below are imported on first use (PEP 562)
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

# a party that needs one mechanism does not pay for the others (a worker's start-up)
_SOURCE = {
    'Cauchy': 'smooth',
    'ExponentialMechanism': 'selection',
    'Gaussian': 'mechanisms',
    'Geometric': 'mechanisms',
    'Laplace': 'mechanisms',
    'LedgerEntry': 'ledger',
    'PlanarLaplace': 'planar',
    'PolynomialTail': 'smooth',
    'PrivacyCost': 'accounting',
    'PrivacyLedger': 'ledger',
    'Release': 'mechanisms',
    'ReportNoisyMax': 'selection',
    'Reservation': 'ledger',
    'SeededEntropy': 'exact',
    'StudentT': 'smooth',
    'SystemEntropy': 'exact',
    'advanced_composition': 'accounting',
    'advanced_composition_epsilon': 'accounting',
    'analytic_gaussian_sigma': 'calibration',
    'bounded_range_composition': 'accounting',
    'bounded_range_epsilon': 'accounting',
    'bounded_range_kl': 'accounting',
    'classic_gaussian_sigma': 'calibration',
    'gaussian_delta': 'calibration',
    'parallel_composition': 'accounting',
    'planar_radius': 'planar',
    'sequential_composition': 'accounting',
    'zcdp_gaussian_sigma': 'calibration',
    'zcdp_to_delta': 'calibration',
}


def __getattr__(name: str) -> object:
    module = _SOURCE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SOURCE))


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
