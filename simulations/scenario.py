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
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunSection(_Section):
    """``[run]``: naming, seeding and output."""

    name: str = "ppknn"
    seed: int = Field(0, ge=0)
    mode: Literal["reproducible", "secure"] = "reproducible"
    output: str = "results/run"


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


class PartiesSection(_Section):
    """``[parties]``: how many data owners and how the training rows are split."""

    n: int = Field(4, ge=3)
    partition: Literal["iid", "dirichlet", "size"] = "iid"
    alpha: float = Field(0.5, gt=0)
    size_skew: float = Field(1.0, ge=0)


class ProtocolSection(_Section):
    """``[protocol]``: PP-kNN parameters (Xiong et al.)."""

    k: int = Field(5, ge=1)
    p0: float = Field(1.0, ge=0, le=1)
    d: float = Field(0.5, gt=0, le=1)
    rounds: int = Field(2, ge=1)
    delta: float = Field(1e-3, ge=0)
    weighting: Literal["uniform", "distance"] = "uniform"
    secure_sum: Literal["ring", "shared"] = "ring"

    @field_validator("delta")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("must be finite")
        return v


class RuntimeSection(_Section):
    """``[runtime]``: where parties run."""

    kind: Literal["ray", "inprocess", "local"] = "ray"
    address: str | None = None
    num_cpus: int | None = Field(None, ge=1)
    layout: Literal["actor-per-party", "hosted"] = "actor-per-party"
    hosts: int | None = Field(None, ge=1)
    placement: dict[str, dict[str, float]] = Field(default_factory=dict)
    channels: bool = True
    party_timeout_s: float = Field(60.0, gt=0)
    record_batch: int = Field(256, ge=1)
    flush_every: int = Field(4096, ge=1)
    record_batch_bytes: int = Field(8 << 20, ge=1)
    flush_bytes: int = Field(64 << 20, ge=1)


class Scenario(_Section):
    """A whole scenario."""

    run: RunSection = RunSection()
    data: DataSection = DataSection()
    parties: PartiesSection = PartiesSection()
    protocol: ProtocolSection = ProtocolSection()
    runtime: RuntimeSection = RuntimeSection()

    def with_overrides(self, **sections: dict[str, Any]) -> Scenario:
        """A copy with some keys replaced (validated again)."""
        data = self.model_dump()
        for section, values in sections.items():
            if section not in data:
                raise ConfigError(f"unknown scenario section {section!r}; allowed: {list(data)}")
            data[section].update(values)
        return parse_scenario(data, source="overrides")


def _format_error(err: ValidationError, source: str) -> str:
    lines = [f"invalid scenario {source}:"]
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            parent = _model_at(e["loc"][:-1])
            allowed = sorted(parent.model_fields) if parent else []
            lines.append(f"  unknown key {where!r}; allowed keys here: {allowed}")
        else:
            lines.append(f"  {where} = {e.get('input')!r}: {e['msg']}")
    return "\n".join(lines)


def _model_at(loc: tuple) -> type[BaseModel] | None:
    model: type[BaseModel] = Scenario
    for part in loc:
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        else:
            return None
    return model


def parse_scenario(data: dict[str, Any], *, source: str = "<dict>") -> Scenario:
    """Validate a scenario given as a mapping."""
    if not isinstance(data, dict):
        raise ConfigError(f"scenario {source} must be a table, got {type(data).__name__}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_error(err, source)) from None


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario TOML file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"scenario file {str(p)!r} does not exist")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"scenario file {str(p)!r} is not valid TOML: {exc}") from None
    return parse_scenario(data, source=repr(str(p)))


__all__ = ["Scenario", "load_scenario", "parse_scenario"]
