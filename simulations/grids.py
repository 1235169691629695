"""Scenario grids: the unit a reproduction (or a comparison) is declared in.

A :class:`Grid` is a base scenario, axes of dotted scenario keys and seeds. Every point
of the product of the axes, for every seed, is one scenario run through the protocol
registry exactly as ``ppknn run`` would run it (in-process runtime, in-memory transcript)
and gives one row: the point, the common sweep columns and the protocol's registered
metrics (:func:`ppknn.simulations.sweep.table_row`). :func:`run_grids` fans the runs of
several grids out together (Ray tasks or one by one; the rows are the same either way,
timings excepted) and returns each grid's rows in grid order.

Axes may be *zipped*: a key that is a tuple of dotted keys takes tuples of values, so
parameters that go together (a dataset and its radius) vary together::

    >>> g = Grid("demo", base={"protocol": {"name": "dp-knn"}},
    ...          axes={("data.dataset", "protocol.radius"): [("iris", 0.5), ("wine", 60.0)],
    ...                "protocol.epsilon": [0.5, 1.0]},
    ...          seeds=(0, 1))
    >>> len(g.points())
    8
    >>> g.points()[0]
    {'data.dataset': 'iris', 'protocol.radius': 0.5, 'protocol.epsilon': 0.5, 'seed': 0}
    >>> g.scenarios()[3][1].protocols[0].epsilon
    1.0

The seed of a point is ``[run].seed`` (the protocol's randomness); a grid that keeps
one data split while repetitions redraw the noise sets ``data.split_seed`` in its base
or as an axis, and k-fold cross-validation is the axis ``data.fold`` with
``data.folds`` in the base.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppknn.core.errors import ConfigError
from ppknn.core.runtime.pool import fan_out
from ppknn.simulations.scenario import Scenario, parse_scenario, set_dotted

AxisKey = str | tuple[str, ...]


@dataclass(frozen=True)
class Grid:
    """A named grid of scenario runs (module docstring)."""

    name: str
    base: Mapping[str, Any]
    """Scenario tables (``{"data": {...}, "protocol": {...}, ...}``), as a sweep's ``[base]``."""
    axes: Mapping[AxisKey, Sequence[Any]] = field(default_factory=dict)
    """Dotted scenario keys (or tuples of them, zipped) and their values."""
    seeds: Sequence[int] = (0,)
    """``[run].seed`` of every point: one run per point and seed."""
    keep: Callable[[dict[str, Any]], bool] | None = None
    """Optional filter: a point (without its seed) is run only if ``keep(point)``."""

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ConfigError(f"grid {self.name!r}: seeds is empty; give at least one seed")
        for key, values in self.axes.items():
            names = key if isinstance(key, tuple) else (key,)
            for k in names:
                if "." not in k:
                    raise ConfigError(f"grid {self.name!r}: axis {k!r} must be 'section.key', "
                                      "e.g. 'protocol.epsilon'")
            if not values:
                raise ConfigError(f"grid {self.name!r}: axis {key!r} has no values")
            if isinstance(key, tuple):
                for v in values:
                    if not isinstance(v, (tuple, list)) or len(v) != len(key):
                        raise ConfigError(f"grid {self.name!r}: zipped axis {key!r} needs "
                                          f"tuples of {len(key)} values, got {v!r}")

    def points(self) -> list[dict[str, Any]]:
        """Every point and seed, in grid order (axes in declaration order, seeds innermost)."""
        keys = list(self.axes)
        out: list[dict[str, Any]] = []
        for values in itertools.product(*(self.axes[k] for k in keys)):
            point: dict[str, Any] = {}
            for key, value in zip(keys, values):
                if isinstance(key, tuple):
                    point.update(zip(key, value))
                else:
                    point[key] = value
            if self.keep is not None and not self.keep(point):
                continue
            out += [{**point, "seed": seed} for seed in self.seeds]
        return out

    def scenarios(self) -> list[tuple[dict[str, Any], Scenario]]:
        """Every (point, validated scenario), in grid order; run names ``<grid>-NNNN``."""
        out: list[tuple[dict[str, Any], Scenario]] = []
        for i, point in enumerate(self.points()):
            data: dict[str, Any] = copy.deepcopy(dict(self.base))
            for key, value in point.items():
                if key != "seed":
                    data = set_dotted(data, key, value)
            run = data.setdefault("run", {})
            run["seed"] = point["seed"]
            run["name"] = f"{self.name}-{i:04d}"
            data.setdefault("runtime", {})["kind"] = "inprocess"
            out.append((point, parse_scenario(data, source=f"grid {self.name!r} point {point}")))
        return out


