"""Differential privacy core: mechanisms, secure samplers, accounting, ledger, auditor."""

from core.dp.accounting import (
    PrivacyCost,
    advanced_composition,
    advanced_composition_epsilon,
    bounded_range_composition,
    bounded_range_epsilon,
    bounded_range_kl,
    parallel_composition,
    sequential_composition,
)
from core.dp.calibration import analytic_gaussian_sigma, classic_gaussian_sigma
from core.dp.exact import SeededEntropy, SystemEntropy
from core.dp.mechanisms import Gaussian, Geometric, Laplace, Release

__all__ = [
    "Gaussian",
    "Geometric",
    "Laplace",
    "PrivacyCost",
    "Release",
    "SeededEntropy",
    "SystemEntropy",
    "advanced_composition",
    "advanced_composition_epsilon",
    "analytic_gaussian_sigma",
    "bounded_range_composition",
    "bounded_range_epsilon",
    "bounded_range_kl",
    "classic_gaussian_sigma",
    "parallel_composition",
    "sequential_composition",
]
