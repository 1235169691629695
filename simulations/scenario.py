"""The scenario file: a TOML document, validated with precise errors.

Example (``scenarios/quickstart.toml``)::

    [run]
    name = "quickstart"
    seed = 7
    output = "results/quickstart"

    [data]
    dataset = "sklearn:breast_cancer"
    test_fraction = 0.3333

    [parties]
    n = 4
    partition = "iid"

    [protocol]
    k = 5
    p0 = 1.0
    d = 0.5
    rounds = 2

    [runtime]
    kind = "ray"
    channels = true

Every key is listed in the models below; an unknown key, a wrong type or
an out-of-range value raises :class:`~core.errors.ConfigError` naming the
key, the value given and what is allowed.
"""

from __future__ import annotations

import math
import os
import re
import sys
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from ppknn.core.errors import ConfigError
from ppknn.simulations import registry
from ppknn.simulations.network import NetworkSection
from ppknn.simulations.registry import ProtocolConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


MAX_PARTIES = 100_000
"""Most data owners a scenario may ask for (checked before anything is allocated)."""
MAX_ANALYSTS = 100_000
"""Most analysts (queriers) a scenario may ask for."""
MAX_AUDIT_TRIALS = 1_000_000
"""Most audit trials per neighbouring dataset."""
MAX_TIMEOUT_S = 1_000_000.0
"""Longest timeout or fault delay, in seconds (about 11.6 days; longer ones overflow the
runtimes' timers)."""
MAX_SEED = 2**63 - 1
"""Largest root seed (a non-negative 64-bit integer)."""
MAX_ALPHA = 1e6
"""Largest Dirichlet concentration (beyond it the partition is iid in all but name)."""
MAX_SIZE_SKEW = 100.0
"""Largest size-skew exponent (beyond it every party but one holds the minimum)."""
MAX_NAME_CHARS = 200
"""Longest run name, in bytes (UTF-8): it names the results folder, with room for the hidden
``.NAME.partial-...`` staging folder within a file system's 255-byte limit."""
MAX_NAME_BYTES = 255
"""Longest folder name in an output path (the common file-system limit)."""

MIN_EPSILON = 1e-6
"""Smallest ε a protocol key takes: below it the noise scale (sensitivity / ε) exceeds a
million times the sensitivity (no release carries information) and, near the smallest
floats, overflows to infinity."""


def epsilon_floor(cls: Any, value: float | None) -> float | None:
    """A protocol config's validator: refuse ε below :data:`MIN_EPSILON` (``None`` passes).

    Use as ``_floor = field_validator("epsilon")(epsilon_floor)`` in a config class.
    """
    if value is not None and value < MIN_EPSILON:
        raise ValueError(f"below the smallest ε, {MIN_EPSILON:g} (its noise would drown or "
                         f"overflow every release); allowed: a finite ε >= {MIN_EPSILON:g}")
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunSection(_Section):
    """``[run]``: naming, seeding and output."""

    name: str = "ppknn"
    seed: int = Field(0, ge=0, le=MAX_SEED)
    mode: Literal["reproducible", "secure"] = "reproducible"
    output: str = ""
    """The results folder; default ``results/NAME``."""

    @field_validator("name")
    @classmethod
    def _name_length(cls, v: str) -> str:
        size = len(os.fsencode(v)) if "\0" not in v else len(v)
        if size > MAX_NAME_CHARS:
            raise ValueError(f"{v[:40]!r}... is {size} bytes long; allowed: at most "
                             f"{MAX_NAME_CHARS} bytes (it names the results folder)")
        return v

    @field_validator("output")
    @classmethod
    def _output_path(cls, v: str) -> str:
        if "\0" in v:
            raise ValueError("holds a NUL byte; allowed: a path without one")
        long = [part for part in Path(v).parts if len(os.fsencode(part)) > MAX_NAME_BYTES]
        if long:
            raise ValueError(f"the path component {long[0][:40]!r}... has "
                             f"{len(os.fsencode(long[0]))} bytes; allowed: at most "
                             f"{MAX_NAME_BYTES} per folder name")
        return v

    @model_validator(mode="after")
    def _default_output(self) -> RunSection:
        bad = (not self.name.strip() or self.name in (".", "..") or "\0" in self.name
               or any(sep in self.name for sep in ("/", "\\", os.sep)))
        if bad:  # the name is the default results folder's: results/NAME
            raise ValueError(f"name = {self.name!r}: allowed: a non-empty name without a path "
                             "separator (/ or \\), '.', '..' or a NUL byte (it names the "
                             "results folder, results/NAME)")
        if not self.output:  # frozen: set once, here (not counted as set by the user)
            object.__setattr__(self, "output", f"results/{self.name}")
        return self


