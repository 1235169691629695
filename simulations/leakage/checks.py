"""Validation of ``[[adversary]]`` and ``[[deviation]]`` entries, before any party starts.

Called by :func:`simulations.scenario.parse_scenario`: an unknown attack,
deviation kind or parameter is a :class:`~core.errors.ConfigError` naming
the entry, the value and what is allowed. Party names (observers, the
deviating party) are checked against the planned parties by
:func:`check_parties`, when the run is prepared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ppknn.core.errors import ConfigError


def check_scenario(scenario: Any, *, source: str) -> None:
    """Attack and deviation names and parameters of ``scenario``."""
    from ppknn.parties.deviations import check_deviation
    from ppknn.simulations import registry
    from ppknn.simulations.leakage.measure import scripted

    names = [c.name for c in scenario.protocols]
    try:
        scripted([a.model_dump() for a in scenario.adversary], names)
    except ConfigError as exc:
        raise ConfigError(f"invalid scenario {source}:\n  {exc}") from None
    for i, d in enumerate(scenario.deviation):
        try:
            check_deviation(d.kind, d.params, registry.deviation_kinds())
        except ConfigError as exc:
            raise ConfigError(f"invalid scenario {source}:\n  deviation[{i}].kind = "
                              f"{d.kind!r}: {exc}") from None


def check_parties(adversaries: Sequence[Mapping[str, Any]],
                  deviations: Sequence[Mapping[str, Any]],
                  parties: Mapping[str, Sequence[str]]) -> None:
    """Observers and deviating parties must be parties of the run (per protocol)."""
    every = sorted({p for names in parties.values() for p in names})
    shown = every if len(every) <= 20 else every[:20] + ["..."]
    for i, a in enumerate(adversaries):
        protocol = a.get("protocol") or (next(iter(parties)) if len(parties) == 1 else None)
        known = set(parties.get(protocol or "", every))
        unknown = sorted(set(a.get("observers") or ()) - known)
        if unknown:  # never scored as a coalition of whoever else is named
            names = sorted(known)
            raise ConfigError(f"adversary[{i}].observers = {unknown}: not parties of "
                              f"{protocol!r}; its parties: "
                              f"{names if len(names) <= 20 else names[:20] + ['...']}")
    for i, d in enumerate(deviations):
        if d["party"] not in every:
            raise ConfigError(f"deviation[{i}].party = {d['party']!r}: no such party; "
                              f"parties: {shown}")


__all__ = ["check_parties", "check_scenario"]
