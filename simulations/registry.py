"""The protocol registry: every protocol the framework runs, by name.

A registry entry is a :class:`ProtocolPlugin`: the protocol's strict
configuration model (the scenario's ``[protocol]`` table, a tagged union
on ``name``), the roles it needs and the party class playing each, its
driver (:class:`core.protocol.Driver`) and its non-private baseline --
six required members (:data:`REQUIRED`) -- beside optional evaluation and
presentation hooks. A protocol's metrics are what its ``measure`` (and its
driver's :class:`~core.protocol.ProtocolResult`) return; nothing declares
them a second time. ``ppknn run``, ``sweep``, ``leakage``,
``reproduce`` and the Python API go through the registry; none of them
names a protocol.

Adding a protocol means one package under ``protocols/`` holding everything
about it: its steps and driver, its party classes (``parties/``), and a
``plugin`` subpackage whose class is decorated with :func:`register` (its
``__init__`` imports what registers on import, such as its attacks). Its evaluation
pieces (attacks, ground truth, audit, deviating parties, estimator, comparison
defaults) sit in that subpackage and reach the generic machinery through the plugin's optional hooks
(:class:`ProtocolPlugin`), so no generic module names a protocol. The registry
finds the built-in ones by looking for ``protocols/<package>/plugin``: nothing
here imports a protocol. Other installed packages register theirs through the
``ppknn.protocols`` entry-point group, each entry naming a plugin class.

Examples
--------
>>> names()  # the built-in ones, and any a package installed beside them registers
[...'dp-knn', 'dp-nb', 'dptt', ...'pca-perturbation', 'ppknn-ring', 'ring-nb'...]
>>> get("ppknn-ring").roles[0].name
'owner'
>>> get("ppknn-ring").title
'PP-kNN over a ring of data owners (Xiong, Chitti & Liu)'
>>> REQUIRED
('name', 'config_model', 'roles', 'driver', 'plan', 'baseline')
>>> get("nope")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: unknown protocol 'nope'; registered: [...'dp-knn', ...]
"""

from __future__ import annotations

import abc
import importlib
import importlib.util
import pkgutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from ppknn.core.errors import ConfigError
from ppknn.core.protocol import Driver, ProtocolResult, Roles, check_metrics
from ppknn.core.runtime import PartySpec
from ppknn.core.transcript import Transcript

PreparedData = Any
"""The run's shared data, :class:`simulations.prepare.PreparedData` (which sits above)."""
Scenario = Any
"""A validated :class:`simulations.scenario.Scenario` (which sits above)."""


class ProtocolConfig(BaseModel):
    """``[protocol]``: the base of every registered protocol's configuration.

    The scenario's table is a tagged union on ``name`` (default
    ``"ppknn-ring"``); each protocol registers its own strict model.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str

BUILTIN = "ppknn.protocols"
"""The package whose protocol packages register the built-in protocols (``<package>.plugin``,
on import)."""
PLUGIN = "plugin"
"""The subpackage of a protocol package that registers it."""

ENTRY_POINT_GROUP = "ppknn.protocols"


@dataclass(frozen=True)
class Role:
    """A role of a protocol: who plays it and how many of them there are."""

    name: str
    party: type
    count: str
    """How many, in words: ``"1"``, ``"[parties].n (>= 3)"``, ``"[parties].analysts"``."""
    description: str = ""
    api: type | None = None
    """The typed interface (a ``typing.Protocol`` of ``protocols/<name>/api.py``) through
    which the driver calls this role's parties; ``party`` implements it."""


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Everything one protocol needs to run, before any party exists.

    Parameters
    ----------
    specs:
        The parties to start, in start order (the hosted layout groups
        consecutive parties on one host).
    roles:
        Role -> party names, as the driver addresses them.
    config:
        The driver's configuration object.
    queries, query_labels:
        The query batch ``(Q, D)`` and its true labels (ground truth, never
        given to a party).
    public:
        Public facts of the run (written to ``public.json``).
    """

    specs: tuple[PartySpec, ...]
    roles: Roles
    config: Any
    queries: np.ndarray
    query_labels: np.ndarray
    public: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Baseline:
    """The non-private reference on the same split."""

    name: str
    predictions: np.ndarray


@dataclass(frozen=True, kw_only=True)
class Measured:
    """What a plugin measures after a run (from outputs, ground truth and the transcript).

    ``metrics`` go into the run's summary and, key by key, into a sweep's
    table; each value must be JSON (a number, string, bool or ``None``, or a
    list or dict of them): anything else is refused here, naming the key.
    """

    metrics: Mapping[str, Any] = field(default_factory=dict)
    per_party: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    per_query: Mapping[str, np.ndarray] = field(default_factory=dict)
    leakage: Any = None
    """The protocol's leakage report (e.g. per-node disclosure), if it scores one."""

    def __post_init__(self) -> None:
        check_metrics(self.metrics, "measured")