class BoundsSection(_Section):
    """Declared public domain bounds, one value per feature."""

    lower: list[float]
    upper: list[float]

    @model_validator(mode="after")
    def _check(self) -> BoundsSection:
        if len(self.lower) != len(self.upper):
            raise ValueError(f"lower has {len(self.lower)} values, upper {len(self.upper)}")
        for lo, hi in zip(self.lower, self.upper):
            if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
                raise ValueError(f"each bound pair needs finite lower <= upper, got [{lo}, {hi}]")
        return self


class DataSection(_Section):
    """``[data]``: which dataset, how it is split, scaled and bounded."""

    dataset: str = "sklearn:breast_cancer"
    test_fraction: float = Field(1 / 3, gt=0, lt=1)
    max_queries: int | None = Field(None, ge=1)
    scale: Literal["none", "minmax"] = "none"
    bounds: Literal["data"] | BoundsSection = "data"
    data_dir: str | None = None
    missing: Literal["error", "drop", "impute"] = "error"
    """Missing values (``?``, empty, ``NA``) in a CSV file's numeric columns or label:
    ``"error"`` (default), ``"drop"`` the rows holding one, or ``"impute"`` a numeric
    feature's column median over the whole file (a release outside the privacy accounting:
    see :mod:`ppknn.core.data`). Recorded in the summary (rows dropped, values imputed)."""
    folds: int | None = Field(None, ge=2)
    """k-fold cross-validation: the queries are fold ``fold`` of ``folds`` (``test_fraction``
    is then unused); ``None``: one random split by ``test_fraction``."""
    fold: int = Field(0, ge=0)
    """Which fold is the query batch (0 <= fold < folds)."""
    shuffle: bool = True
    """Shuffle the rows (seeded) before cutting folds; ``false``: contiguous folds in file
    order, as papers that use unshuffled folds do."""
    split_seed: int | None = Field(None, ge=0)
    """Seed of the split and the partition (``None``: ``[run].seed``). Set it to keep one
    split while repetitions (``[run].seed``) redraw the protocol's randomness."""
    stratify: bool = Field(False, strict=True)
    """k-fold only: stratified folds (scikit-learn's ``StratifiedKFold``, seeded from the
    split seed when ``shuffle``), each fold keeping the class proportions."""
    subsample: int | None = Field(None, ge=2, strict=True)
    """Keep this many rows of the dataset (a seeded draw from the split seed, file order
    kept) before splitting; ``None``: every row."""

    @model_validator(mode="after")
    def _fold_in_range(self) -> DataSection:
        if self.folds is None and self.fold != 0:
            raise ValueError(f"fold = {self.fold} needs folds (k-fold cross-validation)")
        if self.stratify and self.folds is None:
            raise ValueError("stratify = true needs folds (k-fold cross-validation)")
        if self.folds is not None and self.fold >= self.folds:
            raise ValueError(f"fold = {self.fold} must be below folds = {self.folds} "
                             f"(allowed: 0..{self.folds - 1})")
        return self


class PartiesSection(_Section):
    """``[parties]``: how many data owners and how the training rows are split."""

    n: int = Field(4, ge=1, le=MAX_PARTIES)
    """Data owners; protocols with one central owner give it the union of their rows."""
    analysts: int = Field(1, ge=1, le=MAX_ANALYSTS)
    """Queriers (analysts, clients, miners) of the protocols that have them."""
    partition: Literal["iid", "dirichlet", "size"] = "iid"
    alpha: float = Field(0.5, gt=0, le=MAX_ALPHA, allow_inf_nan=False)
    size_skew: float = Field(1.0, ge=0, le=MAX_SIZE_SKEW, allow_inf_nan=False)


