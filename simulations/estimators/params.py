"""Parameter checks of the estimators: numbers as numbers, names in every refusal.

Each check takes the estimator's name (``who``), the parameter's name and its
value, and returns the value in canonical Python form -- a numpy scalar
(``np.int64(3)``, ``np.float32(1)``, what ``GridSearchCV`` over ``np.arange``
hands out) becomes an ``int`` or ``float`` -- or raises
:class:`~ppknn.core.errors.ConfigError` (a ``ValueError``) saying which
parameter, the value given and what is allowed. ``bool`` is never a number.

Randomness follows scikit-learn: ``random_state`` is ``None`` (fresh OS
entropy on every call), an int (every call repeats: a simulation, since anyone
who knows the seed can regenerate the noise) or a numpy ``RandomState`` /
``Generator`` (each call draws its seed from it, so calls differ).

Examples
--------
>>> import numpy as np
>>> integer("Est", "n_parties", np.int64(3), low=3), real("Est", "epsilon", np.float32(0.5))
(3, 0.5)
>>> integer("Est", "n_neighbors", "5", low=1)
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: Est: n_neighbors = '5'; allowed: an int >= 1
>>> seed_of("Est", 7), seed_of("Est", np.random.RandomState(0)) != seed_of("Est", None)
(7, True)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError

SEED_LIMIT = 2 ** 63
"""Root seeds drawn for a run lie in ``[0, SEED_LIMIT)``."""

RANDOM_STATE_ALLOWED = ("None (fresh OS entropy every call), an int >= 0 (reproducible: a "
                        "simulation, not a release) or a numpy RandomState / Generator")


def _refuse(who: str, name: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{who}: {name} = {value!r}; allowed: {allowed}")


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _range_text(kind: str, low: float | None, high: float | None, low_open: bool,
                high_open: bool) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return f"{kind} {' and '.join(parts)}" if parts else kind


def integer(who: str, name: str, value: Any, *, low: int | None = None,
            high: int | None = None, allowed: str | None = None) -> int:
    """``value`` as a Python ``int`` in ``[low, high]``; numpy integers are accepted."""
    text = allowed or _range_text("an int", low, high, False, False)
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        raise _refuse(who, name, value, text)
    out = int(value)
    if (low is not None and out < low) or (high is not None and out > high):
        raise _refuse(who, name, value, text)
    return out


def real(who: str, name: str, value: Any, *, low: float | None = 0.0,
         high: float | None = None, low_open: bool = True, high_open: bool = False,
         finite: bool = True, allowed: str | None = None) -> float:
    """``value`` as a Python ``float``; by default finite and ``> 0``."""
    kind = "a finite number" if finite else "a number"
    text = allowed or _range_text(kind, low, high, low_open, high_open)
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise _refuse(who, name, value, text)
    out = float(value)
    bad = math.isnan(out) or (finite and not math.isfinite(out))
    if low is not None:
        bad = bad or (out <= low if low_open else out < low)
    if high is not None:
        bad = bad or (out >= high if high_open else out > high)
    if bad:
        raise _refuse(who, name, value, text)
    return out


def optional_real(who: str, name: str, value: Any, **kwargs: Any) -> float | None:
    """``None`` or :func:`real`."""
    return None if value is None else real(who, name, value, **kwargs)


BUDGET_ALLOWED = "None (no cap) or a finite number > 0"
BUDGET_DELTA_ALLOWED = "None (no cap) or a finite number >= 0"


def budgets(who: str, budget: Any, budget_delta: Any) -> dict[str, float | None]:
    """A DP estimator's caps since ``fit``: ``budget`` (ε) and ``budget_delta`` (δ).

    >>> budgets("Est", None, 0)
    {'budget': None, 'budget_delta': 0.0}
    >>> budgets("Est", 4, -1e-6)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ppknn.core.errors.ConfigError: Est: budget_delta = -1e-06; allowed: None (no cap) or ...
    """
    return {"budget": optional_real(who, "budget", budget, allowed=BUDGET_ALLOWED),
            "budget_delta": optional_real(who, "budget_delta", budget_delta, low=0.0,
                                          low_open=False, allowed=BUDGET_DELTA_ALLOWED)}


ACCOUNTANT_OPTIONS = ("auto", "basic", "advanced", "pld")


def accountant(who: str, value: Any, budget_delta: float | None) -> str:
    """The composition of a DP estimator's calls: ``"basic"``, ``"advanced"`` or ``"pld"``.

    As a scenario's ledger (:mod:`core.dp.accountant`): ``"auto"`` is ``"pld"`` with a
    ``budget_delta`` in (0, 1) and ``"basic"`` otherwise; ``"advanced"`` and ``"pld"``
    need one (the δ they read the composition at).

    >>> accountant("Est", "auto", 1e-6), accountant("Est", "auto", None)
    ('pld', 'basic')
    >>> accountant("Est", "pld", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ppknn.core.errors.ConfigError: Est: accountant = 'pld' needs budget_delta > 0 ...
    """
    if not isinstance(value, str) or value not in ACCOUNTANT_OPTIONS:
        raise _refuse(who, "accountant", value, f"one of {list(ACCOUNTANT_OPTIONS)}")
    usable = budget_delta is not None and 0 < budget_delta < 1
    if value == "auto":
        return "pld" if usable else "basic"
    if value != "basic" and not usable:
        raise ConfigError(f"{who}: accountant = {value!r} needs budget_delta > 0 (and < 1; "
                          f"got {budget_delta!r}), the δ it reads the composition at; "
                          "allowed with this budget_delta: 'basic' or 'auto' (a pure ε "
                          "budget composes tightly by summation)")
    return value


def choice(who: str, name: str, value: Any, options: Sequence[str]) -> str:
    """One of ``options`` (strings)."""
    if not isinstance(value, str) or value not in options:
        raise _refuse(who, name, value, f"one of {list(options)}")
    return value


def flag(who: str, name: str, value: Any) -> bool:
    """``True`` or ``False`` (numpy booleans too)."""
    if not _is_bool(value):
        raise _refuse(who, name, value, "True or False")
    return bool(value)


def neighbours_fit(who: str, k: int, n_samples: int) -> None:
    """Refuse ``n_neighbors`` larger than the training rows."""
    if k > n_samples:
        raise ConfigError(f"{who}: n_neighbors = {k} is larger than n_samples = {n_samples}; "
                          f"allowed: <= {n_samples}")


def random_state(who: str, value: Any, name: str = "random_state") -> Any:
    """``value`` if it is a valid ``random_state`` (module docstring); an int as ``int``."""
    if value is None or isinstance(value, (np.random.RandomState, np.random.Generator)):
        return value
    if _is_bool(value) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise _refuse(who, name, value, RANDOM_STATE_ALLOWED)
    return int(value)


def seeded(value: Any) -> bool:
    """Whether ``random_state`` makes every call repeat (an int)."""
    return value is not None and not isinstance(value, (np.random.RandomState,
                                                        np.random.Generator))


def seed_of(who: str, value: Any, name: str = "random_state") -> int:
    """The root seed of one call: the int as given, else drawn (OS entropy or the generator)."""
    value = random_state(who, value, name)
    if value is None:
        return int(np.random.SeedSequence().entropy % SEED_LIMIT)  # type: ignore[operator]
    if isinstance(value, np.random.RandomState):
        return int(value.randint(0, SEED_LIMIT, dtype=np.int64))
    if isinstance(value, np.random.Generator):
        return int(value.integers(0, SEED_LIMIT))
    return value


def generator_of(who: str, value: Any, *path: str, name: str = "random_state"
                 ) -> np.random.Generator:
    """A generator for one call: seeded by the int (and ``path``), else from fresh entropy."""
    from ppknn.core.rng import SeedPolicy

    value = random_state(who, value, name)
    if value is None:
        return np.random.default_rng()  # 128 bits of OS entropy
    if seeded(value):
        return SeedPolicy(root=value).generator(*path)
    return np.random.default_rng(seed_of(who, value, name))


__all__ = ["ACCOUNTANT_OPTIONS", "BUDGET_ALLOWED", "BUDGET_DELTA_ALLOWED", "RANDOM_STATE_ALLOWED",
           "SEED_LIMIT", "accountant", "budgets", "choice", "flag", "generator_of", "integer",
           "optional_real", "random_state", "real", "seed_of", "seeded"]