class ProtocolPlugin(abc.ABC):
    """A registered protocol (module docstring).

    What a protocol *is* -- the six members of :data:`REQUIRED` -- comes
    first; every other member is optional, with a default.
    """

    name: ClassVar[str]
    config_model: ClassVar[type[ProtocolConfig]]
    roles: ClassVar[tuple[Role, ...]]
    title: ClassVar[str] = ""
    """One line: the protocol and its paper (default: the class docstring's summary)."""
    guarantee: ClassVar[str] = "none"
    """The privacy unit of the protocol's guarantee, in words."""
    adversaries: ClassVar[tuple[str, ...]] = ()
    """The attacks scored by default after a run."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "title" not in cls.__dict__:
            cls.title = _summary(cls.__doc__)

    @staticmethod
    @abc.abstractmethod
    def driver(runtime: Any, parties: Roles, config: Any, queries: np.ndarray
               ) -> ProtocolResult:
        """The protocol's driver (:class:`core.protocol.Driver`)."""

    def check_scenario(self, config: ProtocolConfig, scenario: Scenario, *, source: str) -> None:
        """Refuse shared settings this protocol cannot run with (raise ``ConfigError``).

        The default accepts every scenario.
        """
        return None

    @abc.abstractmethod
    def plan(self, config: ProtocolConfig, data: PreparedData) -> Plan:
        """The parties, the driver's config and the query batch (all from the seed)."""

    @abc.abstractmethod
    def baseline(self, config: ProtocolConfig, data: PreparedData) -> Baseline:
        """The non-private reference predictions on the same split."""

    def measure(self, config: ProtocolConfig, data: PreparedData, plan: Plan,
                result: ProtocolResult, baseline: Baseline,
                transcript: Transcript | None) -> Measured:
        """Protocol-specific measures after the run (default: none)."""
        return Measured()

    def leakage(self, transcript: Transcript, public: Mapping[str, Any]) -> Any:
        """Recompute the default leakage report from a saved transcript (``None``: none)."""
        return None

    def headline(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Extra (label, value) lines for the terminal table, from the protocol's summary."""
        return []

    def plot(self, ax: Any, outcome: Any) -> bool:
        """Draw the protocol's own panel of ``summary.svg``; False if it has none."""
        return False

    # -- optional evaluation hooks: the generic leakage, audit, deviation and comparison
    # machinery asks the plugin; none of it names a protocol ---------------------------

    def ground_truth(self, outcome: Any, data: PreparedData) -> Mapping[str, np.ndarray] | None:
        """Simulation-only ground truth the protocol's attacks score against.

        Called once after a run with the run's outcome (``outcome.plan``,
        ``outcome.result``, ``outcome.baseline``, ``outcome.config``) and its
        prepared data; saved as ``transcript/truth-PROTOCOL.npz``
        (:mod:`simulations.leakage.truth`). ``None`` (the default): the
        protocol has no ground truth and none is saved.
        """
        return None

    def audit_setup(self, prepared: Any, protocol: Any, common: Mapping[str, Any], *,
                    record: int, repeats: int) -> Any:
        """The replay audit of this protocol (a :class:`simulations.leakage.audit.Setup`).

        ``protocol`` is the prepared protocol (``.name``, ``.plan``); ``common``
        holds the :class:`~simulations.leakage.audit.Setup` fields every
        protocol shares. ``None`` (the default): the protocol promises no ε
        the replay audit can check.
        """
        return None

    def worst_case(self, scenario: Scenario, protocol: Any, *, n_test: int,
                   confidence: float, deviation: str) -> Any:
        """The worst-case audit of this protocol: ``(case, observer, target)`` or ``None``.

        ``case`` is a :class:`simulations.leakage.worstcase.Case` built for the
        prepared ``protocol``; ``deviation`` the planted leak in the worst-case
        model's words (``"none"``, ``"noise-scale=0.5"``, ``"no-noise"``).
        ``None``: no worst-case model for this configuration.
        """
        return None

    def worst_case_references(self, epsilon: float, deviation: str) -> list[Any]:
        """The protocol's worst-case cases at ``epsilon`` on hand-built pairs (calibration).

        Used by :func:`simulations.leakage.worstcase.reference_cases` and the
        calibration of the worst-case audit; default none.
        """
        return []

    def audited(self) -> bool:
        """Whether the audit covers this protocol (it overrides an audit hook)."""
        cls = type(self)
        return (cls.audit_setup is not ProtocolPlugin.audit_setup
                or cls.worst_case is not ProtocolPlugin.worst_case)

    def has_ground_truth(self) -> bool:
        """Whether the protocol saves ground truth (it overrides :meth:`ground_truth`)."""
        return type(self).ground_truth is not ProtocolPlugin.ground_truth

    def deviations(self) -> Mapping[str, Any]:
        """Deviation kind -> :class:`parties.deviations.Kind` (a dishonest party class)."""
        return {}

    def compare_defaults(self) -> Mapping[str, Any] | None:
        """The protocol's entry in ``ppknn compare --quick`` (``None``, the default: none).

        Keys: ``privacy_key`` (a key of the protocol's configuration),
        ``quick_levels`` (from most to least private), optional ``settings``
        (other configuration keys) and ``quick_audit`` (audit its cells).
        """
        return None

    def driver_result(self, runtime: Any, plan: Plan) -> ProtocolResult:
        """Run the driver on a plan."""
        driver: Driver = type(self).driver
        return driver(runtime, plan.roles, plan.config, plan.queries)


def _summary(doc: str | None) -> str:
    """A docstring's summary (its first paragraph on one line, without the final period)."""
    first = (doc or "").strip().split("\n\n", 1)[0]
    return " ".join(first.split()).removesuffix(".")


def _required() -> tuple[str, ...]:
    """The class attributes without a default, then the abstract methods (definition order)."""
    attrs = [n for n in ProtocolPlugin.__annotations__ if not hasattr(ProtocolPlugin, n)]
    methods = [n for n in vars(ProtocolPlugin)
               if n in ProtocolPlugin.__abstractmethods__]
    return (*attrs, *methods)


REQUIRED = _required()
"""What every plugin must define: what a protocol *is*. Everything else has a default."""

_REGISTRY: dict[str, ProtocolPlugin] = {}
_loaded = False


def register(plugin: type[ProtocolPlugin]) -> type[ProtocolPlugin]:
    """Register a plugin class (use as a decorator); its ``name`` must be new."""
    name = getattr(plugin, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"plugin {plugin.__name__} needs a non-empty string name")
    missing = [m for m in REQUIRED if not hasattr(plugin, m)
               or m in getattr(plugin, "__abstractmethods__", ())]
    if missing:
        raise ConfigError(f"plugin {name!r} does not define {missing}; every plugin defines "
                          f"{list(REQUIRED)}")
    if name in _REGISTRY and type(_REGISTRY[name]) is not plugin:
        raise ConfigError(f"protocol {name!r} is already registered "
                          f"(by {type(_REGISTRY[name]).__module__})")
    default = plugin.config_model.model_fields.get("name")
    if default is None or default.default != name:
        raise ConfigError(f"plugin {name!r}: its config model's 'name' must default to {name!r}")
    _REGISTRY[name] = plugin()
    return plugin


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    package = importlib.import_module(BUILTIN)
    for info in pkgutil.iter_modules(package.__path__):
        module = f"{BUILTIN}.{info.name}.{PLUGIN}"
        if info.ispkg and importlib.util.find_spec(module):
            importlib.import_module(module)
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        register(ep.load())


def find(name: str) -> ProtocolPlugin | None:
    """The plugin registered as ``name``, or ``None``.

    A built-in protocol's module is imported on its own first (``dp-knn``:
    ``protocols.dp_knn.plugin``): a run of one protocol does not import the others
    (their protocols' imports cost a run seconds); any other name loads
    every plugin.
    """
    if name not in _REGISTRY and not _loaded and name.replace("-", "_").isidentifier():
        module = f"{BUILTIN}.{name.replace('-', '_')}.{PLUGIN}"
        if importlib.util.find_spec(module.rsplit(".", 1)[0]) and importlib.util.find_spec(module):
            importlib.import_module(module)
    if name not in _REGISTRY:
        _load()
    return _REGISTRY.get(name)


def get(name: str) -> ProtocolPlugin:
    """The plugin registered as ``name``; ``ConfigError`` listing the names if none."""
    plugin = find(name)
    if plugin is None:
        raise ConfigError(f"unknown protocol {name!r}; registered: {names()}")
    return plugin


def names() -> list[str]:
    """Registered protocol names, sorted."""
    _load()
    return sorted(_REGISTRY)


def deviation_kinds() -> dict[str, Any]:
    """Every registered plugin's deviation kinds (its ``deviations`` hook), merged by name.

    A kind offered by two plugins must be the same :class:`parties.deviations.Kind`.
    """
    out: dict[str, Any] = {}
    for plugin in plugins():
        for name, kind in plugin.deviations().items():
            if out.get(name, kind) != kind:
                raise ConfigError(f"deviation kind {name!r} is registered twice, differently "
                                  f"(by {plugin.name!r})")
            out[name] = kind
    return out


def plugins(selected: Sequence[str] | None = None) -> list[ProtocolPlugin]:
    """The plugins named (all, sorted by name, when ``None``)."""
    return [get(n) for n in (selected if selected is not None else names())]


__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "PLUGIN", "REQUIRED", "Baseline", "Measured", "Plan",
           "ProtocolConfig", "ProtocolPlugin", "Role", "deviation_kinds", "find",
           "get", "names", "plugins", "register"]
