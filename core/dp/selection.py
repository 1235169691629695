"""Private selection: the exponential mechanism and report-noisy-max.

Both take a utility vector ``(C,)`` -- one query, C candidates -- or a utility
matrix ``(Q, C)`` -- a batch of Q queries answered at once -- and release the
chosen index per query. Every query in a batch is a separate release: the
:class:`~core.dp.mechanisms.Release` of a batch of Q carries ``Q * ε``
(sequential composition); a protocol with a fixed schedule may charge less by
bounded-range composition for the exponential mechanism (see
:mod:`core.dp.accounting` and ``PrivacyLedger.charge_bounded_range``).

``reproducible`` mode is vectorised numpy: the Gumbel-max trick for the
exponential mechanism (argmax of ``eta*u + Gumbel`` has exactly the
exponential-mechanism law) and argmax of ``u + noise`` for report-noisy-max.
``secure`` mode uses the exact rational samplers of :mod:`core.dp.exact`:
rejection sampling for the exponential mechanism and permute-and-flip for
report-noisy-max with exponential noise (the two are equal in law; Ding et al.
2021). Report-noisy-max with *Laplace* noise has no exact sampler here and is
refused in secure mode.

Examples
--------
>>> import numpy as np
>>> em = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
>>> em.probabilities([0.0, 2.0]).round(4)
array([0.2689, 0.7311])
>>> em.randomise(np.zeros((5, 3)), np.random.default_rng(0)).value.shape
(5,)
>>> em.bounded_range
1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ppknn.core.dp import samplers
from ppknn.core.dp.exact import exponential_mechanism_index, permute_and_flip_index
from ppknn.core.dp.mechanisms import PureDP, Release
from ppknn.core.dp.validation import (
    check_epsilon,
    check_finite_array,
    check_mode,
    check_positive_int,
    check_probability,
    check_sensitivity,
)
from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode


def _utilities(utilities: Any) -> np.ndarray:
    arr = check_finite_array(utilities, name="utilities")
    if arr.ndim not in (1, 2) or arr.shape[-1] < 1:
        raise ConfigError(
            f"utilities must have shape (C,) or (Q, C) with C >= 1, got shape {arr.shape}"
        )
    return arr


def _finish(arr: np.ndarray, chosen: np.ndarray) -> Any:
    return int(chosen[0]) if arr.ndim == 1 else chosen.astype(np.int64)


@dataclass(frozen=True, kw_only=True)
class ExponentialMechanism(PureDP):
    """Choose candidate i with probability ∝ ``exp(eta * u_i)``; ε-DP and ε-bounded-range.

    ``eta = epsilon / (2 sensitivity)``, or ``epsilon / sensitivity`` when the
    utilities are *monotonic* (on neighbouring inputs all utilities move in
    the same direction, as counts do). Either way the mechanism is ε-DP and
    ε-bounded-range (Durfee & Rogers 2019, Lemma 4.3), so k of them compose
    by :func:`~core.dp.accounting.bounded_range_epsilon`.

    Parameters
    ----------
    epsilon:
        Privacy parameter, > 0.
    sensitivity:
        Sensitivity of the utility of any one candidate, > 0.
    monotonic:
        Whether utilities are monotonic in the data (see above).
    mode:
        ``"reproducible"`` or ``"secure"``.
    """

    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    name = "exponential"

    def __post_init__(self) -> None:
        if not isinstance(self.monotonic, bool):
            raise TypeError(f"monotonic must be a bool, got {self.monotonic!r}")
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity))
        object.__setattr__(self, "mode", check_mode(self.mode))

    @property
    def bounded_range(self) -> float:
        """The mechanism is ε-bounded-range with this ε."""
        return self.epsilon

    @property
    def eta(self) -> float:
        """The inverse temperature applied to utilities."""
        return self.epsilon / (self.sensitivity if self.monotonic else 2.0 * self.sensitivity)

    @property
    def scale(self) -> float:
        """Return ``1 / eta``: the Gumbel noise scale of the equivalent noisy argmax."""
        return 1.0 / self.eta

    def probabilities(self, utilities: Any) -> np.ndarray:
        """Return the exact selection probabilities (softmax of ``eta * u``), same shape."""
        from scipy import special  # lazily: a party that never uses it never loads scipy

        return special.softmax(self.eta * _utilities(utilities), axis=-1)

    def utility_loss_bound(self, n_candidates: int, beta: float = 0.05) -> float:
        """With probability >= 1 - beta the chosen utility is within this of the best."""
        n = check_positive_int(n_candidates, name="n_candidates")
        beta = check_probability(beta, name="beta")
        return (math.log(n) + math.log(1.0 / beta)) / self.eta

    def randomise(self, utilities: Any, rng: Any = None) -> Release:
        """Select one index per query row of ``utilities``."""
        arr = _utilities(utilities)
        rows = arr.reshape(-1, arr.shape[-1])
        if self.mode is RandomnessMode.SECURE:
            entropy = samplers.resolve_entropy(rng)
            eta = Fraction(self.epsilon) / (
                Fraction(self.sensitivity) * (1 if self.monotonic else 2)
            )
            chosen = np.array([exponential_mechanism_index(r.tolist(), eta, entropy) for r in rows])
        else:
            gen = samplers.resolve_generator(rng)
            chosen = np.argmax(self.eta * rows + gen.gumbel(size=rows.shape), axis=-1)
        return Release(_finish(arr, chosen), self.name, self.epsilon * len(rows), 0.0, self.mode)

    select = randomise


@dataclass(frozen=True, kw_only=True)
class ReportNoisyMax(PureDP):
    """Release ``argmax_i (u_i + noise_i)``; ε-DP.

    Noise scale ``b = 2 sensitivity / epsilon`` (``sensitivity / epsilon`` for
    monotonic utilities such as counts; Dwork & Roth, Claim 3.9). ``noise`` is
    ``"laplace"`` or ``"exponential"`` (one-sided, equal in law to
    permute-and-flip; never worse than the exponential mechanism).

    Examples
    --------
    >>> import numpy as np
    >>> rnm = ReportNoisyMax(epsilon=1.0, noise="exponential", monotonic=True)
    >>> rnm.scale
    1.0
    >>> int(rnm.randomise([0.0, 50.0, 1.0], np.random.default_rng(2)).value)
    1
    """

    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False
    noise: str = "laplace"
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    name = "report_noisy_max"

    def __post_init__(self) -> None:
        if not isinstance(self.monotonic, bool):
            raise TypeError(f"monotonic must be a bool, got {self.monotonic!r}")
        if self.noise not in ("laplace", "exponential"):
            raise ConfigError(f"noise must be 'laplace' or 'exponential', got {self.noise!r}")
        mode = check_mode(self.mode)
        if mode is RandomnessMode.SECURE and self.noise == "laplace":
            raise ConfigError(
                "report-noisy-max with noise='laplace' has no exact sampler in secure mode; "
                "use noise='exponential' (permute-and-flip, same epsilon) or ExponentialMechanism"
            )
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity))
        object.__setattr__(self, "mode", mode)

    @property
    def scale(self) -> float:
        """The noise scale b."""
        return (1.0 if self.monotonic else 2.0) * self.sensitivity / self.epsilon

    def utility_loss_bound(self, n_candidates: int, beta: float = 0.05) -> float:
        """With probability >= 1 - beta the chosen utility is within this of the best."""
        n = check_positive_int(n_candidates, name="n_candidates")
        beta = check_probability(beta, name="beta")
        factor = 2.0 if self.noise == "laplace" else 1.0
        return factor * self.scale * math.log(n / beta)

    def randomise(self, utilities: Any, rng: Any = None) -> Release:
        """Select one index per query row of ``utilities``."""
        arr = _utilities(utilities)
        rows = arr.reshape(-1, arr.shape[-1])
        if self.mode is RandomnessMode.SECURE:
            entropy = samplers.resolve_entropy(rng)
            eta = 1 / (
                Fraction(self.sensitivity) * (1 if self.monotonic else 2) / Fraction(self.epsilon)
            )
            chosen = np.array([permute_and_flip_index(r.tolist(), eta, entropy) for r in rows])
        else:
            gen = samplers.resolve_generator(rng)
            if self.noise == "laplace":
                noise = gen.laplace(0.0, self.scale, size=rows.shape)
            else:
                noise = gen.exponential(self.scale, size=rows.shape)
            chosen = np.argmax(rows + noise, axis=-1)
        return Release(_finish(arr, chosen), self.name, self.epsilon * len(rows), 0.0, self.mode)

    select = randomise


__all__ = ["ExponentialMechanism", "ReportNoisyMax"]
