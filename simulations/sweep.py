"""Scenario sweeps: a grid of parameters x seeds, fanned out over a Ray cluster.

A sweep file holds a base scenario, a grid and the seeds::

    [sweep]
    name = "k-by-n"
    output = "results/sweeps/k-by-n"
    seeds = [0, 1, 2]
    parallel = "ray"          # or "sequential"

    [base.data]               # any scenario keys
    dataset = "glass"

    [grid]
    "protocol.k" = [1, 5, 9]
    "parties.n" = [4, 8]

Every grid point and seed is one run. With ``parallel = "ray"`` the runs go
out as Ray tasks (one CPU each, ``chunk_size`` runs per task, by default
about four tasks per CPU) that run the scenario with the in-process
runtime, so all cores of the cluster are busy; results come back in grid
order and the combined table is identical to a sequential run's (timings
excepted).
Output: ``sweep.csv`` and ``sweep.parquet`` (one row per run) and
``sweep.png`` (accuracy and disclosure per grid point: mean and 95% interval over
seeds, proportions on a 0-1 axis).
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.core.runtime.pool import fan_out
from ppknn.simulations.scenario import Scenario, parse_scenario, set_dotted, tomllib

COMMON_KEYS = ("run_id", "protocol", "dataset", "parties", "queries", "accuracy",
               "baseline_accuracy", "agreement_with_baseline", "epsilon_spent")
"""Columns every sweep row has; each protocol adds the metrics its run returned."""
OUTCOME_KEYS = ("protocol", "accuracy", "baseline", "agreement_with_baseline", "privacy", "hops")
"""Keys of a protocol's summary that are not its own metrics (the common columns hold them)."""


class SweepSection(BaseModel):
    """``[sweep]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = "sweep"
    output: str = "results/sweep"
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    parallel: Literal["ray", "sequential"] = "ray"
    address: str | None = None
    chunk_size: int | None = Field(default=None, ge=1)
    """Runs per Ray task (``None``: about four tasks per CPU of the cluster)."""


class Sweep(BaseModel):
    """A whole sweep file."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sweep: SweepSection = SweepSection()
    base: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)

    def runs(self) -> list[tuple[dict[str, Any], Scenario]]:
        """Every (grid point + seed, scenario), in grid order.

        Grid keys are dotted scenario keys (``"protocol.k"``,
        ``"protocol[1].epsilon"`` in a scenario with several protocols).
        Every run gets its own name (``<sweep>-<index>``), so run ids are
        unique across the table.
        """
        keys = sorted(self.grid)
        for key in keys:
            if "." not in key:
                raise ConfigError(f"grid key {key!r} must be 'section.key', e.g. 'protocol.k'")
            if not self.grid[key]:
                raise ConfigError(f"grid key {key!r} has no values")
        out: list[tuple[dict[str, Any], Scenario]] = []
        for values in itertools.product(*(self.grid[k] for k in keys)):
            for seed in self.sweep.seeds:
                point = dict(zip(keys, values))
                data: dict[str, Any] = copy.deepcopy(self.base)
                for key, value in point.items():
                    data = set_dotted(data, key, value)
                data.setdefault("run", {})["seed"] = seed
                data["run"]["name"] = f"{self.sweep.name}-{len(out):04d}"
                data.setdefault("runtime", {})["kind"] = "inprocess"
                scenario = parse_scenario(data, source=f"sweep point {point}, seed {seed}")
                out.append(({**point, "seed": seed}, scenario))
        return out


def with_base_keys(sweep: Sweep, items: list[tuple[str, Any]]) -> Sweep:
    """``sweep`` with keys of its base scenario set (``ppknn sweep --set``).

    A key the grid sets is refused: every point would replace it, so the value
    would be dropped unseen. The others are validated with every point.
    """
    base = sweep.base
    for key, value in items:
        if key in sweep.grid:
            raise ConfigError(f"--set {key}={value!r}: the grid sets {key} (values "
                              f"{sweep.grid[key]!r}), so this value would never be used; "
                              "change the grid in the sweep file, or set another key")
        base = set_dotted(base, key, value)
    return sweep.model_copy(update={"base": base})