class RuntimeSection(_Section):
    """``[runtime]``: where parties run."""

    kind: Literal["ray", "inprocess"] = "ray"
    address: str | None = None
    num_cpus: int | None = Field(None, ge=1)
    layout: Literal["actor-per-party", "hosted"] = "actor-per-party"
    hosts: int | None = Field(None, ge=1)
    placement: dict[str, dict[str, float]] = Field(default_factory=dict)
    channels: bool = True
    party_timeout_s: float = Field(60.0, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    record_batch: int = Field(256, ge=1)
    flush_every: int = Field(4096, ge=1)
    record_batch_bytes: int = Field(8 << 20, ge=1)
    flush_bytes: int = Field(64 << 20, ge=1)


class FaultsSection(_Section):
    """``[faults]``: inject one fault into one party's calls (see ``simulations.faults``)."""

    party: str = Field(min_length=1)
    method: str = "*"
    occurrence: int = Field(1, ge=1)
    kind: Literal["kill", "raise", "hang", "slow", "memory", "drop", "duplicate", "reorder",
                  "tamper"] = "kill"
    delay_s: float | None = Field(None, ge=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    mark: str | None = None
    """A file the host writes the time to when the fault fires (``ppknn chaos`` timings)."""


class AdversarySection(_Section):
    """``[[adversary]]``: an attack scored after the run, besides each protocol's defaults.

    ``attack`` is one of the protocol's attacks (``ppknn leakage`` lists them in
    ``leakage.csv``; a wrong name is refused with the allowed ones); ``observers``
    the party or coalition running it (default: the attack's own observers);
    ``protocol`` is needed when the scenario runs several; ``params`` the attack's
    parameters.
    """

    attack: str
    protocol: str | None = None
    observers: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)


class AuditSection(_Section):
    """``[audit]``: rerun the release on neighbouring datasets (``ppknn audit``).

    ``trials`` runs per dataset (0: no audit); ``record`` the training row removed
    to make the neighbour; ``confidence`` of the empirical ε lower bound.
    """

    trials: int = Field(0, ge=0, le=MAX_AUDIT_TRIALS)
    record: int = Field(0, ge=0)
    confidence: float = Field(0.95, gt=0, lt=1)


class DeviationSection(_Section):
    """``[[deviation]]``: a party that deviates from the protocol (an active adversary).

    ``kind`` is one of the deviation kinds the plugins offer for the party's role
    (:func:`simulations.registry.deviation_kinds`);
    ``party`` the deviating party's name; ``params`` the deviation's parameters.
    """

    party: str
    kind: str
    params: dict[str, Any] = Field(default_factory=dict)


class Scenario(_Section):
    """A whole scenario."""

    run: RunSection = RunSection()
    data: DataSection = DataSection()
    parties: PartiesSection = PartiesSection()
    protocol: tuple[SerializeAsAny[ProtocolConfig], ...] = Field(
        default_factory=lambda: _parse_protocols({}, "<default>"))
    """One or more protocols over the same parties and data (``[protocol]`` or ``[[protocol]]``)."""
    runtime: RuntimeSection = RuntimeSection()
    faults: FaultsSection | None = None
    """An injected fault (fault-injection runs only; absent in honest runs)."""
    adversary: tuple[AdversarySection, ...] = ()
    """Scripted adversaries (``[[adversary]]``), scored besides each protocol's defaults."""
    audit: AuditSection = AuditSection()
    deviation: tuple[DeviationSection, ...] = ()
    """Deviating parties (``[[deviation]]``); none: every party is honest-but-curious."""
    network: NetworkSection | None = None
    """Report the run's predicted time on these networks (:mod:`ppknn.simulations.network`)."""

    @property
    def protocols(self) -> tuple[ProtocolConfig, ...]:
        """The scenario's protocols, in run order."""
        return self.protocol

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if len(data.get("protocol", ())) == 1:  # one protocol: a plain [protocol] table
            data["protocol"] = data["protocol"][0]
        elif "protocol" in data:  # several: an array of tables, as [[protocol]] reads
            data["protocol"] = list(data["protocol"])
        return data

    def with_overrides(self, **sections: dict[str, Any]) -> Scenario:
        """A copy with some keys replaced, as if written in the scenario (validated again).

        Only the keys the scenario set are carried over, not the defaults
        filled in: a changed ``protocol.name`` takes the new protocol's defaults.
        """
        full = self.model_dump()
        data = self.model_dump(exclude_unset=True)
        for section, values in sections.items():
            if section not in full:
                raise ConfigError(f"unknown scenario section {section!r}; allowed: {list(full)}")
            current = data.get(section) or {}
            if not isinstance(current, dict):
                raise ConfigError(f"scenario section {section!r} holds several protocols; "
                                  "override one with set_key('protocol[i].key', value)")
            data[section] = {**current, **values}
        return parse_scenario(data, source="overrides")

    def set_key(self, key: str, value: Any) -> Scenario:
        """A copy with one dotted key set, e.g. ``"protocol.epsilon"`` or ``"protocol[1].k"``.

        Validated again; an unknown section or key is a :class:`ConfigError`.
        """
        return self.set_keys([(key, value)])

    def set_keys(self, items: Iterable[tuple[str, Any]]) -> Scenario:
        """A copy with several dotted keys set, validated once, together.

        As if the keys were written in the scenario: keys that depend on each
        other (``protocol.task`` and ``protocol.algorithm``) can change
        together, and a changed ``protocol.name`` takes the new protocol's
        defaults (only the keys the scenario set are carried over).
        """
        items = list(items)
        data = self.model_dump(exclude_unset=True)
        for key, value in items:
            data = set_dotted(data, key, value)
        where = ", ".join(f"{key} = {value!r}" for key, value in items)
        return parse_scenario(data, source=f"with {where}")


DEFAULT_PROTOCOL = "ppknn-ring"
"""The protocol of a scenario whose ``[protocol]`` names none."""


_UNION_TAGS = {"int", "float", "str", "bool", "none", "list", "dict", "tuple", "set",
               "literal", "function-after", "function-before", "function-wrap",
               "function-plain", "tagged-union", "union", "is-instance"}


_KEBAB = re.compile(r"[a-z]+(?:-[a-z]+)+")  # constrained-int, ... (keys are snake_case)


def _clean_loc(loc: tuple) -> tuple:
    """A pydantic error location without its union-member tags: the keys a user wrote.

    Tags such as ``literal['data']``, ``function-after[_check(), BoundsSection]`` or
    ``int`` name the alternative that failed, not a key.
    """
    return tuple(p for p in loc if not (isinstance(p, str) and (
        "[" in p or "(" in p or p in _UNION_TAGS or _KEBAB.fullmatch(p))))


def _format_error(err: ValidationError, source: str, *, model: type[BaseModel],
                  prefix: str = "", what: str = "scenario") -> str:
    """One line per key a user wrote, naming the value and what is allowed.

    The alternatives of a union (``bounds = "data"`` or a table) that all failed
    for one key are joined on its line.
    """
    lines = [f"invalid {what} {source}:"]
    merged: dict[tuple[str, str], list[str]] = {}
    errors = [(e, _clean_loc(tuple(e["loc"]))) for e in err.errors()]
    for e, loc in errors:
        if any(len(other) > len(loc) and other[:len(loc)] == loc
               and isinstance(other[len(loc)], str) for _, other in errors):
            continue  # an alternative that failed deeper down, in a table, says more
        where = ".".join(str(p) for p in (*((prefix,) if prefix else ()), *loc))
        where = where or "(top level)"
        if e["type"] == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            allowed = sorted(parent.model_fields) if parent else []
            lines.append(f"  unknown key {where!r}; allowed keys here: {allowed}")
            continue
        shown = repr(e.get("input"))
        if len(shown) > 200:
            shown = shown[:197] + "..."
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "literal_error" and isinstance(e.get("input"), dict) and sum(
                1 for _, other in errors if other == loc) > 1:
            continue  # a table was written: the table's own error says what is wrong
        merged.setdefault((where, shown), [])
        if msg not in merged[(where, shown)]:
            merged[(where, shown)].append(msg)
    for (where, shown), msgs in merged.items():
        lines.append(f"  {where} = {shown}: {'; or: '.join(msgs)}")
    return "\n".join(lines)


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    for part in loc:
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        found = _model_in(field.annotation)
        if found is None:
            return None
        model = found
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds (the table a key may hold), or ``None``.

    Itself, or the one model of ``X | None`` or ``Literal[...] | X``.
    """
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    models = [m for m in map(_model_in, typing.get_args(annotation)) if m is not None]
    return models[0] if len(set(models)) == 1 else None


def _admits_bool(annotation: Any) -> bool:
    """Whether a field typed ``annotation`` may hold ``true``/``false``."""
    if annotation is bool or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _admits_bool(typing.get_args(annotation)[0])
    if origin is Literal:
        return any(isinstance(a, bool) for a in typing.get_args(annotation))
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return any(_admits_bool(a) for a in typing.get_args(annotation))
    return False


def _described(annotation: Any, metadata: list[Any]) -> str:
    """What a numeric field allows, in words: ``an integer >= 0``."""
    args = [annotation, *typing.get_args(annotation)]
    kind = "a valid integer" if int in args and float not in args else "a valid number"
    marks = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    bounds = [f"{sign} {getattr(m, attr)}" for m in metadata for attr, sign in marks.items()
              if getattr(m, attr, None) is not None]
    return f"{kind} {' and '.join(bounds)}".strip()


def _refuse_booleans(data: Any, model: type[BaseModel], prefix: str, out: list[str]) -> None:
    """Collect ``key = true`` lines for keys that take numbers (or text), never booleans.

    pydantic turns ``true`` into ``1`` for an integer or number field; a scenario
    saying ``seed = true`` has a mistake in it, so it is refused, naming the key.
    """
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        field = model.model_fields.get(str(key))
        if field is None:
            continue
        where = f"{prefix}.{key}" if prefix else str(key)
        ann = field.annotation
        sub = _model_in(ann)
        if isinstance(value, dict) and sub is not None:
            _refuse_booleans(value, sub, where, out)
            continue
        items = [(where, value)] if not isinstance(value, list | tuple) else [
            (f"{where}.{i}", v) for i, v in enumerate(value)]
        element = ann
        if isinstance(value, list | tuple):
            inner = [a for a in typing.get_args(ann) if a is not Ellipsis]
            element = inner[0] if len(inner) == 1 else ann
        for at, v in items:
            if isinstance(v, bool) and not _admits_bool(element):
                out.append(f"  {at} = {v!r}: a boolean where {_described(element, field.metadata)}"
                           " is expected (true/false are not numbers here)")


def _check_booleans(data: Any, model: type[BaseModel], source: str, prefix: str = "") -> None:
    lines: list[str] = []
    _refuse_booleans(data, model, prefix, lines)
    if lines:
        raise ConfigError("\n".join([f"invalid scenario {source}:", *lines]))


def _parse_protocols(raw: Any, source: str) -> tuple[ProtocolConfig, ...]:
    """Validate ``[protocol]`` (one table) or ``[[protocol]]`` (several) by their names."""
    tables = [raw] if isinstance(raw, dict) else list(raw) if isinstance(raw, tuple) else raw
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"invalid scenario {source}:\n  protocol = {raw!r}: must be a table "
                          "[protocol] or an array of tables [[protocol]]")
    if not tables:
        raise ConfigError(f"invalid scenario {source}:\n  protocol = []: name at least one")
    out = []
    for i, table in enumerate(tables):
        where = "protocol" if isinstance(raw, dict) else f"protocol[{i}]"
        name = table.get("name", DEFAULT_PROTOCOL)
        plugin = registry.find(name)
        if plugin is None:
            raise ConfigError(f"invalid scenario {source}:\n  {where}.name = {name!r}: unknown "
                              f"protocol; registered: {registry.names()}")
        _check_booleans(table, plugin.config_model, source, where)
        try:
            out.append(plugin.config_model.model_validate({**table, "name": name}))
        except ValidationError as err:
            raise ConfigError(_format_error(err, source, model=plugin.config_model,
                                            prefix=where)) from None
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"invalid scenario {source}:\n  protocol names {names}: each protocol "
                          "may appear once in a scenario (use a sweep for several settings)")
    return tuple(out)


def parse_scenario(data: dict[str, Any], *, source: str = "<dict>") -> Scenario:
    """Validate a scenario given as a mapping.

    ``[protocol]`` is dispatched on its ``name`` to the registered protocol's
    model; then every protocol checks the shared sections it depends on
    (e.g. the ring needs at least three data owners), so a scenario that
    cannot run is refused here, before any party starts.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"scenario {source} must be a table, got {type(data).__name__}")
    rest = {k: v for k, v in data.items() if k != "protocol"}
    _check_booleans(rest, Scenario, source)
    try:
        base = Scenario.model_validate(rest)
    except ValidationError as err:
        raise ConfigError(_format_error(err, source, model=Scenario)) from None
    protocols = _parse_protocols(data.get("protocol", {}), source)
    scenario = base.model_copy(update={"protocol": protocols})
    for config in protocols:
        registry.get(config.name).check_scenario(config, scenario, source=source)
    if scenario.adversary or scenario.deviation:
        from ppknn.simulations.leakage.checks import check_scenario

        check_scenario(scenario, source=source)
    return scenario


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario TOML file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"scenario file {str(p)!r} does not exist")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"scenario file {str(p)!r} is not valid TOML: {exc}") from None
    check_file_kind(data, p, "scenario file")
    return parse_scenario(data, source=repr(str(p)))


