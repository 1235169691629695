"""Parties that deviate from their protocol: the machinery, chosen at construction.

Every paper's parties are honest-but-curious. A scenario's ``[[deviation]]``
entry makes one party deviate; the runner builds that party from a deviant
subclass instead of its honest class (:func:`deviant_spec`), so the honest
code paths are untouched when no deviation is configured. Each deviant takes
one extra keyword argument, ``deviation`` (its parameters).

The kinds are each protocol's: its plugin offers them as a mapping of kind
name to :class:`Kind` (the ``deviations`` hook; the deviant classes live in
``protocols/<name>/plugin/deviations.py``), and the callers pass the
merged mapping to :func:`check_deviation` and :func:`deviant_spec`.

Examples
--------
>>> class Honest: ...
>>> class Liar(Honest): ...
>>> kinds = {"lie": Kind(Honest, Liar, ("probability",), "lies")}
>>> check_deviation("lie", {"probability": 1.0}, kinds).deviant.__name__
'Liar'
>>> check_deviation("lie", {"when": 1}, kinds)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: deviation 'lie': unknown parameter(s) ['when']; allowed: ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.runtime import PartySpec


def number(params: Mapping[str, Any], key: str, default: float, *, low: float = -np.inf,
           high: float = np.inf) -> float:
    """The deviation parameter ``key`` (``default`` when absent), a number in ``[low, high]``."""
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            low <= float(value) <= high):
        raise ConfigError(f"deviation parameter {key} = {value!r}: allowed a number in "
                          f"[{low}, {high}]")
    return float(value)


@dataclass(frozen=True)
class Kind:
    """A deviation kind: the honest class it replaces, the deviant, its parameters."""

    honest: type
    deviant: type
    params: tuple[str, ...]
    description: str


def check_deviation(kind: str, params: Mapping[str, Any], kinds: Mapping[str, Kind]) -> Kind:
    """The kind, after checking its name and parameter names (``ConfigError`` otherwise)."""
    found = kinds.get(kind)
    if found is None:
        raise ConfigError(f"unknown deviation kind {kind!r}; allowed: {sorted(kinds)}")
    unknown = sorted(set(params) - set(found.params))
    if unknown:
        raise ConfigError(f"deviation {kind!r}: unknown parameter(s) {unknown}; allowed: "
                          f"{list(found.params)}")
    return found


def deviant_spec(spec: PartySpec, kind: str, params: Mapping[str, Any],
                 kinds: Mapping[str, Kind]) -> PartySpec:
    """``spec`` built as the deviant of ``kind`` (its honest class must match)."""
    found = check_deviation(kind, params, kinds)
    if spec.factory is not found.honest:
        raise ConfigError(f"deviation {kind!r} applies to {found.honest.__name__} parties; "
                          f"{spec.party_id!r} is a "
                          f"{getattr(spec.factory, '__name__', spec.factory)!r}")
    return dataclasses.replace(spec, factory=found.deviant,
                               kwargs={**spec.kwargs, "deviation": dict(params)})


__all__ = ["Kind", "check_deviation", "deviant_spec", "number"]