def load_sweep(path: str | os.PathLike[str]) -> Sweep:
    """Read and validate a sweep file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"sweep file {str(p)!r} does not exist")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"sweep file {str(p)!r} is not valid TOML: {exc}") from None
    return parse_sweep(data, source=f"file {str(p)!r}")


def parse_sweep(data: Any, *, source: str = "<dict>") -> Sweep:
    """Validate a sweep given as a mapping: one line per wrong key, naming it and its value."""
    if not isinstance(data, dict):
        raise ConfigError(f"sweep {source} must be a table, got {type(data).__name__}")
    try:
        return Sweep.model_validate(data)
    except ValidationError as exc:
        from ppknn.simulations.scenario import _format_error

        raise ConfigError(_format_error(exc, source, model=Sweep, what="sweep")) from None


def table_row(summary: dict[str, Any]) -> dict[str, Any]:
    """One sweep row from a run's summary: common columns, then each protocol's metrics.

    With several protocols in the scenario, protocol columns are prefixed
    ``<name>:``.
    """
    results = summary["results"]
    several = len(results) > 1
    row: dict[str, Any] = {"run_id": summary["run_id"], "dataset": summary["dataset"],
                           "parties": summary["parties"], "queries": summary["queries"]}
    for name, r in results.items():
        prefix = f"{name}:" if several else ""
        eps = r["privacy"]["epsilon"]
        row.update({
            f"{prefix}protocol": name, f"{prefix}accuracy": r["accuracy"],
            f"{prefix}baseline_accuracy": r["baseline"]["accuracy"],
            f"{prefix}agreement_with_baseline": r["agreement_with_baseline"],
            f"{prefix}epsilon_spent": eps,
        })
        for key in (k for k in r if k not in OUTCOME_KEYS):  # what the protocol returned
            value = r[key]
            row[f"{prefix}{key}"] = value if not isinstance(value, (list, dict)) else str(value)
    row["messages"] = summary["communication"]["messages"]
    row["bytes"] = summary["communication"]["bytes"]
    row["protocol_s"] = summary["timings_s"].get("protocol_s", math.nan)
    return row


def run_one(job: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """One sweep run (module level so Ray can ship it): returns its table row.

    The run is what ``ppknn run`` performs (:func:`~simulations.pipeline.run_scenario`):
    a base scenario's ``[[deviation]]`` runs the deviant party beside its honest
    twin (the row adds ``deviation_detected`` and ``deviation_detected_by``) and
    ``[audit] trials`` audits the release (``PROTOCOL:audit_epsilon_lb``). The
    transcript stays in memory: nothing is written per run.
    """
    from ppknn.simulations.pipeline import run_scenario
    from ppknn.simulations.results import summary_of

    point, scenario_data = job
    scenario = parse_scenario(scenario_data, source=f"sweep point {point}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        whole = run_scenario(scenario)
    row = {**point, **table_row(summary_of(whole.run))}
    if whole.deviations is not None:
        row["deviation_detected"] = whole.deviations.detected
        row["deviation_detected_by"] = whole.deviations.detected_by
    for audited in whole.audit or ():
        row[f"{audited.row.protocol}:audit_epsilon_lb"] = audited.row.value
    row["privacy_warnings"] = "; ".join(sorted({str(w.message) for w in caught}))
    return row


PARALLEL = ("ray", "sequential")


def run_sweep(sweep: Sweep, *, parallel: str | None = None, output: Path | None = None,
              overwrite: bool = False, progress=None) -> list[dict[str, Any]]:
    """Run every point of ``sweep``; return the rows, and write the table and plot to ``output``.

    ``output`` is refused before anything runs if it already holds results
    (unless ``overwrite``) and written whole or not at all
    (:func:`~simulations.output.staged`); ``None``: nothing is written.
    """
    from ppknn.simulations.output import check_output, staged

    mode = parallel or sweep.sweep.parallel
    if mode not in PARALLEL:
        raise ConfigError(f"parallel = {parallel!r}: allowed: {', '.join(map(repr, PARALLEL))}")
    folder = check_output(Path(output), overwrite=overwrite) if output is not None else None
    jobs = [(point, scenario.model_dump()) for point, scenario in sweep.runs()]
    rows = fan_out(run_one, jobs, use_ray=mode == "ray", address=sweep.sweep.address,
                   chunk_size=sweep.sweep.chunk_size, progress=progress)
    if folder is not None:
        with staged(folder, overwrite=overwrite) as stage:
            write_table(rows, stage, grid=sorted(sweep.grid), name=sweep.sweep.name)
    return rows


def write_table(rows: list[dict[str, Any]], folder: Path, *, grid: list[str],
                name: str = "sweep") -> None:
    """``sweep.csv``, ``sweep.parquet`` and ``sweep.png`` in ``folder``."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    if not rows:
        return
    columns = list(dict.fromkeys(k for row in rows for k in row))
    rows = [{c: row.get(c) for c in columns} for row in rows]  # a metric one run lacks: empty
    with (folder / "sweep.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    pq.write_table(pa.Table.from_pylist(rows), folder / "sweep.parquet")
    _plot(rows, folder / "sweep.png", grid, name)


PROPORTIONS = ("accuracy", "disclosure_mean")
"""Columns that are proportions: their axis runs from 0 to 1."""


def _plot(rows: list[dict[str, Any]], path: Path, grid: list[str], sweep_name: str) -> None:
    """Accuracy (with the baseline) and privacy per grid point: mean, 95% interval over seeds.

    Proportions (accuracy, disclosure) are drawn on a 0-1 axis and ε from 0, so a
    difference of a point is not blown up to fill the panel.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from ppknn.simulations.reporting.intervals import t_interval

    points: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        points.setdefault(tuple(r[k] for k in grid), []).append(r)
    labels = [", ".join(f"{k.split('.')[-1]}={v}" for k, v in zip(grid, p)) for p in points]
    x = np.arange(len(points))
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 0.6 * len(points) + 4), 4))
    first = rows[0]
    acc = "accuracy" if "accuracy" in first else next(k for k in first if k.endswith(":accuracy"))
    base = acc.replace("accuracy", "baseline_accuracy")
    privacy = next((k for k in ("disclosure_mean", "epsilon_spent") if k in first
                    and all(isinstance(r[k], (int, float)) for r in rows)
                    and any(math.isfinite(r[k]) for r in rows)), None)
    panels = [(acc, "accuracy"), (privacy, "privacy: " + (privacy or "none"))]
    seeds = max(len(g) for g in points.values())
    for ax, (key, title) in zip(axes, panels):
        if key is None:
            ax.set_axis_off()
            continue
        proportion = key.split(":")[-1] in PROPORTIONS
        stats = [t_interval((r[key] for r in g), clip=(0.0, 1.0) if proportion else None)
                 for g in points.values()]
        means = np.array([m for m, _, _ in stats])
        low = np.array([m - lo if math.isfinite(lo) else 0.0 for m, lo, _ in stats])
        high = np.array([hi - m if math.isfinite(hi) else 0.0 for m, _, hi in stats])
        ax.errorbar(x, means, yerr=[low, high], fmt="o", capsize=3, label=f"{key} (protocol)")
        if key == acc:
            ax.plot(x, [t_interval(r[base] for r in g)[0] for g in points.values()],
                    "s", color="grey", label="non-private baseline")
        if proportion:
            ax.set_ylim(0.0, 1.05)
        else:
            ax.set_ylim(bottom=0.0)
        ax.legend(fontsize=8, loc="lower right" if proportion and key == acc else "best")
        ax.set_ylabel(key)
        ax.set_xlabel("grid point")
        ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
        how = ("mean, 95% interval over seeds" if seeds > 1 else "one seed: no interval")
        ax.set_title(f"{sweep_name}: {title}\n({how})", fontsize=9)
    fig.tight_layout()
    from ppknn.simulations.reporting.plots import save_png

    save_png(fig, path)
    plt.close(fig)


__all__ = ["COMMON_KEYS", "Sweep", "load_sweep", "parse_sweep", "run_one", "run_sweep", "table_row",
           "with_base_keys", "write_table"]