def run_grids(grids: Sequence[Grid], *, parallel: str = "sequential",
              address: str | None = None, progress: Callable[..., Any] | None = None,
              chunk_size: int | None = None, store: Path | None = None,
              ) -> dict[str, list[dict[str, Any]]]:
    """Run every point of every grid; return ``{grid name: rows}`` in grid order.

    ``store``: a JSON-lines file of finished runs. Each row is appended as its run
    finishes, and a run whose scenario already has a row there is not run again: a long
    run that stops part way (a party failure, a killed process) keeps what it finished,
    and the same call picks up where it stopped. A row is reused only for the identical
    scenario (grid, point and every scenario setting, seed included); delete the file to
    run everything again (after changing the code, for instance).

    ``parallel``: ``"ray"`` fans the runs out as Ray tasks (every CPU busy), or
    ``"sequential"``. ``chunk_size``: runs per Ray task (``None``: a few tasks per CPU;
    one grid per task keeps a grid's runs in one process). Each row is the point (its
    dotted keys and ``seed``), then the common columns and the protocol's metrics of
    :func:`~ppknn.simulations.sweep.table_row` and ``privacy_warnings``.
    """
    from ppknn.simulations.sweep import run_one

    if parallel not in ("ray", "sequential"):
        raise ConfigError(f"parallel = {parallel!r}: allowed 'ray' or 'sequential'")
    names = [g.name for g in grids]
    if len(set(names)) != len(names):
        raise ConfigError(f"grid names must be unique, got {names}")
    jobs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    owners: list[str] = []
    scenarios: list[Scenario] = []
    for g in grids:
        for point, scenario in g.scenarios():
            jobs.append((point, scenario.model_dump()))
            owners.append(g.name)
            scenarios.append(scenario)
    run = dict(use_ray=parallel == "ray", address=address, progress=progress,
               chunk_size=chunk_size)
    if store is None:
        rows = fan_out(run_one, jobs, **run)
    else:
        keys = [_run_key(owner, sc) for owner, sc in zip(owners, scenarios)]
        done, torn = _read_store(store)
        todo = [i for i, key in enumerate(keys) if key not in done]
        store.parent.mkdir(parents=True, exist_ok=True)
        with store.open("a", encoding="utf-8") as handle:
            if torn:  # a killed run's half-written last line: start on a line of our own
                handle.write("\n")

            def keep(j: int, row: dict[str, Any]) -> None:
                key = keys[todo[j]]
                text = json.dumps({"key": key, "row": row}, default=_jsonable)
                handle.write(text + "\n")
                handle.flush()
                done[key] = json.loads(text)["row"]  # as a re-run will read it back

            fan_out(run_one, [jobs[i] for i in todo], on_result=keep, **run)
        rows = [done[key] for key in keys]
    out: dict[str, list[dict[str, Any]]] = {g.name: [] for g in grids}
    for owner, row in zip(owners, rows):
        out[owner].append(row)
    return out


def _run_key(grid: str, scenario: Scenario) -> str:
    """The identity of one run in a store: its grid and its whole scenario."""
    text = json.dumps(scenario.model_dump(mode="json"), sort_keys=True)
    return f"{grid}:{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"a grid row value of type {type(value).__name__} cannot be stored")


def _read_store(store: Path) -> tuple[dict[str, dict[str, Any]], bool]:
    """Rows already in ``store`` by run key, and whether its last line is torn.

    A torn line (a killed run's half-written last line) is skipped: its run runs again.
    """
    if store.exists() and not store.is_file():
        raise ConfigError(f"grid row store {store} is not a file")
    text = store.read_text(encoding="utf-8") if store.exists() else ""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[record["key"]] = record["row"]
    return out, bool(text) and not text.endswith("\n")


def write_grid_rows(rows: Mapping[str, list[dict[str, Any]]], folder: Path) -> list[Path]:
    """One ``grid-<name>.csv`` per grid in ``folder`` (the long table of its runs)."""
    from ppknn.simulations.reporting import write_rows

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, table in rows.items():
        path = folder / f"grid-{name}.csv"
        write_rows(path, table)
        paths.append(path)
    return paths


__all__ = ["Grid", "run_grids", "write_grid_rows"]
