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
``sweep.png`` (accuracy and disclosure per grid point, mean over seeds).
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import ConfigError, PrivacyLeakWarning
from core.runtime.pool import fan_out
from simulations.scenario import Scenario, parse_scenario, tomllib

TABLE_KEYS = ("run_id", "dataset", "parties", "queries", "k", "p0", "d", "rounds",
              "weighting", "secure_sum", "accuracy_ppknn", "accuracy_knn",
              "agreement_with_knn", "queries_with_tie_at_kth", "topk_exact_fraction",
              "topk_correctness_bound")


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
        """Every (grid point + seed, scenario), in grid order."""
        keys = sorted(self.grid)
        for key in keys:
            if key.count(".") != 1:
                raise ConfigError(f"grid key {key!r} must be 'section.key', e.g. 'protocol.k'")
            if not self.grid[key]:
                raise ConfigError(f"grid key {key!r} has no values")
        out = []
        for values in itertools.product(*(self.grid[k] for k in keys)):
            for seed in self.sweep.seeds:
                data = {s: dict(v) for s, v in self.base.items()}
                point = dict(zip(keys, values))
                for key, value in point.items():
                    section, name = key.split(".")
                    data.setdefault(section, {})[name] = value
                data.setdefault("run", {})["seed"] = seed
                data.setdefault("runtime", {})["kind"] = "inprocess"
                scenario = parse_scenario(data, source=f"sweep point {point}, seed {seed}")
                out.append(({**point, "seed": seed}, scenario))
        return out


def load_sweep(path: str | os.PathLike[str]) -> Sweep:
    """Read and validate a sweep file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"sweep file {str(p)!r} does not exist")
    try:
        data = tomllib.loads(p.read_text())
        return Sweep.model_validate(data)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"sweep file {str(p)!r} is not valid TOML: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"invalid sweep file {str(p)!r}: {exc}") from None


def run_one(job: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """One sweep run (module level so Ray can ship it): returns its table row."""
    from simulations.results import summary_of
    from simulations.runner import execute

    point, scenario_data = job
    scenario = parse_scenario(scenario_data, source=f"sweep point {point}")
    with tempfile.TemporaryDirectory(prefix="ppknn-sweep-") as tmp, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        outcome = execute(scenario, transcript_dir=Path(tmp) / "transcript")
    summary = summary_of(outcome)
    row = {**point}
    row.update({k: summary[k] for k in TABLE_KEYS})
    row["disclosure_mean"] = summary["disclosure"]["mean_probability"]
    row["disclosure_ci_low"], row["disclosure_ci_high"] = summary["disclosure"]["pooled_ci95"]
    row["messages"] = summary["communication"]["messages"]
    row["bytes"] = summary["communication"]["bytes"]
    row["protocol_s"] = summary["timings_s"].get("protocol_s", math.nan)
    row["privacy_warnings"] = "; ".join(sorted({str(w.message) for w in caught}))
    return row


def run_sweep(sweep: Sweep, *, parallel: str | None = None, output: Path | None = None,
              progress=None) -> list[dict[str, Any]]:
    """Run every point of ``sweep``; write the combined table and plot; return the rows."""
    mode = parallel or sweep.sweep.parallel
    jobs = [(point, scenario.model_dump()) for point, scenario in sweep.runs()]
    rows = fan_out(run_one, jobs, use_ray=mode == "ray", address=sweep.sweep.address,
                   chunk_size=sweep.sweep.chunk_size, progress=progress)
    folder = Path(output or sweep.sweep.output)
    write_table(rows, folder, grid=sorted(sweep.grid))
    return rows


def write_table(rows: list[dict[str, Any]], folder: Path, *, grid: list[str]) -> None:
    """``sweep.csv``, ``sweep.parquet`` and ``sweep.png`` in ``folder``."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    if not rows:
        return
    columns = list(rows[0])
    with (folder / "sweep.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    pq.write_table(pa.Table.from_pylist(rows), folder / "sweep.parquet")
    _plot(rows, folder / "sweep.png", grid)


def _plot(rows: list[dict[str, Any]], path: Path, grid: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    points: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        points.setdefault(tuple(r[k] for k in grid), []).append(r)
    labels = [", ".join(f"{k.split('.')[-1]}={v}" for k, v in zip(grid, p)) for p in points]
    x = np.arange(len(points))
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 0.6 * len(points) + 4), 4))
    for ax, (key, title) in zip(axes, (("accuracy_ppknn", "PP-kNN accuracy"),
                                        ("disclosure_mean", "mean per-node disclosure"))):
        means = [np.mean([r[key] for r in g]) for g in points.values()]
        sds = [np.std([r[key] for r in g]) for g in points.values()]
        ax.errorbar(x, means, yerr=sds, fmt="o", capsize=3)
        if key == "accuracy_ppknn":
            ax.plot(x, [np.mean([r["accuracy_knn"] for r in g]) for g in points.values()],
                    "s", color="grey", label="kNN (non-private)")
            ax.legend(fontsize=8)
        ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"{title} (mean +/- sd over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


__all__ = ["Sweep", "load_sweep", "run_one", "run_sweep", "write_table"]
