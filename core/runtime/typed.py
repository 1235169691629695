"""Typed party handles: a driver calls a role's parties through the role's interface.

A role's interface is a ``typing.Protocol`` (``protocols/<name>/api.py``)
listing, with types, the methods drivers call on the parties playing it;
the party classes (``parties/``) declare that they implement it.
:func:`typed` gives a driver a :class:`Parties` handle on those parties::

    owners = typed(runtime, RingOwnerAPI, order)
    ref = owners.call(p, protocol=SUM, round=1).share_out()           # runtime.call(...)
    job = owners.plan(p, protocol="setup").configure(setup)            # a Call, for map
    step = owners.plan(p, protocol=TOPK, round=r).topk_step(PREVIOUS, r)  # a Step, for chain

The proxies returned by :meth:`Parties.call` and :meth:`Parties.plan` are
typed as the interface, so a reader, a type checker and a call-graph tool
follow ``owners.call(p).share_out`` to ``RingOwnerAPI.share_out`` and to the
party implementing it. Underneath nothing changes: each method call is
checked against the interface's signature (an unknown method, a party of
another role or a wrong number of arguments fails at once, naming them),
then becomes exactly the :meth:`~core.runtime.base.Runtime.call`,
:class:`~core.runtime.base.Step` or :class:`~core.runtime.base.Call` a
driver would write with the method's name as a string -- the runtime's
batching of chains, maps and scatters and the transcript are the same.

What :meth:`Parties.call` returns is the runtime's *reference* to the
method's result (:meth:`~core.runtime.base.Runtime.fetch` it); in plan mode
a first argument :data:`PREVIOUS` stands for the previous step's output
(the message a chain or a scatter hands on), which makes a
:class:`~core.runtime.base.Step`.

Examples
--------
>>> from typing import Protocol
>>> class EchoAPI(Protocol):
...     def echo(self, incoming: object, times: int) -> object: ...
>>> from ppknn.core.runtime.inprocess import InProcessRuntime
>>> echo = typed(InProcessRuntime(), EchoAPI, ["a", "b"])
>>> echo.plan("a", protocol="demo", round=2).echo(PREVIOUS, 3)
Step(party='a', method='echo', args=(3,), protocol='demo', round=2)
>>> echo.plan("b").echo(None, 3)
Call(party='b', method='echo', args=(None, 3), protocol='', round=0)
>>> echo.plan("a").echo(PREVIOUS)
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: EchoAPI.echo(incoming, times): missing a required argument: 'times'
>>> echo.plan("c")
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: party 'c' does not play EchoAPI here; its parties: ['a', 'b']
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from ppknn.core.errors import ConfigError
from ppknn.core.messages import PartyId
from ppknn.core.runtime.base import Call, Step

if TYPE_CHECKING:
    from ppknn.core.runtime.base import Runtime

API = TypeVar("API")


class _Previous:
    """The previous step's output (see :data:`PREVIOUS`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "PREVIOUS"


PREVIOUS: Any = _Previous()
"""First argument of a planned method call: the output of the previous step (a chain's
message, a scatter's output for this target); the planned call is then a ``Step``."""


@functools.cache
def interface_methods(api: type) -> dict[str, inspect.Signature]:
    """The methods a ``typing.Protocol`` interface lists, by name, with ``self`` dropped.

    Public methods only (names without a leading underscore), the interface's
    bases included.
    """
    if not (isinstance(api, type) and getattr(api, "_is_protocol", False)):
        raise ConfigError(f"{api!r} is not a typing.Protocol interface")
    out: dict[str, inspect.Signature] = {}
    for klass in reversed(api.__mro__):
        if klass.__module__ == "typing" or klass is object:
            continue
        for name, fn in vars(klass).items():
            if name.startswith("_") or not inspect.isfunction(fn):
                continue
            sig = inspect.signature(fn)
            out[name] = sig.replace(parameters=list(sig.parameters.values())[1:])
    if not out:
        raise ConfigError(f"interface {api.__name__} lists no method")
    return out


class _Proxy:
    """Attribute access yields the interface's methods, bound to ``make(name, args)``."""

    __slots__ = ("_api", "_make", "_methods")

    def __init__(self, api: type, make: Callable[[str, tuple], Any]) -> None:
        self._api = api
        self._methods = interface_methods(api)
        self._make = make

    def __getattr__(self, name: str) -> Callable[..., Any]:
        sig = self._methods.get(name)
        if sig is None:
            raise AttributeError(f"{self._api.__name__} has no method {name!r}; its methods: "
                                 f"{sorted(self._methods)}")

        low, high = _arities(self._api)[name]
        make = self._make

        def method(*args: Any, **kwargs: Any) -> Any:
            if kwargs or not low <= len(args) <= high:  # the check runs on every call: a count
                self._refuse(name, sig, args, kwargs)
            return make(name, args)

        method.__name__ = name
        return method

    def _refuse(self, name: str, sig: inspect.Signature, args: tuple, kwargs: dict) -> None:
        where = f"{self._api.__name__}.{name}({', '.join(sig.parameters)})"
        if kwargs:
            raise ConfigError(f"{where}: pass arguments by position (a runtime call "
                              f"carries positional arguments), got {sorted(kwargs)}")
        try:
            sig.bind(*args)
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None


