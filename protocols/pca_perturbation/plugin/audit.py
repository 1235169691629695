"""The audit of ``pca-perturbation``: its neighbouring inputs, replayed and worst-case.

The generic audit (:mod:`simulations.leakage.audit`) asks the plugin through
its ``audit_setup``, ``worst_case`` and ``worst_case_references`` hooks,
which call this module.

Worst-case audit (:mod:`simulations.leakage.worstcase`):

``pca-laplace``
    one noisy score of the sanitizer's per-column Laplace
    (:func:`protocols.pca_perturbation.sanitize.laplace_mechanisms`, ε = 1/b,
    sensitivity = the column's range): the score at either end of its range.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppknn.simulations.leakage.worstcase import (
    Case,
    noise_factor,
)

NAME = "pca-perturbation"


def pca_laplace(b: float, value_range: float = 1.0, *, deviation: str = "none") -> Case:
    """One noisy score of the sanitizer's column Laplace: the score at either end of its range."""
    from ppknn.protocols.pca_perturbation.sanitize import laplace_mechanisms

    (mech,) = laplace_mechanisms(np.array([value_range]), b)
    factor = noise_factor(deviation)

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        value = np.full(n, 0.0 if which == "a" else value_range)
        if factor == math.inf:
            return value
        noise = np.asarray(mech.randomise(np.zeros(n), rng).value)
        return value + noise / factor

    return Case("pca Laplace column", "pca-perturbation", f"a score at 0 vs {value_range:g} "
                f"(the column's range), b = {b:g}", 1.0 / b, factor / b, draw, one_run_ok=True,
                deviation=deviation)


def worst_case(p: Any, deviation: str) -> tuple[Case, str, str] | None:
    """The worst-case audit of the Laplace schemes (``None`` for the others, or b = 0)."""
    plan, public = p.plan, p.plan.public
    if public.get("scheme") not in ("laplace", "pca-laplace"):
        return None
    request = getattr(plan.config, "request", plan.config)
    b = float(getattr(request, "b", 0.0) or 0.0)
    if b <= 0:
        return None
    return (pca_laplace(b, deviation=deviation), "miner",
            "one training row's released score moved across its column's range")
