"""``ppknn compare``: every protocol on the same data, at matched privacy, side by side.

A comparison spec (TOML) names datasets, protocols with a privacy axis in each protocol's
own unit, seeds and network profiles::

    [compare]
    name = "compare-quick"
    output = "results/compare-quick"
    datasets = ["sklearn:iris", "sklearn:wine"]
    seeds = [0, 1, 2]
    parallel = "ray"                  # or "sequential": the same table

    [compare.audit]                   # audit these cells (empirical ε on neighbouring inputs)
    seeds = [0]
    datasets = ["sklearn:iris"]       # all when not given; likewise protocols = [...]
    trials = 100

    [compare.runtime_compare]         # rerun these cells with their parties on Ray
    seeds = [0]
    layout = "hosted"

    [base]                            # scenario keys every run shares
    data = { scale = "minmax", max_queries = 60 }

    [[protocol]]
    name = "dp-knn"
    privacy_key = "epsilon"           # the protocol's own privacy parameter ...
    levels = [0.1, 1.0, 10.0]         # ... from most to least private
    settings = { task = "knn", k = 5 }

    [network.campus]                  # a user-given profile beside LAN and WAN
    latency_ms = 5.0
    bandwidth_mbps = 200.0

Each (dataset, protocol, level, seed) is one scenario run through the registry, exactly as
``ppknn run`` runs it (in-process runtime; fanned out over Ray tasks or one by one, the same
rows either way). A row holds:

* **utility**: accuracy and macro-F1 of the protocol, of the non-private reference the
  protocol's plugin declares (scikit-learn kNN for the nearest-neighbour protocols, Gaussian
  NB for the NB models) and of scikit-learn's Gaussian NB, all on the same split;
* **privacy**: the level in the protocol's own unit with the guarantee it stands for, the ε
  the run spent, the strongest leakage the run's default attacks measured on the
  transcript (:mod:`ppknn.simulations.leakage`): where an attack yields an empirical ε, the
  row with the largest one-sided 95% lower bound (``empirical_epsilon_lb``), its point
  estimate (``leak_value``) and the ε it is compared with (``leak_bound``), else the
  attack with the largest advantage over baseline (while rows carry none, the largest
  success rate; :data:`LEAK_RULE`), named; for the cells of ``[compare.audit]``, the
  audit mode's empirical ε lower bound at the same settings; and ``empirical_epsilon``,
  the largest ε lower bound measured on the run;
* **cost**: messages, bytes, hops on the critical path, protocol wall time in-process (and
  on Ray for the cells of ``[compare.runtime_compare]``, with the ratio, in the same run),
  and the **predicted time on a network** per profile: the run's transcript replayed over
  its messages' sizes and causal order (:func:`ppknn.simulations.network.replay`).

The report (``compare.md``) aggregates over seeds with Student-t 95% intervals (a cell's ε
lower bound from its seeds' bounds: :func:`cell_bound`; the per-seed bounds against the
promise, counted against chance), draws a utility-privacy plot per dataset and a
utility-cost plot, ranks the protocols per dataset (at empirical ε ≤ 1, with intervals) and
states, per protocol, when to choose it and when not, from the measured rows. It can be
written again from a finished run's saved rows without re-running anything
(:func:`render_saved`; ``python -m ppknn.simulations.compare FOLDER``).
"""

from __future__ import annotations

import copy
import math
import operator
import os
import statistics
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ppknn.core.errors import ConfigError, DataError, PrivacyLeakWarning
from ppknn.core.runtime.pool import fan_out
from ppknn.simulations import registry
from ppknn.simulations.grids import Grid
from ppknn.simulations.network import PROFILES, NetworkProfile, predict_network, replay
from ppknn.simulations.scenario import parse_scenario, tomllib


class CellSubset(BaseModel):
    """Which cells an extra measurement covers: seeds, datasets and protocols (all if unset)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    datasets: list[str] | None = None
    protocols: list[str] | None = None

    def covers(self, dataset: str, protocol: str, seed: int) -> bool:
        """Whether the cell (dataset, protocol, seed) is measured."""
        return (seed in self.seeds and (self.datasets is None or dataset in self.datasets)
                and (self.protocols is None or protocol in self.protocols))


class RuntimeCompare(CellSubset):
    """``[compare.runtime_compare]``: these cells also run with their parties on Ray.

    The row then holds the protocol's wall time on both runtimes, measured in the same
    run, their ratio, and whether the Ray run gave the same row.
    """

    layout: Literal["hosted", "actor-per-party"] = "hosted"


class AuditCells(CellSubset):
    """``[compare.audit]``: these cells are audited (:mod:`ppknn.simulations.leakage.audit`).

    ``trials`` reruns per neighbouring input give a ``confidence`` lower bound on ε.
    """

    trials: int = Field(100, ge=100)
    confidence: float = Field(0.95, gt=0, lt=1)


class CompareSection(BaseModel):
    """``[compare]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = "compare"
    output: str = "results/compare"
    datasets: list[str] = Field(min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2], min_length=1)
    parallel: Literal["ray", "sequential"] = "ray"
    address: str | None = None
    runtime_compare: RuntimeCompare | None = None
    audit: AuditCells | None = None

    @model_validator(mode="after")
    def _subsets_inside(self) -> CompareSection:
        for key, sub in (("runtime_compare", self.runtime_compare), ("audit", self.audit)):
            if sub is None:
                continue
            seeds = sorted(set(sub.seeds) - set(self.seeds))
            if seeds:
                raise ValueError(f"compare.{key}.seeds = {sub.seeds}: {seeds} not in "
                                 f"compare.seeds {self.seeds}")
            sets = sorted(set(sub.datasets or ()) - set(self.datasets))
            if sets:
                raise ValueError(f"compare.{key}.datasets: {sets} not in compare.datasets")
            unknown = sorted(set(sub.protocols or ()) - set(registry.names()))
            if unknown:
                raise ValueError(f"compare.{key}.protocols: {unknown} are not registered "
                                 f"({registry.names()})")
        return self