@functools.cache
def _arities(api: type) -> dict[str, tuple[int, float]]:
    """Each interface method's :func:`_arity`, computed once per interface."""
    return {name: _arity(sig) for name, sig in interface_methods(api).items()}


def _arity(sig: inspect.Signature) -> tuple[int, float]:
    """How many positional arguments a call may pass: (fewest, most)."""
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    low = sum(p.default is p.empty for p in positional)
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return low, float("inf")
    if any(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in params):
        return low, -1  # a required keyword-only argument: no positional call is whole
    return low, len(positional)


class Parties(Generic[API]):
    """The parties playing one role, called through the role's interface ``api``.

    Parameters
    ----------
    runtime:
        The started runtime hosting them.
    api:
        The role's ``typing.Protocol`` interface.
    parties:
        Their names, in the protocol's order.
    """

    def __init__(self, runtime: Runtime, api: type[API], parties: Iterable[PartyId]) -> None:
        self.runtime = runtime
        self.api = api
        self.names: tuple[PartyId, ...] = tuple(parties)
        self._members = frozenset(self.names)
        interface_methods(api)  # refuse a non-interface now

    def __iter__(self) -> Iterator[PartyId]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"Parties({self.api.__name__}, {len(self.names)} parties)"

    def _check(self, party: PartyId) -> None:
        if party not in self._members:
            shown = list(self.names[:20]) + (["..."] if len(self.names) > 20 else [])
            raise ConfigError(f"party {party!r} does not play {self.api.__name__} here; its "
                              f"parties: {shown}")

    def call(self, party: PartyId, *, protocol: str = "", round: int = 0,
             num_returns: int = 1) -> API:
        """``party`` as the interface; each method schedules ``runtime.call``.

        A method returns the call's reference (a list of ``num_returns``
        references when > 1).
        """
        self._check(party)
        rt = self.runtime

        def make(method: str, args: tuple) -> Any:
            return rt.call(party, method, *args, protocol=protocol, round=round,
                           num_returns=num_returns)

        return cast(API, _Proxy(self.api, make))

    def plan(self, party: PartyId, *, protocol: str = "", round: int = 0) -> API:
        """``party`` as the interface; each method returns the planned call.

        A :class:`~core.runtime.base.Step` when its first argument is
        :data:`PREVIOUS` (for ``chain`` and ``scatter``), else a
        :class:`~core.runtime.base.Call` (for ``map``).
        """
        self._check(party)

        def make(method: str, args: tuple) -> Any:
            if args and args[0] is PREVIOUS:
                return Step(party, method, args[1:], protocol, round)
            if any(a is PREVIOUS for a in args):
                raise ConfigError(f"{self.api.__name__}.{method}: PREVIOUS stands only as "
                                  "the first argument")
            return Call(party, method, args, protocol, round)

        return cast(API, _Proxy(self.api, make))


def typed(runtime: Runtime, api: type[API], parties: Iterable[PartyId]) -> Parties[API]:
    """The hosted ``parties`` playing a role, called through its interface ``api``.

    Each method of the handle's proxies is ``runtime``'s
    :meth:`~core.runtime.base.Runtime.call` (or a planned ``Step`` / ``Call``
    for ``chain``, ``map`` and ``scatter``); see the module docstring.
    """
    return Parties(runtime, api, parties)


def implements(cls: type, api: type) -> list[str]:
    """How ``cls`` fails to implement ``api`` (empty: it does).

    Each method of the interface must be defined by ``cls`` itself or a
    base other than the interface (an inherited ``...`` body does not
    count), with the same parameters and annotations: names, kinds, defaults and
    types (as written), in order, and the same return type.
    """
    problems = []
    for name, want in interface_methods(api).items():
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or getattr(owner, "_is_protocol", False):
            problems.append(f"{cls.__name__} does not define {name}{want}")
            continue
        fn = vars(owner)[name]
        if not inspect.isfunction(fn):
            problems.append(f"{cls.__name__}.{name} is not a plain method")
            continue
        sig = inspect.signature(fn)
        got = sig.replace(parameters=list(sig.parameters.values())[1:])
        if _shape(got) != _shape(want):
            problems.append(f"{cls.__name__}.{name}{got} differs from {api.__name__}."
                            f"{name}{want}")
    return problems


def _shape(sig: inspect.Signature) -> list[tuple]:
    def text(annotation: Any) -> str:
        return "".join(str(annotation).split())

    return [(p.name, p.kind, p.default, text(p.annotation)) for p in sig.parameters.values()
            ] + [("return", text(sig.return_annotation))]


__all__ = ["PREVIOUS", "Parties", "implements", "interface_methods", "typed"]
