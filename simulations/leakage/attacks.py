"""Every attack the leakage table can run, by protocol and name, with its scorer.

An attack runs over **views** (a party's or a coalition's messages, no
provenance) through the protocol's adversary code (``protocols/<x>/``), and
is scored here against provenance or the run's ground truth
(:mod:`simulations.leakage.truth`). Each attack returns
:class:`~simulations.leakage.table.LeakageRow` rows.

Default attacks (run after every run) and scripted ones (``[[adversary]]``
in the scenario, with ``observers`` and parameters) share one registry;
:func:`allowed` lists the names per protocol.

Definitions (the protocols' documented guarantees in brackets):

Each protocol registers its own attacks with :func:`register` in its plugin
package (``protocols/<name>/plugin/attacks.py``, imported with the
plugin); the definitions and the guarantees they are compared with are
documented there. A third-party plugin registers its attacks the same way
when it is loaded; :func:`allowed`, :func:`get` and :func:`defaults` load
the registered plugins first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.transcript import Transcript, View
from ppknn.simulations import registry
from ppknn.simulations.leakage.table import (
    LeakageRow,
)

Truth = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Adversary:
    """One adversary to score: the attack, optional observers, parameters."""

    protocol: str
    attack: str
    observers: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    scripted: bool = False


@dataclass
class Context:
    """What a scorer gets: the transcript, the protocol's public facts, ground truth."""

    protocol: str
    transcript: Transcript
    public: Mapping[str, Any]
    truth: Truth
    _messages: dict[bool, list] = field(default_factory=dict)

    def messages(self, *, with_provenance: bool = False,
                 protocol: str | None = None) -> list:
        """Messages of a protocol (cached per provenance flag for the run's own protocol)."""
        if protocol is not None and protocol != self.protocol:
            return self.transcript.messages(with_provenance=with_provenance, protocol=protocol)
        if with_provenance not in self._messages:
            self._messages[with_provenance] = self.transcript.messages(
                with_provenance=with_provenance, protocol=self.protocol)
        return self._messages[with_provenance]

    def view(self, parties: Sequence[str], *, protocol: str | None = None) -> View:
        """The pooled view of ``parties`` (provenance stripped)."""
        return View.of(self.messages(protocol=protocol), parties)


Scorer = Callable[[Context, Adversary], list[LeakageRow]]


@dataclass(frozen=True)
class Attack:
    """A registered attack."""

    protocol: str
    name: str
    scorer: Scorer
    default: bool
    params: tuple[str, ...] = ()
    needs_observers: bool = False
    description: str = ""
    by_design: bool = False
    """The attack measures what the protocol hands a party by design (a role trusted with
    it: the DP owner reads the analysts' instances); reported, not ranked as a leak."""


_ATTACKS: dict[tuple[str, str], Attack] = {}


def register(protocol: str, name: str, *, default: bool, params: tuple[str, ...] = (),
             needs_observers: bool = False, description: str = "", by_design: bool = False
             ) -> Callable[[Scorer], Scorer]:
    """Register a scorer (decorator); ``by_design``: see :attr:`Attack.by_design`."""
    def wrap(fn: Scorer) -> Scorer:
        _ATTACKS[(protocol, name)] = Attack(protocol, name, fn, default, params,
                                            needs_observers, description, by_design)
        return fn
    return wrap


def _loaded(protocol: str | None = None) -> dict[tuple[str, str], Attack]:
    """The attack registry, once the plugins (and so their attacks) are loaded.

    With ``protocol``: once its plugin is (a plugin registers its protocol's attacks
    as it is imported); every plugin when it registered none, or without ``protocol``.
    """
    if protocol is not None:
        registry.find(protocol)
        if any(p == protocol for p, _ in _ATTACKS):
            return _ATTACKS
    registry.names()
    return _ATTACKS


def allowed(protocol: str) -> list[str]:
    """The attack names a protocol accepts."""
    return sorted(n for p, n in _loaded(protocol) if p == protocol)


def get(protocol: str, name: str) -> Attack:
    """The attack ``name`` of ``protocol``; ``ConfigError`` listing the allowed ones."""
    attack = _loaded(protocol).get((protocol, name))
    if attack is None:
        raise ConfigError(f"unknown attack {name!r} for protocol {protocol!r}; allowed: "
                          f"{allowed(protocol)}")
    return attack


def defaults(protocol: str) -> list[Adversary]:
    """The attacks a plain run scores for ``protocol``: its plugin's ``adversaries``.

    A protocol registered without this package's attacks (a third-party plugin)
    scores the attacks registered here as defaults for it, if any.
    """
    plugin = registry.find(protocol)
    found = _loaded(protocol)
    names = [n for n in (plugin.adversaries if plugin is not None else ())
             if (protocol, n) in found]
    if not names:
        names = [a.name for (p, _), a in sorted(found.items()) if p == protocol and a.default]
    return [Adversary(protocol, n) for n in names]


__all__ = ["Adversary", "Attack", "Context", "Scorer", "Truth", "allowed", "defaults", "get",
           "register"]