class ProtocolEntry(BaseModel):
    """``[[protocol]]``: a registered protocol, its privacy axis and fixed settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    privacy_key: str
    levels: list[float] = Field(min_length=1)
    settings: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> ProtocolEntry:
        if self.name not in registry.names():
            raise ValueError(f"unknown protocol {self.name!r}; registered: {registry.names()}")
        fields = registry.get(self.name).config_model.model_fields
        if self.privacy_key not in fields:
            raise ValueError(f"protocol {self.name!r} has no key {self.privacy_key!r}; "
                             f"its keys: {sorted(k for k in fields if k != 'name')}")
        return self


class Comparison(BaseModel):
    """A whole comparison spec (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    compare: CompareSection
    base: dict[str, Any] = Field(default_factory=dict)
    protocol: list[ProtocolEntry] = Field(min_length=1)
    network: dict[str, NetworkProfile] = Field(default_factory=dict)
    dataset_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Scenario tables merged into the base for one dataset (e.g. its public
    ``data.bounds``: ``[dataset_settings."sklearn:iris".data.bounds]``)."""

    @model_validator(mode="after")
    def _settings_name_datasets(self) -> Comparison:
        unknown = sorted(set(self.dataset_settings) - set(self.compare.datasets))
        if unknown:
            raise ValueError(f"dataset_settings for {unknown}, which are not in "
                             f"compare.datasets {self.compare.datasets}")
        return self

    def profiles(self) -> dict[str, NetworkProfile]:
        """LAN, WAN and the spec's own profiles."""
        return {**PROFILES, **self.network}

    def grids(self) -> list[tuple[ProtocolEntry, str, Grid]]:
        """One grid per (protocol entry, dataset): the privacy levels × seeds."""
        out = []
        for i, entry in enumerate(self.protocol):
            for j, dataset in enumerate(self.compare.datasets):
                base = copy.deepcopy(self.base)
                for section, values in self.dataset_settings.get(dataset, {}).items():
                    if isinstance(values, Mapping):
                        base.setdefault(section, {}).update(copy.deepcopy(dict(values)))
                base.setdefault("data", {})["dataset"] = dataset
                base["protocol"] = {"name": entry.name, **entry.settings}
                out.append((entry, dataset,
                            Grid(f"{i:02d}-{entry.name}-{j:02d}", base=base,
                                 axes={f"protocol.{entry.privacy_key}": entry.levels},
                                 seeds=self.compare.seeds)))
        return out

    def jobs(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every (point, scenario) of every grid, validated (bad values fail here)."""
        jobs = []
        profiles = {k: v.model_dump() for k, v in self.profiles().items()}
        for entry, dataset, grid in self.grids():
            for point, scenario in grid.scenarios():
                level = point[f"protocol.{entry.privacy_key}"]
                rank = entry.levels.index(level) + 1
                seed = point["seed"]
                rc, au = self.compare.runtime_compare, self.compare.audit
                meta = {"dataset": dataset, "protocol": entry.name,
                        "privacy_key": entry.privacy_key, "level": level, "level_rank": rank,
                        "seed": seed, "profiles": profiles,
                        "ray_layout": (rc.layout if rc and rc.covers(dataset, entry.name, seed)
                                       else None),
                        "audit": ({"trials": au.trials, "confidence": au.confidence}
                                  if au and au.covers(dataset, entry.name, seed) else None)}
                jobs.append((meta, scenario.model_dump()))
        return jobs


def load_comparison(source: str | os.PathLike[str] | Mapping[str, Any]) -> Comparison:
    """Read and validate a comparison spec (a TOML path or a dict)."""
    try:
        if isinstance(source, Mapping):
            return Comparison.model_validate(dict(source))
        p = Path(source)
        if not p.is_file():
            raise ConfigError(f"comparison spec {str(p)!r} does not exist")
        return Comparison.model_validate(tomllib.loads(p.read_text()))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"comparison spec {str(source)!r} is not valid TOML: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"invalid comparison spec: {exc}") from None


def _macro_f1(labels: np.ndarray, predictions: np.ndarray, n_classes: int) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(labels, predictions, labels=list(range(n_classes)), average="macro",
                          zero_division=0))


def _is_epsilon(quantity: str) -> bool:
    """Whether an attack's quantity is an empirical ε (a point estimate with a lower bound)."""
    return "epsilon" in quantity.lower() or "ε" in quantity


LEAK_RULE = (
    "Where an attack of the cell tests a distinguishing event (an empirical ε), that ε is "
    "the cell's leakage (its largest one-sided 95% lower bound, compared with the promise). "
    "Otherwise the cell's strongest leakage is the attack, among its default attacks, with "
    "the largest advantage over its baseline (what an attacker without the transcript "
    "achieves on the same targets) where the rows carry one, else the largest success "
    "rate: every such quantity is a proportion of targets recovered in [0, 1] (errors and "
    "'lower leaks more' widths are left out, and so are attacks measuring what a role is "
    "handed by design, such as the DP owner reading the analysts' instances). Per run, "
    "an attack's figure is its most exposed target's (the largest over its rows); per "
    "cell, the attack with the largest mean over seeds is named.")
"""How a cell's strongest leakage is chosen (stated in the report)."""


def _rankable(r: Any) -> bool:
    """Whether a leakage row's quantity is a success rate ranked as a leak (:data:`LEAK_RULE`)."""
    from ppknn.simulations.leakage import attacks

    q = r.quantity.lower()
    if _is_epsilon(r.quantity) or "error" in q or "lower leaks more" in q:
        return False
    protocol = getattr(r, "protocol", None)
    if protocol is None:
        return True
    try:
        return not attacks.get(protocol, r.attack).by_design
    except ConfigError:  # an attack this build does not register: ranked
        return True


def _leak_score(r: Any) -> float:
    """A row's figure for ranking: its advantage over baseline if it has one, else its value."""
    adv = getattr(r, "advantage", None)
    if isinstance(adv, (int, float)) and math.isfinite(adv):
        return float(adv)
    return float(r.value)


def _strongest_leak(rows: Sequence[Any]) -> dict[str, Any]:
    """One leakage figure per run, chosen by :data:`LEAK_RULE`.

    Where an attack yields an empirical ε: the row with the largest lower bound
    (``empirical_epsilon_lb``, its one-sided 95% bound), with its point estimate in
    ``leak_value`` (infinite when one arm of the test never fired; the bound is still
    finite) and the ε the protocol promises for that quantity in ``leak_bound``.
    Otherwise the ranked attack whose most exposed target has the largest advantage over
    baseline (or success rate, while rows carry no baseline), named in ``leak_quantity``;
    ``leak_candidates`` holds every ranked attack's figure (JSON), so a cell can name the
    attack that is largest over its seeds (:func:`leak_cell`).
    """
    import json

    empty = {"leak_quantity": "", "leak_value": math.nan, "leak_ci_low": math.nan,
             "leak_ci_high": math.nan, "empirical_epsilon_lb": math.nan,
             "leak_bound": math.nan}
    eps = [r for r in rows if _is_epsilon(r.quantity)]
    candidates: dict[str, float] = {}
    if eps:
        pick = eps
    else:
        rates = [r for r in rows if _rankable(r)]
        if not rates:
            return empty
        for r in rates:
            name = f"{r.attack}: {r.quantity}"
            score = _leak_score(r)
            if math.isfinite(score):
                candidates[name] = max(candidates.get(name, -math.inf), score)
        if candidates:  # the largest figure; equal figures: the first name
            first = min(candidates, key=lambda n: (-candidates[n], n))
        else:
            first = min(f"{r.attack}: {r.quantity}" for r in rates)
        pick = [r for r in rates if f"{r.attack}: {r.quantity}" == first]
    usable = [r for r in pick if math.isfinite(r.value)
              or (eps and math.isfinite(r.ci_low))]
    if not usable:
        return {**empty, "leak_quantity": f"{pick[0].attack}: {pick[0].quantity}"}

    def key(r: Any) -> tuple[float, float]:
        if not eps:
            return (_leak_score(r), r.value)
        return (r.ci_low if math.isfinite(r.ci_low) else -math.inf,
                -math.inf if math.isnan(r.value) else r.value)

    best = max(usable, key=key)
    bound = getattr(best, "bound", None)
    out = {"leak_quantity": f"{best.attack}: {best.quantity}", "leak_value": best.value,
           "leak_ci_low": best.ci_low, "leak_ci_high": best.ci_high,
           "empirical_epsilon_lb": best.ci_low if eps else math.nan,
           "leak_bound": (float(bound) if isinstance(bound, (int, float))
                          and math.isfinite(bound) else math.nan)}
    if candidates:
        out["leak_candidates"] = json.dumps(candidates, sort_keys=True, ensure_ascii=False)
    return out


def run_cell(job: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """One comparison run (module level so Ray can ship it): its row."""
    from sklearn.naive_bayes import GaussianNB

    from ppknn.simulations import leakage
    from ppknn.simulations.results import summary_of
    from ppknn.simulations.runner import execute

    meta, data = job
    scenario = parse_scenario(data, source=f"comparison cell {meta['dataset']} "
                                           f"{meta['protocol']} level {meta['level']}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            result = execute(scenario)
    except (ConfigError, DataError) as exc:  # the protocol cannot serve this cell: say why
        return {**{k: v for k, v in meta.items() if k not in _META_ONLY},
                "accuracy": math.nan, "cannot_run": str(exc).splitlines()[-1].strip()}
    o = result.outcome
    p = result.prepared.data
    n_classes = p.n_classes
    summary = summary_of(result)
    r = summary["results"][o.name]
    gnb = GaussianNB().fit(p.union_X, p.union_y).predict(p.queries)
    messages = int(summary["communication"]["messages"] or 0)
    bytes_ = int(summary["communication"]["bytes"] or 0)
    hops = int(r.get("hops") or 0)
    row: dict[str, Any] = {k: v for k, v in meta.items() if k not in _META_ONLY}
    row.update({
        "run_id": summary["run_id"], "queries": summary["queries"],
        "accuracy": o.accuracy, "macro_f1": _macro_f1(o.labels, o.predictions, n_classes),
        "reference": o.baseline.name, "reference_accuracy": o.baseline_accuracy,
        "reference_macro_f1": _macro_f1(o.labels, o.baseline.predictions, n_classes),
        "gaussian_nb_accuracy": float(np.mean(gnb == o.labels)),
        "guarantee": registry.get(o.name).guarantee,
        "epsilon_spent": r["privacy"]["epsilon"],
        "messages": messages, "bytes": bytes_, "hops": hops,
        "protocol_s": result.timings.get("protocol_s", math.nan), "cannot_run": "",
    })
    for name, prof in meta["profiles"].items():
        replayed = replay(result.transcript, NetworkProfile(**prof), per_protocol=False)["run"]
        row[f"network_{name}_s"] = replayed.seconds
        if name == "wan":
            row["critical_hops"] = replayed.critical_hops
            row["wan_sum_of_hops_s"] = replayed.sum_of_hops
    if meta.get("ray_layout"):
        row.update(_on_ray(data, meta["ray_layout"], result, row["protocol_s"]))
    try:
        leak_rows = leakage.run_table(result, save=False)
    except Exception as exc:  # noqa: BLE001 - a scorer failure is reported, not fatal
        leak_rows = []
        row["leak_error"] = f"{type(exc).__name__}: {exc}"
    row.update(_strongest_leak(leak_rows))
    row.update(_audited(scenario, meta.get("audit"), o.name))
    measured = [v for v in (row["empirical_epsilon_lb"], row["audit_epsilon_lb"])
                if math.isfinite(v)]
    row["empirical_epsilon"] = max(measured) if measured else math.nan
    return row


_META_ONLY = ("profiles", "ray_layout", "audit")  # job settings, not row values


def _on_ray(data: dict[str, Any], layout: str, local: Any, local_s: float) -> dict[str, Any]:
    """The cell rerun with its parties on Ray: its wall time beside the in-process one."""
    from ppknn.simulations.runner import execute

    sc = parse_scenario({**data, "runtime": {**data["runtime"], "kind": "ray",
                                             "layout": layout}},
                        source="comparison cell on Ray")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        remote = execute(sc)
    ray_s = remote.timings.get("protocol_s", math.nan)
    same = (np.array_equal(np.asarray(remote.predictions), np.asarray(local.predictions))
            and remote.communication.get("messages") == local.communication.get("messages")
            and remote.communication.get("bytes") == local.communication.get("bytes"))
    return {"ray_protocol_s": ray_s, "ray_startup_s": remote.timings.get("startup_s", math.nan),
            "ray_over_inprocess": ray_s / local_s if local_s > 0 else math.nan,
            "ray_same_row": bool(same)}


def _audited(scenario: Any, settings: Mapping[str, Any] | None, name: str) -> dict[str, Any]:
    """The audit's empirical ε lower bound for this cell.

    NaN when the cell is not audited or the audit mode does not cover the protocol.
    """
    from ppknn.simulations.leakage.audit import audit_scenario, audited

    out = {"audit_epsilon_lb": math.nan, "audit_bound": math.nan, "audit_note": ""}
    if settings is None or name not in audited():
        return out
    sc = scenario.model_copy(update={"audit": scenario.audit.model_copy(
        update={"trials": int(settings["trials"]), "confidence": float(settings["confidence"])})})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        runs = audit_scenario(sc, use_ray=False)
    row = runs[0].row
    return {"audit_epsilon_lb": float(row.value), "audit_bound": float(row.bound),
            "audit_note": f"{row.bound_name}: {row.note}"}


def run_comparison(spec: Comparison, *, parallel: str | None = None,
                   progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Every row of the comparison, in spec order (protocols, datasets, levels, seeds)."""
    mode = parallel or spec.compare.parallel
    jobs = spec.jobs()
    if mode != "ray" and any(meta["ray_layout"] for meta, _ in jobs):
        # cells rerun on Ray share one Ray instance (started here when none is up) instead
        # of each starting and stopping its own
        fan_out(run_cell, [], use_ray=True, address=spec.compare.address)
    return fan_out(run_cell, jobs, use_ray=mode == "ray", address=spec.compare.address,
                   progress=progress)


# --------------------------------------------------------------------------- aggregation
def _t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and Student-t 95% interval (NaN-free values; one value: the value itself)."""
    from scipy import stats

    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return math.nan, math.nan, math.nan
    m = statistics.fmean(v)
    if len(v) < 2:
        return m, m, m
    half = float(stats.t.ppf(0.975, len(v) - 1)) * statistics.stdev(v) / math.sqrt(len(v))
    return m, m - half, m + half


MEANS = ("macro_f1", "reference_accuracy", "reference_macro_f1", "gaussian_nb_accuracy",
         "epsilon_spent", "messages", "bytes", "hops", "critical_hops", "wan_sum_of_hops_s",
         "protocol_s", "ray_protocol_s", "ray_startup_s", "audit_epsilon_lb", "audit_bound")
"""Columns averaged over a cell's seeds (the leakage columns: :func:`leak_cell`)."""

PER_SEED_ALPHA = 0.05
"""A seed's attack ε lower bound exceeds the true ε with probability at most this (the
attacks' one-sided Clopper-Pearson bounds are 95% for membership tests, 97.5% for DP-TT's
side inference)."""


def cell_bound(values: Sequence[float], alpha: float = PER_SEED_ALPHA
               ) -> tuple[float, int, float]:
    """A cell's ε lower bound from its seeds' lower bounds: ``(bound, k, confidence)``.

    Each of the n finite per-seed bounds exceeds the true ε with probability at most
    ``alpha``, independently (each seed is its own run). The k-th largest exceeds it only
    if at least k of them do, with probability at most P(Binomial(n, alpha) >= k); k is
    the smallest count for which that is at most ``alpha``, so the k-th largest is itself
    a lower bound at ``confidence`` = 1 - P(...) >= 1 - alpha (k = 3 for 10 seeds at 5%:
    98.8%). The largest per-seed bound is not one: it exceeds the truth with probability
    up to 1 - (1 - alpha)^n (40% for 10 seeds).

    >>> bound, k, conf = cell_bound([0.0] * 7 + [0.1, 0.2, 0.3])
    >>> bound, k, round(conf, 4)
    (0.1, 3, 0.9885)
    >>> cell_bound([0.4])[:2], cell_bound([])[1]
    ((0.4, 1), 0)
    """
    from scipy import stats

    v = sorted((x for x in values if math.isfinite(x)), reverse=True)
    n = len(v)
    for k in range(1, n + 1):
        tail = float(stats.binom.sf(k - 1, n, alpha))
        if tail <= alpha + 1e-12:
            return v[k - 1], k, 1.0 - tail
    return math.nan, 0, math.nan


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _number(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _parse(r: Mapping[str, Any]) -> dict[str, float]:
    """A run's ``leak_candidates`` (empty when it has none)."""
    import json

    text = r.get("leak_candidates")
    if not isinstance(text, str) or not text:
        return {}
    return {str(k): float(v) for k, v in json.loads(text).items()}


def _candidates(rs: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Each ranked attack's finite per-seed figures over a cell's runs."""
    out: dict[str, list[float]] = defaultdict(list)
    for r in rs:
        for name, v in _parse(r).items():
            if math.isfinite(v):
                out[name].append(v)
    return dict(out)


def leak_cell(rs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The attacks' leakage of one cell (its seeds' rows).

    ``leak_value``: the mean of the seeds' finite point estimates (``leak_seeds`` of them;
    ``leak_infinite`` seeds had an infinite estimate, ``leak_errors`` a failed scorer).
    For an empirical ε: ``empirical_epsilon_lb``, the cell's lower bound
    (:func:`cell_bound`, the ``epsilon_lb_rank``-th largest of ``epsilon_lb_seeds``
    per-seed bounds, at ``epsilon_lb_confidence``), their median and largest (and its
    seed), the promise ``leak_promise`` (the attack's bound, else the audited cell's,
    which is in the same unit) and the seeds whose bound exceeds it (``seeds_above``,
    listed in ``above_promise``); ``seeds_undecided`` have a positive bound and no
    recorded promise (the largest: ``undecided_max``).
    """
    quantity = next((str(r["leak_quantity"]) for r in rs if r.get("leak_quantity")), "")
    values = [_number(r.get("leak_value")) for r in rs]
    per_seed = _candidates(rs)
    if per_seed:  # the ranked attack with the largest mean over the seeds (LEAK_RULE)
        means = {name: statistics.fmean(vs) for name, vs in per_seed.items()}
        quantity = min(means, key=lambda n: (-means[n], n))
        values = [_number(c.get(quantity)) for c in (_parse(r) for r in rs)]
    finite = [v for v in values if math.isfinite(v)]
    out: dict[str, Any] = {
        "leak_quantity": quantity, "leak_value": statistics.fmean(finite) if finite else math.nan,
        "leak_seeds": len(finite), "leak_infinite": sum(math.isinf(v) for v in values),
        "leak_errors": sum(bool(r.get("leak_error")) for r in rs)}
    lbs = [(r.get("seed"), _number(r.get("empirical_epsilon_lb"))) for r in rs]
    lbs = [(seed, v) for seed, v in lbs if math.isfinite(v)]
    bound, k, confidence = cell_bound([v for _, v in lbs])
    promises = [_number(r.get("leak_bound")) for r in rs]
    if _is_epsilon(quantity):
        promises += [_number(r.get("audit_bound")) for r in rs]
    promise = next((v for v in promises if math.isfinite(v)), math.nan)
    above = [(seed, v) for seed, v in lbs if v > promise + 1e-12]
    top = max(lbs, key=operator.itemgetter(1)) if lbs else (None, math.nan)
    out.update({
        "empirical_epsilon_lb": bound, "epsilon_lb_rank": k,
        "epsilon_lb_confidence": confidence, "epsilon_lb_seeds": len(lbs),
        "epsilon_lb_median": statistics.median(v for _, v in lbs) if lbs else math.nan,
        "epsilon_lb_max": top[1], "epsilon_lb_max_seed": top[0] if lbs else "",
        "leak_promise": promise, "seeds_above": len(above),
        "above_promise": "; ".join(f"seed {seed}: {v:.3g}" for seed, v in above),
        "seeds_undecided": (sum(v > 0 for _, v in lbs) if math.isnan(promise) else 0),
        "undecided_max": (max((v for _, v in lbs if v > 0), default=math.nan)
                          if math.isnan(promise) else math.nan)})
    return out

PARTIAL = ("ray_protocol_s", "ray_startup_s", "audit_epsilon_lb", "audit_bound")
"""Columns measured on some seeds only (``[compare.runtime_compare]``, ``[compare.audit]``):
averaged over the seeds that measured them."""


def _failures(rows: Sequence[Mapping[str, Any]] | None) -> str:
    return f"{len(rows)} seeds could not run: {rows[0]['cannot_run']}" if rows else ""


def aggregate(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (dataset, protocol, level): means over seeds, 95% interval of accuracy."""
    groups: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    failed: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        cell = (r["dataset"], r["protocol"], r["level_rank"])
        (failed if r.get("cannot_run") else groups)[cell].append(r)
    out = []
    for cell in sorted(set(failed) - set(groups)):  # no seed could run: say why, no hole
        rs = failed[cell]
        out.append({"dataset": cell[0], "protocol": cell[1], "level_rank": cell[2],
                    "privacy_key": rs[0]["privacy_key"], "level": rs[0]["level"], "seeds": 0,
                    "accuracy": math.nan, "accuracy_low": math.nan, "accuracy_high": math.nan,
                    "cannot_run": rs[0]["cannot_run"]})
    for (dataset, protocol, rank), rs in groups.items():
        acc, lo, hi = _t_interval([r["accuracy"] for r in rs])
        ref, ref_lo, ref_hi = _t_interval([r["reference_accuracy"] for r in rs])
        # accuracies are proportions: the t interval is clipped to [0, 1]
        lo, hi, ref_lo, ref_hi = (min(1.0, max(0.0, v)) for v in (lo, hi, ref_lo, ref_hi))
        row: dict[str, Any] = {"dataset": dataset, "protocol": protocol, "level_rank": rank,
                               "privacy_key": rs[0]["privacy_key"], "level": rs[0]["level"],
                               "seeds": len(rs), "accuracy": acc, "accuracy_low": lo,
                               "accuracy_high": hi, "reference": rs[0]["reference"],
                               "reference_low": ref_lo, "reference_high": ref_hi,
                               "gap_to_reference": acc - ref,
                               "cannot_run": _failures(failed.get((dataset, protocol, rank)))}
        row.update(leak_cell(rs))
        for key in MEANS:
            vals = [r.get(key, math.nan) for r in rs]
            vals = [float(v) for v in vals if isinstance(v, (int, float))]
            if key in PARTIAL:  # measured on some seeds only
                vals = [v for v in vals if math.isfinite(v)]
            row[key] = statistics.fmean(vals) if vals else math.nan
        for key in rs[0]:
            if key.startswith("network_"):
                row[key] = statistics.fmean(float(r[key]) for r in rs)
        ratios = [r["ray_over_inprocess"] for r in rs if "ray_over_inprocess" in r]
        row["ray_over_inprocess"], row["ray_low"], row["ray_high"] = _t_interval(ratios)
        row["ray_cells"] = len(ratios)
        row["ray_same_rows"] = sum(bool(r.get("ray_same_row")) for r in rs
                                   if "ray_same_row" in r)
        row["audit_seeds"] = sum(math.isfinite(r.get("audit_epsilon_lb", math.nan)) for r in rs)
        measured = [v for v in (row["empirical_epsilon_lb"], row["audit_epsilon_lb"])
                    if math.isfinite(v)]
        row["empirical_epsilon"] = max(measured) if measured else math.nan
        out.append(row)
    return sorted(out, key=lambda r: (r["dataset"], r["protocol"], r["level_rank"]))


def ranking(agg: Sequence[Mapping[str, Any]], *, max_epsilon: float = 1.0
            ) -> list[dict[str, Any]]:
    """Per dataset: the most accurate protocol at its strongest level, and at empirical ε ≤ 1.

    (``max_epsilon``, 1 by default.) The empirical ε of a cell is the largest lower bound
    measured on it: the default attacks' (the cell's bound from its seeds' bounds,
    :func:`cell_bound`) or the audit's (neighbouring inputs). Only cells with such a
    measurement enter the second ranking (the others' attacks report success rates, not
    ε), and not those whose attacks measure ε but left a seed without a bound (its most
    leaking seeds may be the missing ones). Accuracies carry their 95% intervals;
    ``tied_with`` lists the qualifying settings whose interval overlaps the winner's (the
    data cannot tell them apart).
    """
    out = []
    for dataset in sorted({r["dataset"] for r in agg}):
        rows = [r for r in agg if r["dataset"] == dataset and r["seeds"]]
        strongest = [r for r in rows if r["level_rank"] == 1]
        if not strongest:
            continue
        best = max(strongest, key=lambda r: r["accuracy"])
        low = [r for r in rows if math.isfinite(r.get("empirical_epsilon", math.nan))
               and r["empirical_epsilon"] <= max_epsilon and not _bound_missing(r)]
        top = max(low, key=lambda r: r["accuracy"]) if low else None
        tied = sorted({_setting(r) for r in low if r is not top
                       and r["accuracy_high"] >= top["accuracy_low"]}) if top else []
        out.append({
            "dataset": dataset,
            "best_at_strongest_setting": best["protocol"],
            "its_accuracy": f"{best['accuracy']:.3f} "
                            f"[{best['accuracy_low']:.3f}, {best['accuracy_high']:.3f}]",
            f"best_at_empirical_eps_le_{max_epsilon:g}":
                _setting(top) if top else "none measured",
            "accuracy_there": (f"{top['accuracy']:.3f} "
                               f"[{top['accuracy_low']:.3f}, {top['accuracy_high']:.3f}]"
                               if top else "—"),
            "its_empirical_eps": f"{top['empirical_epsilon']:.3g}" if top else "—",
            "tied_with": ", ".join(tied) if tied else ("none" if top else "—"),
            "measured_settings": len(low),
        })
    return out


def _bound_missing(r: Mapping[str, Any]) -> bool:
    """Whether a cell's attacks measure ε but left a seed without a bound (n/a)."""
    return (_is_epsilon(r.get("leak_quantity", ""))
            and r.get("epsilon_lb_seeds", 0) < r.get("seeds", 0))


def _setting(r: Mapping[str, Any]) -> str:
    return f"{r['protocol']} ({r['privacy_key']} = {r['level']:g})"


def advice(agg: Sequence[Mapping[str, Any]], profile: str = "wan") -> dict[str, str]:
    """One sentence per protocol, from the measured rows: when to choose it, when not."""
    out = {}
    for protocol in sorted({r["protocol"] for r in agg}):
        rows = [r for r in agg if r["protocol"] == protocol and r["seeds"]]
        cannot = sorted({r["dataset"] for r in agg
                         if r["protocol"] == protocol and not r["seeds"]})
        note = (f" It could not run on {', '.join(cannot)} (see the table for why)."
                if cannot else "")
        if not rows:
            out[protocol] = "It could not run on any dataset of this comparison." + note
            continue
        strong = [r for r in rows if r["level_rank"] == 1]
        weak = [r for r in rows if r["level_rank"] == max(x["level_rank"] for x in rows)]
        gap_strong = statistics.fmean(r["gap_to_reference"] for r in strong)
        gap_weak = statistics.fmean(r["gap_to_reference"] for r in weak)
        worst = min(strong, key=lambda r: r["gap_to_reference"])
        net = statistics.fmean(r.get(f"network_{profile}_s", math.nan) for r in rows)
        hops = statistics.fmean(r.get("critical_hops", r["hops"]) for r in rows)
        audited = [r for r in strong if math.isfinite(r.get("audit_epsilon_lb", math.nan))]
        audit_text = ""
        if audited:
            top = max(audited, key=operator.itemgetter("audit_epsilon_lb"))
            audit_text = (f"; the largest ε lower bound its audit measured there is "
                          f"{top['audit_epsilon_lb']:.2g} (on {top['dataset']}; promised "
                          f"{top['audit_bound']:.3g} per audited unit)"
                          if top["audit_epsilon_lb"] > 0 else
                          f"; its audit detected no ε there on any of {len(audited)} "
                          f"datasets (promised {top['audit_bound']:.3g} per audited unit)")
        key = rows[0]["privacy_key"]
        leak_text = _leak_sentence(strong)
        heavy = _heavy_leak(strong)
        choose = ("choose it when" if gap_strong > -0.05 and heavy is None
                  else "consider it only when")
        accept = (f", and only if its strongest attack recovering {heavy['leak_value']:.0%} "
                  f"of its targets at its most private setting ({heavy['leak_quantity']}, "
                  f"on {heavy['dataset']}) is acceptable to them" if heavy else "")
        out[protocol] = (
            f"At its most private setting ({key} = {strong[0]['level']:g}) it is "
            f"{abs(gap_strong) * 100:.1f} points {'below' if gap_strong < 0 else 'above'} its "
            f"non-private reference on average (worst {worst['gap_to_reference'] * 100:+.1f} on "
            f"{worst['dataset']}), {abs(gap_weak) * 100:.1f} points "
            f"{'below' if gap_weak < 0 else 'above'} at {key} = {weak[0]['level']:g}"
            f"{leak_text}{audit_text}"
            f"; it pays {hops:.0f} sequential hops on the critical path ({net:.2f} s predicted "
            f"on the {profile.upper()} profile per batch by the transcript replay): {choose} "
            "its guarantee "
            f"({registry.get(protocol).guarantee}) is the one your parties need" + accept
            + ("" if hops < 10 else ", and not when parties sit far apart on a slow network")
            + "." + note)
    return out


HEAVY_LEAK = 0.9
"""A success rate (or advantage) at least this large at a protocol's most private setting:
nearly every target of the attack recovered. Its advice then says "consider it only
when" and names the leak, whatever the accuracy."""


def _heavy_leak(strong: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The cell with the largest non-ε leakage at the most private setting, if heavy."""
    rated = [r for r in strong if r.get("leak_quantity") and not _is_epsilon(r["leak_quantity"])
             and math.isfinite(_number(r.get("leak_value")))]
    if not rated:
        return None
    top = max(rated, key=lambda r: float(r["leak_value"]))
    return top if float(top["leak_value"]) >= HEAVY_LEAK else None


def _leak_sentence(strong: Sequence[Mapping[str, Any]]) -> str:
    """What the attacks measured at a protocol's most private setting, for its advice."""
    measured = [r for r in strong if r.get("leak_quantity") and math.isfinite(r["leak_value"])]
    bounded = [r for r in strong if r.get("epsilon_lb_seeds")]
    text = ""
    if measured:
        top = max(measured, key=operator.itemgetter("leak_value"))
        over = (f"{top['leak_seeds']} of {top['seeds']} seeds with a finite value"
                if top["leak_seeds"] < top["seeds"] else f"{top['seeds']} seeds")
        if not _is_epsilon(top["leak_quantity"]):
            return (f"; the strongest leakage its attacks measured there is "
                    f"{top['leak_value']:.3g} ({top['leak_quantity']}, mean over {over}, on "
                    f"{top['dataset']})")
        text = (f"; the largest mean ε point estimate of its attacks there is "
                f"{top['leak_value']:.3g} ({top['leak_quantity']}, on {top['dataset']}, over "
                f"{over}; a point estimate, not a bound)")
    if not bounded:
        return text
    cell = max(bounded, key=operator.itemgetter("empirical_epsilon_lb"))
    seed = max(bounded, key=operator.itemgetter("epsilon_lb_max"))
    tests = sum(r["epsilon_lb_seeds"] - r["seeds_undecided"] for r in bounded)
    above = sum(r["seeds_above"] for r in bounded)
    text += ("; as a lower bound, " + (
        f"every cell's ε lower bound there is {cell['empirical_epsilon_lb']:.3g}"
        if all(r["empirical_epsilon_lb"] == cell["empirical_epsilon_lb"] for r in bounded)
        else f"the largest cell ε lower bound there is {cell['empirical_epsilon_lb']:.3g} "
             f"(on {cell['dataset']})")
        + f", the largest single-seed 95% bound {seed['epsilon_lb_max']:.3g} "
          f"({seed['dataset']}, seed {seed['epsilon_lb_max_seed']})")
    if tests:
        text += (f", and {above} of {tests} per-seed bounds there exceed their promise "
                 f"({PER_SEED_ALPHA * tests:.1f} expected by chance if every promise held)")
    return text


# --------------------------------------------------------------------------- report
def write_report(spec: Comparison, rows: Sequence[Mapping[str, Any]], folder: Path, *,
                 command: str, seconds: float | None = None, quick: bool = False,
                 parallel: str | None = None, saved: bool = False) -> Path:
    """Write the comparison's tables, figures and report into ``folder``.

    ``compare.csv``/``.parquet`` (every run), ``compare-run.json`` (how the run was
    made: command, seconds, runtime, spec), ``compare-aggregate.csv``, four figures (each
    with its data as CSV) and ``compare.md``; returns the report's path. ``parallel``:
    how the cells ran when it overrode the spec's ``[compare].parallel`` (the command
    then gets the ``--runtime`` option that does so). ``saved``: the rows are the ones
    saved in ``folder`` (:func:`render_saved`); they are not written again.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ppknn.simulations.reporting import (
        Figure,
        Report,
        Run,
        Section,
        Series,
        Table,
        fmt,
        interval,
        jsonio,
        plot,
        write,
        write_rows,
    )
    from ppknn.simulations.reporting.csvio import columns_of
    from ppknn.simulations.reporting.markdown import table_lines

    folder.mkdir(parents=True, exist_ok=True)
    mode = parallel or spec.compare.parallel
    if mode != spec.compare.parallel and "--runtime" not in command:
        command += " --runtime " + ("ray" if mode == "ray" else "inprocess")
    if not saved:
        write_rows(folder / "compare.csv", rows)
        names = columns_of(rows)  # every row's keys (a column some rows lack is null there)
        pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in names} for r in rows]),
                       folder / "compare.parquet")
    (folder / "compare-run.json").write_text(jsonio.dumps(  # strict: NaN/inf as null
        {"command": command, "seconds": seconds, "quick": quick, "parallel": mode,
         "spec": spec.model_dump(mode="json")}) + "\n")
    agg = aggregate(rows)
    profiles = list(spec.profiles())
    columns = tuple(dict.fromkeys(k for r in agg for k in r))
    table = Table(name="compare-aggregate", columns=columns)
    for r in agg:
        table.add(**{c: r.get(c, math.nan) for c in columns})
    write_rows(folder / "compare-aggregate.csv", table.rows)
    run_name = spec.compare.name
    protocols = sorted({r["protocol"] for r in agg})
    def accuracy_against(name: str, title: str, xlabel: str, x: str, **kw: Any) -> Figure:
        """One accuracy figure (a line per protocol, a panel per dataset)."""
        return Figure(name=name, title=title, xlabel=xlabel, x=x, panel_by="dataset",
                      ylabel="accuracy (mean, 95% CI over seeds)", ylim=(0.0, 1.05), **kw,
                      series=tuple(Series(label=p, y="accuracy", low="accuracy_low",
                                          high="accuracy_high", where={"protocol": p})
                                   for p in protocols))

    figures = (
        accuracy_against("utility_vs_privacy_level", "Accuracy at each privacy level",
                         "privacy level (ordinal: 1 = most private)", "level_rank",
                         categorical=True),
        accuracy_against("utility_vs_leakage", "Accuracy against the measured leakage",
                         "attacks' leakage (mean point estimate)", "leak_value"),
        accuracy_against("utility_vs_cost", "Accuracy against predicted WAN time",
                         "predicted WAN time per batch (s, transcript replay)",
                         "network_wan_s", logx=True),
        accuracy_against("utility_vs_empirical_epsilon",
                         "Accuracy against the measured empirical ε (attacks and audit)",
                         "empirical ε lower bound (largest measured)", "empirical_epsilon"),
    )
    drawn = [r for r in table.rows if r["seeds"]]  # cells that ran
    kept = []
    for f in figures:  # a cell without a value on the figure's axis is left out of it
        ordered = sorted((r for r in drawn if isinstance(r.get(f.x), (int, float))
                          and math.isfinite(r[f.x])), key=operator.itemgetter("protocol", f.x))
        if ordered:  # (a figure with nothing to draw is left out of the report)
            drawn_table = Table(name=f.name, columns=columns, rows=ordered)
            plot(f, drawn_table, folder=folder, run=run_name)
            drawn_table.write_csv(folder / f.csv)  # the figure's data, as the report says
            kept.append(f)
    figures = tuple(kept)
    head = ("dataset", "protocol", "privacy", "accuracy [95% CI]", "macro-F1", "reference",
            "Gaussian NB", "ε spent", "attacks' leakage: mean point estimate (quantity)",
            "attacks' ε lower bound: cell / largest seed", "audit ε", "messages", "hops",
            "critical path", *(f"{p} s" for p in profiles), "Ray / in-process [95% CI]")
    body = [(r["dataset"], r["protocol"], f"{r['privacy_key']} = {r['level']:g}",
             f"{fmt(r['accuracy'])} {interval(r['accuracy_low'], r['accuracy_high'])}",
             fmt(r["macro_f1"]), f"{r['reference']}: {fmt(r['reference_accuracy'])}",
             fmt(r["gaussian_nb_accuracy"]), fmt(r["epsilon_spent"]),
             _leak_text(r), _bound_text(r),
             fmt(r["audit_epsilon_lb"]) if r["audit_seeds"] else "—",
             fmt(r["messages"]), fmt(r["hops"]), fmt(r["critical_hops"]),
             *(fmt(r[f"network_{p}_s"]) for p in profiles),
             (f"{fmt(r['ray_over_inprocess'])} {interval(r['ray_low'], r['ray_high'])}"
              if r["ray_cells"] else "—")) if r["seeds"] else
            (r["dataset"], r["protocol"], f"{r['privacy_key']} = {r['level']:g}",
             f"cannot run: {r['cannot_run']}", *("—",) * (12 + len(profiles)))
            for r in agg]
    ranks = ranking(agg)
    rank_head = tuple(ranks[0]) if ranks else ()
    runtime_lines = _runtime_table(spec, rows, table_lines)
    audit_lines = _audit_table(spec, agg, table_lines)
    promise_lines = _promise_section(agg, table_lines, recorded=any("leak_bound" in r
                                                                    for r in rows))
    advice_lines = [f"- **{p}**: {text}" for p, text in advice(agg).items()]
    units = [f"- **{e.name}**: `{e.privacy_key}` ∈ {e.levels} — {registry.get(e.name).guarantee}"
             for e in spec.protocol]
    nets = [f"- **{k}**: {v.latency_ms:g} ms per link, {v.bandwidth_mbps:g} Mbit/s"
            for k, v in spec.profiles().items()]
    report = Report(
        title=f"Comparison: {run_name}",
        run=Run(command=command, quick=quick, seconds=seconds,
                runtime="ray" if mode == "ray" else "inprocess"),
        intro=(f"{len(rows)} runs: {len(spec.compare.datasets)} datasets × "
               f"{len(spec.protocol)} protocols × their privacy levels × "
               f"{len(spec.compare.seeds)} seeds, "
               + ("fanned out over Ray tasks (each cell's parties in-process in its task)"
                  if mode == "ray" else "run one by one in one process")
               + (f"; the {sum(1 for r in rows if 'ray_over_inprocess' in r)} cells of "
                  "`[compare.runtime_compare]` also ran with their parties on Ray"
                  if any("ray_over_inprocess" in r for r in rows) else "")
               + ". Intervals are Student-t 95% over seeds."
               + (" This file was rendered from that run's saved rows (`compare.parquet`, "
                  "with `compare.csv`'s columns) by `python -m ppknn.simulations.compare "
                  f"{folder.as_posix()}`; the numbers are the run's." if saved else ""),),
        settings={"datasets": ", ".join(spec.compare.datasets),
                  "seeds": ", ".join(map(str, spec.compare.seeds)),
                  "base scenario": spec.base or "defaults"},
        sections=(
            Section(heading="How the axes are made comparable", text=(
                "**Utility**: accuracy and macro-F1 on the same split as the non-private "
                "reference each protocol declares (scikit-learn kNN or radius-kNN for the "
                "neighbour protocols, Gaussian NB for the NB models) and scikit-learn's "
                "Gaussian NB. An unanswered query counts as wrong.",
                "**Privacy**: each protocol's guarantee is in its own unit (below), so the levels "
                "are not comparable across protocols; the measured axis is the strongest leakage "
                "the run's default attacks found on its own transcript (`ppknn leakage`), named "
                "per cell. **Which attack**: " + LEAK_RULE + " "
                "Where an attack tests a distinguishing event (DP NB's membership inference, "
                "DP-TT's side inference) each seed gives an empirical ε **point estimate** and a "
                "one-sided 95% **lower bound**; otherwise the quantity is the attack's success "
                "rate (a disclosure probability, a reconstruction or label inference rate). "
                "*attacks' leakage* is the mean of the seeds' finite point estimates, with the "
                "quantity's name as the attack gives it: for an ε it is an estimate, not a bound, "
                "and can exceed the promised ε by chance. *attacks' ε lower bound* gives the "
                "cell's lower bound from its seeds' bounds and the largest single seed's (next "
                "section). A seed without a finite point estimate is left out of the mean, one "
                "without a finite bound out of the cell's bound, and each is counted (*n/a*). "
                "Attacks on a single run bound leakage from below, they guarantee nothing; the "
                "audit mode measures ε on neighbouring inputs.",
                *units,
                "**Cost**: messages and bytes from the transcript; hops on the critical path "
                "as the driver reports them; in-process protocol time (and, for the cells "
                "of `[compare.runtime_compare]`, the same cell's protocol time with its "
                "parties on Ray, measured in the same run); and the time predicted on a "
                "network by **replaying the transcript**: every message carries the "
                "messages its sender had received before sending it (and its sender's "
                "previous send), so a message leaves when those have arrived, a directed "
                "link carries one message at a time (bytes × 8 / bandwidth) and delivers "
                "it one latency later; the run takes until its last arrival. *critical "
                "path* counts the sequential hops (latencies) on the chain that sets that "
                "time: a ring pays one per owner per round, a central owner one round "
                "trip, independent exchanges overlap. Computation time is not modelled, "
                "nor a party's links sharing one network interface.",
                *nets)),
            Section(heading="Results", figures=figures, text=(
                "\n".join(table_lines(head, body)),)),
            *((Section(heading="The attacks' ε lower bounds against the promise",
                       text=tuple(promise_lines)),) if promise_lines else ()),
            Section(heading="Ranking", text=(
                "\n".join(table_lines(rank_head, ([fmt(v) if isinstance(v, float) else v
                                                   for v in r.values()] for r in ranks))),
                "Second column: among the settings whose measured empirical ε (the largest "
                "lower bound measured on the cell: the attacks' cell bound, or the "
                "audit's) is at most 1, the most accurate; accuracy with its 95% interval "
                "over seeds; *tied_with* lists the settings whose interval overlaps the "
                "winner's. An empirical ε is a lower bound: a setting enters because no "
                "measurement found more than ε = 1, not because it guarantees it. Settings "
                "without an empirical ε measurement (the ring's and the PCA release's "
                "attacks report success rates, not ε) do not enter it, nor those whose "
                "attacks left a seed without an ε bound (n/a: its most leaking seeds may "
                "be the missing ones).")),
            *((Section(heading="Audit: empirical ε at the same settings",
                       text=tuple(audit_lines)),) if audit_lines else ()),
            *((Section(heading="Wall time in-process and on Ray", text=tuple(runtime_lines)),)
              if runtime_lines else ()),
            Section(heading="When to choose which", text=tuple(advice_lines)),
        ),
    )
    return write(report, folder / "compare.md")


def _leak_text(r: Mapping[str, Any]) -> str:
    """The attacks' leakage cell of the results table: mean point estimate, quantity, n/a."""
    from ppknn.simulations.reporting.formatting import fmt

    n, errors = r["seeds"], r.get("leak_errors", 0)
    if not r.get("leak_quantity"):
        return (f"n/a (the leakage scorer failed on {errors} of {n} seeds: `leak_error` in "
                "compare.csv)" if errors else "—")
    value = fmt(r["leak_value"]) if math.isfinite(r["leak_value"]) else "n/a"
    missing = n - r["leak_seeds"]
    na = ""
    if missing:
        na = f" [{missing} of {n} seeds n/a" + (
            "" if not errors else ": the scorer failed]" if errors == missing
            else f", {errors} of them: the scorer failed") + ("]" if errors != missing else "")
    return f"{value}{na} ({r['leak_quantity']})"


def _bound_text(r: Mapping[str, Any]) -> str:
    """The attacks' ε lower bound cell: the cell's bound / the largest seed's, seeds above."""
    from ppknn.simulations.reporting.formatting import fmt

    if not _is_epsilon(r.get("leak_quantity", "")):
        return "—"
    m, n = r["epsilon_lb_seeds"], r["seeds"]
    if not m:
        return f"n/a (none of {n} seeds recorded a bound)"
    text = f"{fmt(r['empirical_epsilon_lb'])} / {fmt(r['epsilon_lb_max'])}"
    if r["seeds_above"]:
        text += f" (**{r['seeds_above']} of {m} seeds above ε = {r['leak_promise']:.3g}**)"
    return text + (f" [{n - m} of {n} seeds n/a]" if m < n else "")


def _promise_section(agg: Sequence[Mapping[str, Any]], table_lines: Callable[..., list[str]],
                     *, recorded: bool) -> list[str]:
    """The attacks' per-seed ε lower bounds against each cell's promise, tested as a family."""
    from scipy import stats

    from ppknn.simulations.reporting.formatting import fmt

    cells = [r for r in agg if r.get("seeds") and _is_epsilon(r.get("leak_quantity", ""))]
    if not cells:
        return []
    alpha = PER_SEED_ALPHA
    most = max(r["epsilon_lb_seeds"] for r in cells)
    _, k, conf = cell_bound([0.0] * most, alpha)
    intro = (
        f"Each seed's attack gives a one-sided lower bound on ε (Clopper-Pearson on the "
        f"test's hit rates: 95% for DP NB's membership test, 97.5% for DP-TT's side "
        f"inference), so each exceeds the true ε with probability at most {alpha:.0%}. A "
        f"cell's lower bound is the k-th largest of its m per-seed bounds, k the smallest "
        f"count with P(Binomial(m, {alpha:g}) ≥ k) ≤ {alpha:g} (k = {k} for m = {most}): "
        f"the true ε can lie below it only if at least k independent seeds' bounds exceeded "
        f"it, so it is itself a lower bound at {1 - alpha:.0%} or more ({conf:.1%} for m = "
        f"{most}). The largest single seed's bound is shown beside it but is no such bound: "
        f"of {most} seeds' {1 - alpha:.0%} bounds the largest exceeds the truth with "
        f"probability up to {1 - (1 - alpha) ** most:.0%}.")
    na = ("A seed is n/a when its attack recorded no finite bound; it is left out of the "
          "cell's bound and counted, and a cell with n/a seeds stays out of the ranking at "
          "empirical ε ≤ 1." + (
          " A seed whose point estimate is infinite (one arm of the test never fired) keeps "
          "its finite bound but is left out of the mean point estimate, which then "
          "understates the cell's leakage." if recorded else
          " In this file a seed whose point estimate is infinite (one arm of the test never "
          "fired: no member rejected by the membership test, or the server right on every "
          "decision) was recorded without its bound, so the n/a seeds are the ones where "
          "the attack did best: a cell with n/a seeds understates its leakage, in its mean "
          "point estimate and in its bound."))
    promise = ("A cell's promise is the ε its attack is compared with (per released model "
               "for DP NB, per decision for DP-TT), as the attack records it" if recorded else
               "This file records no promise with the attacks, so a cell's promise is its "
               "audit's, which is in the same unit (ε per released model for DP NB, per "
               "decision for DP-TT); a cell without an audit has none: a positive bound "
               "there is *undecided*, a zero bound exceeds no promise")
    tests_all = above_all = 0
    body = []
    for protocol, rank in sorted({(r["protocol"], r["level_rank"]) for r in cells}):
        rs = [r for r in cells if (r["protocol"], r["level_rank"]) == (protocol, rank)]
        bounds = sum(r["epsilon_lb_seeds"] for r in rs)
        undecided = sum(r["seeds_undecided"] for r in rs)
        tests, above = bounds - undecided, sum(r["seeds_above"] for r in rs)
        tests_all, above_all = tests_all + tests, above_all + above
        promises = sorted({r["leak_promise"] for r in rs if math.isfinite(r["leak_promise"])})
        shown = ("not recorded" if not promises else f"{promises[0]:.3g}" if len(promises) == 1
                 else f"{promises[0]:.3g} to {promises[-1]:.3g}")
        tail = float(stats.binom.sf(above - 1, tests, alpha)) if above else 1.0
        top = max((r["undecided_max"] for r in rs if math.isfinite(r["undecided_max"])),
                  default=math.nan)
        body.append((protocol, f"{rs[0]['privacy_key']} = {rs[0]['level']:g}", str(len(rs)),
                     str(bounds), str(sum(r["seeds"] - r["epsilon_lb_seeds"] for r in rs)),
                     shown, f"{undecided} (largest {top:.3g})" if undecided else "0",
                     str(tests), str(above), f"{alpha * tests:.1f}",
                     f"{tail:.2g}" if tests else "—"))
    family = (
        f"Comparing every per-seed bound with its promise makes many tests: if every promise "
        f"held, each would exceed it with probability at most {alpha:.0%}, independently, so "
        f"about {alpha:.0%} of them are expected above it by chance. The table counts them "
        f"per setting, with that expectation and the probability of at least the observed "
        f"count if every promise held (binomial tail; a small value points at a broken "
        f"promise). In all, {above_all} of {tests_all} per-seed bounds exceed their promise, "
        f"against {alpha * tests_all:.1f} expected by chance.")
    lines = [intro, na + " " + promise + ".", family, "\n".join(table_lines(
        ("protocol", "setting", "cells", "per-seed bounds", "n/a seeds", "promised ε",
         "undecided: > 0, no promise", "bounds compared", "above the promise",
         f"expected by chance ({alpha:.0%})", "P(at least this many | promises hold)"),
        body))]
    flagged = [r for r in cells if r["seeds_above"]]
    if flagged:
        lines.append("The cells with a seed's bound above the promise (each a single "
                     f"{1 - alpha:.0%} bound among the family above; the cell's own bound "
                     "is what the cell supports):")
        lines.append("\n".join(table_lines(
            ("dataset", "protocol", "setting", "promised ε", "seeds above (their bounds)",
             "seeds with a bound", "median seed bound", "cell's ε lower bound"),
            ((r["dataset"], r["protocol"], f"{r['privacy_key']} = {r['level']:g}",
              f"{r['leak_promise']:.3g}", r["above_promise"], str(r["epsilon_lb_seeds"]),
              fmt(r["epsilon_lb_median"]),
              f"{fmt(r['empirical_epsilon_lb'])} ({_ordinal(r['epsilon_lb_rank'])} largest "
              f"of {r['epsilon_lb_seeds']}, {r['epsilon_lb_confidence']:.1%})")
             for r in flagged))))
    return lines


def _runtime_table(spec: Comparison, rows: Sequence[Mapping[str, Any]],
                   table_lines: Callable[..., list[str]]) -> list[str]:
    """Per protocol: the Ray / in-process ratio of protocol wall time over the compared cells."""
    rc = spec.compare.runtime_compare
    measured = [r for r in rows if "ray_over_inprocess" in r
                and math.isfinite(r["ray_over_inprocess"])]
    if rc is None or not measured:
        return []
    body = []
    for protocol in sorted({r["protocol"] for r in measured}):
        rs = [r for r in measured if r["protocol"] == protocol]
        ratio, lo, hi = _t_interval([r["ray_over_inprocess"] for r in rs])
        local = statistics.fmean(r["protocol_s"] for r in rs)
        remote = statistics.fmean(r["ray_protocol_s"] for r in rs)
        start = statistics.fmean(r["ray_startup_s"] for r in rs)
        same = sum(bool(r["ray_same_row"]) for r in rs)
        body.append((protocol, str(len(rs)), f"{local:.4f}", f"{remote:.4f}",
                     f"{ratio:.2f} [{lo:.2f}, {hi:.2f}]", f"{start:.2f}",
                     f"{same} of {len(rs)}"))
    where = (f"seeds {rc.seeds}; datasets "
             f"{', '.join(rc.datasets) if rc.datasets else 'all'}; protocols "
             f"{', '.join(rc.protocols) if rc.protocols else 'all'}; layout {rc.layout}")
    return [
        f"Each of these cells ({where}) ran twice in this run: in-process, then with its "
        "parties as Ray actors on this machine. The ratio is the protocol's wall time on "
        "Ray over in-process in the same cell (95% t interval over the cells); actor "
        "start-up is not in the protocol time and is shown apart. Small runs are dominated "
        "by per-call overheads, so the ratio says what Ray costs at this size, not at "
        "scale; the machine was shared, so times carry its load.",
        "\n".join(table_lines(("protocol", "cells", "in-process s (mean)", "Ray s (mean)",
                               "Ray / in-process [95% CI]", "Ray start-up s",
                               "same row on Ray"), body))]


def _audit_table(spec: Comparison, agg: Sequence[Mapping[str, Any]],
                 table_lines: Callable[..., list[str]]) -> list[str]:
    """The audited cells: the promise, the attacks' and the audit's ε lower bounds."""
    au = spec.compare.audit
    rows = [r for r in agg if r.get("audit_seeds")]
    if au is None or not rows:
        return []
    from ppknn.simulations.leakage.audit import audited

    covered = set(audited())
    skipped = sorted({e.name for e in spec.protocol} - covered)
    body = [(r["dataset"], r["protocol"], f"{r['privacy_key']} = {r['level']:g}",
             fmt_num(r["audit_bound"]), fmt_num(r["empirical_epsilon_lb"]),
             fmt_num(r["audit_epsilon_lb"]), str(r["audit_seeds"]),
             "yes" if r["audit_epsilon_lb"] <= r["audit_bound"] + 1e-9 else "**no**")
            for r in rows]
    where = (f"seeds {au.seeds}; datasets {', '.join(au.datasets) if au.datasets else 'all'}"
             f"; {au.trials} reruns per neighbouring input; {au.confidence:.0%} one-sided "
             "Clopper-Pearson")
    return [
        f"The audit mode (`ppknn audit`) reruns a cell's release on the original input and "
        f"on a neighbour (one training row removed, or the query reflected for DP-TT) and "
        f"lower-bounds the ε it spends ({where}). It covers the protocols that promise ε "
        f"({', '.join(sorted(covered & {e.name for e in spec.protocol}))}); "
        + (f"{', '.join(skipped)} promise no ε (a disclosure probability, an "
           "amplification) and are measured by their attacks only. " if skipped else "")
        + "The promise column is the ε the audited unit is charged (per request, per "
        "model, per decision); a lower bound above it would be a broken promise. An audit "
        "is a lower bound with limited power: with n test draws per input (95% "
        "Clopper-Pearson) it cannot certify more than about ln(n / 3) (2.8 at the 50 test "
        "draws per input of 100 reruns, as for DP-TT and DP NB here; DP owner audits draw "
        "25 releases per rerun), so a large promise is never shown to be "
        "exceeded, and 0 means that no ε was detected, not that none is spent.",
        "\n".join(table_lines(("dataset", "protocol", "setting", "promised ε (audited unit)",
                               "attacks' ε lower bound (cell)", "audit ε lower bound",
                               "audited seeds", "within the promise"), body))]


def fmt_num(v: Any) -> str:
    """A number for a table (— when missing)."""
    return f"{v:.3g}" if isinstance(v, (int, float)) and math.isfinite(v) else "—"


def load_rows(folder: Path) -> list[dict[str, Any]]:
    """The per-run rows a comparison saved in ``folder``, as :func:`run_comparison` gave them.

    From ``compare.parquet`` (full precision; a null is a key the row did not have), with
    any column only ``compare.csv`` holds added from it (its floats have six digits).
    """
    import pyarrow.parquet as pq

    from ppknn.simulations.reporting.csvio import read_rows

    folder = Path(folder)
    if not (folder / "compare.parquet").is_file():
        raise ConfigError(f"{str(folder)!r} holds no compare.parquet: give the folder of a "
                          "comparison run")
    rows = [{k: v for k, v in r.items() if v is not None}
            for r in pq.read_table(folder / "compare.parquet").to_pylist()]
    if (folder / "compare.csv").is_file():
        more = read_rows(folder / "compare.csv")
        if [r.get("run_id") for r in more] != [r.get("run_id") for r in rows]:
            raise DataError(f"{folder}: compare.csv and compare.parquet hold different runs")
        for row, extra in zip(rows, more, strict=True):
            row.update({k: v for k, v in extra.items() if k not in row and v is not None})
    return rows


def render_saved(folder: Path, spec: str | os.PathLike[str] | Mapping[str, Any] | None = None,
                 *, command: str | None = None, seconds: float | None = None,
                 parallel: str | None = None) -> Path:
    """Write ``folder``'s report again from the rows its run saved (nothing is re-run).

    The run's facts (command, seconds, runtime, spec) come from ``compare-run.json``;
    arguments given here stand in for a fact the folder does not record (they are
    recorded there with the report).
    """
    import json

    folder = Path(folder)
    facts_file = folder / "compare-run.json"
    facts = json.loads(facts_file.read_text()) if facts_file.is_file() else {}
    source = spec if spec is not None else facts.get("spec")
    if source is None:
        raise ConfigError(f"{str(folder)!r} records no spec (no compare-run.json): give it")
    if command is None and "command" not in facts:
        raise ConfigError(f"{str(folder)!r} records no command (no compare-run.json): give it")
    return write_report(load_comparison(source), load_rows(folder), folder,
                        command=command if command is not None else facts["command"],
                        seconds=seconds if seconds is not None else facts.get("seconds"),
                        quick=bool(facts.get("quick", False)),
                        parallel=parallel or facts.get("parallel"), saved=True)


def main(argv: Sequence[str] | None = None) -> Path:
    """``python -m ppknn.simulations.compare FOLDER``: :func:`render_saved` from the shell."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m ppknn.simulations.compare",
        description="Write a comparison folder's report again from its saved rows.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--spec", help="the comparison spec TOML, when the folder has no "
                        "compare-run.json")
    parser.add_argument("--command", help="the command that made the run")
    parser.add_argument("--seconds", type=float, help="the run's wall time")
    parser.add_argument("--runtime", choices=("inprocess", "ray"),
                        help="how the cells ran, when the command's --runtime overrode the spec")
    args = parser.parse_args(argv)
    parallel = {"inprocess": "sequential", "ray": "ray", None: None}[args.runtime]
    return render_saved(args.folder, args.spec, command=args.command, seconds=args.seconds,
                        parallel=parallel)


QUICK_SPEC: dict[str, Any] = {
    "compare": {"name": "compare-quick", "output": "results/compare-quick",
                "datasets": ["sklearn:iris", "sklearn:wine"], "seeds": [0, 1],
                "parallel": "ray",
                "audit": {"seeds": [0], "datasets": ["sklearn:iris"]}},
    "base": {"data": {"scale": "minmax", "max_queries": 40}},
    "dataset_settings": {  # public domain bounds (declared, not read from the data)
        "sklearn:iris": {"data": {"bounds": {"lower": [4.0, 2.0, 1.0, 0.0],
                                             "upper": [8.0, 4.5, 7.0, 2.6]}}},
        "sklearn:wine": {"data": {"bounds": {
            "lower": [11.0, 0.5, 1.0, 10.0, 70.0, 0.9, 0.3, 0.1, 0.4, 1.0, 0.4, 1.2, 250.0],
            "upper": [15.0, 6.0, 3.5, 30.0, 170.0, 4.0, 5.5, 0.7, 3.6, 13.0, 1.8, 4.0,
                      1700.0]}}},
    },
}
"""The protocol-free part of the spec of ``ppknn compare --quick`` (:func:`quick_spec`)."""


def quick_spec() -> dict[str, Any]:
    """The spec of ``ppknn compare --quick``: every protocol, two levels, two small datasets.

    Its protocols are those whose plugins give comparison defaults (the
    ``compare_defaults`` hook: ``privacy_key``, ``quick_levels``, optional
    ``settings`` and ``quick_audit``), in registry order; the audit covers
    those with ``quick_audit``.
    """
    spec = copy.deepcopy(QUICK_SPEC)
    entries, audited = [], []
    for plugin in registry.plugins():
        defaults = plugin.compare_defaults()
        if defaults is None:
            continue
        entry = {"name": plugin.name, "privacy_key": defaults["privacy_key"],
                 "levels": list(defaults["quick_levels"])}
        if defaults.get("settings"):
            entry["settings"] = dict(defaults["settings"])
        entries.append(entry)
        if defaults.get("quick_audit"):
            audited.append(plugin.name)
    spec["protocol"] = entries
    spec["compare"]["audit"]["protocols"] = audited
    return spec



__all__ = ["PER_SEED_ALPHA", "PROFILES", "Comparison", "NetworkProfile", "QUICK_SPEC",
           "advice", "aggregate", "cell_bound", "leak_cell", "load_comparison", "load_rows",
           "main", "predict_network", "quick_spec", "ranking", "render_saved", "run_cell",
           "run_comparison", "write_report"]


if __name__ == "__main__":  # pragma: no cover
    main()