#: The command that runs each kind of input file.
COMMANDS = {"scenario file": "ppknn run", "sweep file": "ppknn sweep",
            "comparison spec": "ppknn compare"}


def file_kind(data: dict[str, Any]) -> str | None:
    """Which kind of input file a parsed TOML file is, by its top-level tables.

    Parameters
    ----------
    data : dict
        The file's top-level tables.

    Returns
    -------
    str or None
        ``"comparison spec"`` (a ``[compare]`` table), ``"sweep file"`` (``[sweep]`` or
        ``[grid]``), ``"scenario file"`` (none of those, nor ``[base]``) or ``None`` (a
        ``[base]`` alone: a sweep or a comparison missing its own table).
    """
    if "compare" in data:
        return "comparison spec"
    if "sweep" in data or "grid" in data:
        return "sweep file"
    return None if "base" in data else "scenario file"


def check_file_kind(data: dict[str, Any], path: Path, expected: str) -> None:
    """Refuse a file of another kind than ``expected``, naming the command that runs it.

    Raises
    ------
    ConfigError
        E.g. ``scenarios/compare.toml is a comparison spec, not a scenario file: run it
        with `ppknn compare scenarios/compare.toml```.
    """
    kind = file_kind(data)
    if kind is not None and kind != expected:
        raise ConfigError(f"{path} is {'an' if kind[0] in 'aeiou' else 'a'} {kind}, not a "
                          f"{expected}: run it with `{COMMANDS[kind]} {path}`")


