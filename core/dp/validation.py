"""Parameter checks shared by every DP component.

Each check returns the value in canonical form (a Python ``float``/``int`` or a
:class:`~core.rng.RandomnessMode`) and raises

* :class:`TypeError` when the value has the wrong type (``bool``, ``str``,
  ``None``, complex numbers ... are never numbers here), and
* :class:`~core.errors.ConfigError` (a ``ValueError``) when the value is out of
  range or not finite; the message names the parameter, the value given and
  what is allowed.

Examples
--------
>>> check_epsilon(0.5)
0.5
>>> check_epsilon(0)
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: epsilon must be a finite number > 0, got 0
>>> check_delta(1e-5)
1e-05
>>> check_mode("secure").value
'secure'
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode


def check_real(value: object, name: str) -> float:
    """``value`` as a finite float; ``TypeError`` unless it is a real number (not bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ConfigError(f"{name} must be finite, got {value!r}")
    return out


def check_epsilon(epsilon: object, *, name: str = "epsilon") -> float:
    """Check a privacy parameter ε: a finite real number > 0."""
    if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, (bool, np.bool_)):
        if not math.isfinite(float(epsilon)) or float(epsilon) <= 0:
            raise ConfigError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return check_real(epsilon, name)


def check_delta(delta: object, *, name: str = "delta", allow_zero: bool = True) -> float:
    """Check δ: a real number in ``[0, 1)`` (``(0, 1)`` when ``allow_zero`` is false)."""
    value = check_real(delta, name)
    low_ok = value >= 0 if allow_zero else value > 0
    if not (low_ok and value < 1):
        allowed = "[0, 1)" if allow_zero else "(0, 1)"
        raise ConfigError(f"{name} must be in {allowed}, got {delta!r}")
    return value


def check_epsilon_delta(
    epsilon: object, delta: object, *, allow_zero_delta: bool = True
) -> tuple[float, float]:
    """Check an (ε, δ) pair; see :func:`check_epsilon` and :func:`check_delta`."""
    return check_epsilon(epsilon), check_delta(delta, allow_zero=allow_zero_delta)


def check_sensitivity(sensitivity: object, *, name: str = "sensitivity") -> float:
    """Check a sensitivity: a finite real number > 0."""
    value = check_real(sensitivity, name)
    if value <= 0:
        raise ConfigError(f"{name} must be a finite number > 0, got {sensitivity!r}")
    return value


def check_integer_sensitivity(sensitivity: object, *, name: str = "sensitivity") -> int:
    """Check an integer-valued sensitivity (a whole number >= 1)."""
    value = check_sensitivity(sensitivity, name=name)
    if value != int(value):
        raise ConfigError(f"{name} must be a whole number >= 1, got {sensitivity!r}")
    return int(value)


def check_positive_int(value: object, *, name: str, minimum: int = 1) -> int:
    """Check an integer count ``>= minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if int(value) < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_probability(value: object, *, name: str, open_interval: bool = True) -> float:
    """Check a probability in ``(0, 1)`` (or ``[0, 1]`` when ``open_interval`` is false)."""
    p = check_real(value, name)
    ok = 0 < p < 1 if open_interval else 0 <= p <= 1
    if not ok:
        allowed = "(0, 1)" if open_interval else "[0, 1]"
        raise ConfigError(f"{name} must be in {allowed}, got {value!r}")
    return p


def check_mode(mode: object) -> RandomnessMode:
    """Check a randomness mode (``"reproducible"`` or ``"secure"``)."""
    if isinstance(mode, RandomnessMode):
        return mode
    if not isinstance(mode, str):
        raise TypeError(f"mode must be 'reproducible' or 'secure', got {type(mode).__name__}")
    try:
        return RandomnessMode(mode)
    except ValueError:
        raise ConfigError(f"mode must be 'reproducible' or 'secure', got {mode!r}") from None


def check_finite_array(values: object, *, name: str = "value") -> np.ndarray:
    """``values`` as a float array; ``ConfigError`` if any entry is NaN or infinite."""
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(f"{name} must be numeric, got {type(values).__name__}")
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {values!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise ConfigError(f"{name} must be finite, got non-finite entries in {values!r}")
    return arr


__all__ = [
    "check_delta",
    "check_epsilon",
    "check_epsilon_delta",
    "check_finite_array",
    "check_integer_sensitivity",
    "check_mode",
    "check_positive_int",
    "check_probability",
    "check_real",
    "check_sensitivity",
]