def parse_value(text: str) -> Any:
    """A ``--set`` value: a TOML literal (``0.5``, ``true``, ``[1, 2]``, ``"x"``), else the text.

    Examples
    --------
    >>> [parse_value(v) for v in ("0.5", "3", "true", "[1, 2]", "GS-N20", "1e6")]
    [0.5, 3, True, [1, 2], 'GS-N20', 1000000.0]
    """
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def set_dotted(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``data`` with ``section.key`` (or ``protocol[i].key``) set; a copy.

    >>> set_dotted({"protocol": {"k": 5}}, "protocol.k", 9)
    {'protocol': {'k': 9}}
    """
    import copy
    import re

    m = re.fullmatch(r"([a-z_]+)(?:\[(\d+)\])?\.([A-Za-z0-9_.\-]+)", key)
    if not m:
        raise ConfigError(f"setting {key!r}: write section.key, e.g. 'protocol.epsilon', "
                          "'data.dataset' or 'protocol[1].k'")
    section, index, name = m.group(1), m.group(2), m.group(3)
    out = copy.deepcopy(data)
    if out.get(section) is None:  # an optional section not given yet (e.g. [faults])
        out[section] = {}
    table = out[section]
    if isinstance(table, tuple):
        table = out[section] = list(table)
    if isinstance(table, list):
        if index is None or int(index) >= len(table):
            raise ConfigError(f"setting {key!r}: [{section}] holds {len(table)} tables; "
                              f"name one as {section}[i].{name} with i < {len(table)}")
        table = table[int(index)]
    elif index not in (None, "0"):
        raise ConfigError(f"setting {key!r}: [{section}] is a single table; use {section}.{name}")
    *parents, leaf = name.split(".")
    for p in parents:
        table = table.setdefault(p, {})
        if not isinstance(table, dict):
            raise ConfigError(f"setting {key!r}: {p!r} is not a table")
    table[leaf] = value
    return out


__all__ = ["DEFAULT_PROTOCOL", "MIN_EPSILON", "AdversarySection", "AuditSection",
           "DeviationSection", "ProtocolConfig", "Scenario", "epsilon_floor", "load_scenario",
           "parse_scenario", "parse_value", "set_dotted"]
