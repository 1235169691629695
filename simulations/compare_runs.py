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
  success rate; :data:`LEAK_RULE`), named, with its baseline (an attacker without the
  transcript, on the same targets) and the advantage over it with its 95% interval
  (:data:`ADVANTAGE`); for the cells of ``[compare.audit]``, the
  audit mode's empirical ε lower bound at the same settings; and ``empirical_epsilon``,
  the largest ε lower bound measured on the run;
* **cost**: messages, bytes, hops on the critical path, protocol wall time in-process (and
  on Ray for the cells of ``[compare.runtime_compare]``, with the ratio, in the same run),
  and the **predicted time on a network** per profile: the run's transcript replayed over
  its messages' sizes and causal order (:func:`ppknn.simulations.network.replay`).

The report (``compare.md``, :mod:`ppknn.simulations.compare_report`) aggregates over seeds
with Student-t 95% intervals (a cell's ε lower bound from its seeds' bounds:
:func:`cell_bound`; the per-seed bounds against the promise, counted against chance; a
cell's advantage: :func:`advantage_cell`), draws utility-privacy and utility-cost plots
with a panel per dataset, names each protocol's strongest leak by advantage over
baseline, ranks the protocols per dataset (at empirical ε ≤ 1, with intervals) and
states, per protocol, when to choose it and when not, from the measured rows. It can be
written again from a finished run's saved rows without re-running anything
(``render_saved``; ``python -m ppknn.simulations.compare FOLDER``).
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


def _finite(v: Any) -> float:
    """``v`` as a float when it is a finite number, else NaN."""
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else math.nan


ADVANTAGE = ("leak_baseline", "leak_advantage", "leak_advantage_low", "leak_advantage_high")
"""A leak's baseline (an attacker without the transcript, on the same targets) and its
advantage over it with the 95% interval, as the leakage row gives them (NaN when none)."""


def _advantage(r: Any) -> list[float]:
    """A leakage row's :data:`ADVANTAGE` figures, in that order."""
    return [_finite(getattr(r, k, math.nan))
            for k in ("baseline", "advantage", "advantage_low", "advantage_high")]


def _ranked_pick(rows: Sequence[Any]) -> tuple[list[Any], dict[str, float], dict[str, list]]:
    """The rows of the ranked attack with the largest figure (empty: none is ranked).

    With every ranked attack's figure, and its point estimate and :func:`_advantage` from
    the row that gives that figure.
    """
    rates = [r for r in rows if _rankable(r)]
    if not rates:
        return [], {}, {}
    candidates: dict[str, float] = {}
    details: dict[str, list] = {}
    for r in rates:
        name = f"{r.attack}: {r.quantity}"
        score = _leak_score(r)
        if math.isfinite(score) and score > candidates.get(name, -math.inf):
            candidates[name] = score
            details[name] = [_finite(r.value), *_advantage(r)]
    if candidates:  # the largest figure; equal figures: the first name
        first = min(candidates, key=lambda n: (-candidates[n], n))
    else:
        first = min(f"{r.attack}: {r.quantity}" for r in rates)
    return [r for r in rates if f"{r.attack}: {r.quantity}" == first], candidates, details


def _strongest_leak(rows: Sequence[Any]) -> dict[str, Any]:
    """One leakage figure per run, chosen by :data:`LEAK_RULE`.

    Where an attack yields an empirical ε: the row with the largest lower bound
    (``empirical_epsilon_lb``, its one-sided 95% bound), with its point estimate in
    ``leak_value`` (infinite when one arm of the test never fired; the bound is still
    finite) and the ε the protocol promises for that quantity in ``leak_bound``.
    Otherwise the ranked attack whose most exposed target has the largest advantage over
    baseline (or success rate, while rows carry no baseline), named in ``leak_quantity``;
    ``leak_candidates`` holds every ranked attack's figure (JSON), so a cell can name the
    attack that is largest over its seeds (:func:`leak_cell`), and ``leak_details`` each
    one's point estimate and :data:`ADVANTAGE` figures. The chosen row's baseline and
    advantage with its interval are in the :data:`ADVANTAGE` columns.
    """
    import json

    empty = {"leak_quantity": "", "leak_value": math.nan, "leak_ci_low": math.nan,
             "leak_ci_high": math.nan, "empirical_epsilon_lb": math.nan,
             "leak_bound": math.nan, **dict.fromkeys(ADVANTAGE, math.nan)}
    eps = [r for r in rows if _is_epsilon(r.quantity)]
    candidates: dict[str, float] = {}
    details: dict[str, list] = {}
    if eps:
        pick = eps
    else:
        pick, candidates, details = _ranked_pick(rows)
        if not pick:
            return empty
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
    out = {"leak_quantity": f"{best.attack}: {best.quantity}", "leak_value": best.value,
           "leak_ci_low": best.ci_low, "leak_ci_high": best.ci_high,
           "empirical_epsilon_lb": best.ci_low if eps else math.nan,
           "leak_bound": _finite(getattr(best, "bound", None)),
           **dict(zip(ADVANTAGE, _advantage(best), strict=True))}
    if candidates:
        out["leak_candidates"] = json.dumps(candidates, sort_keys=True, ensure_ascii=False)
        out["leak_details"] = json.dumps(details, sort_keys=True, ensure_ascii=False)
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


def replay_audited() -> list[str]:
    """The protocols the replay audit covers: those whose plugins give an ``audit_setup``.

    (They promise ε; a protocol with only a worst-case model is not audited here.)
    """
    return [p.name for p in registry.plugins()
            if type(p).audit_setup is not registry.ProtocolPlugin.audit_setup]


def _audited(scenario: Any, settings: Mapping[str, Any] | None, name: str) -> dict[str, Any]:
    """The audit's empirical ε lower bound for this cell.

    NaN when the cell is not audited or the replay audit does not cover the protocol
    (:func:`replay_audited`).
    """
    from ppknn.simulations.leakage.audit import audit_scenario

    out = {"audit_epsilon_lb": math.nan, "audit_bound": math.nan, "audit_note": ""}
    if settings is None or name not in replay_audited():
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


def _figures(r: Mapping[str, Any], quantity: str) -> list[float]:
    """A run's point estimate and :data:`ADVANTAGE` figures for the attack ``quantity``.

    From its ``leak_details`` where the run ranked that attack, else from its own columns
    where it named it (NaN otherwise).
    """
    import json

    text = r.get("leak_details")
    if isinstance(text, str) and text:
        got = json.loads(text).get(quantity)
        if got is not None:
            return [_number(v) for v in got]
    if r.get("leak_quantity") == quantity:
        return [_number(r.get(k)) for k in ("leak_value", *ADVANTAGE)]
    return [math.nan] * (1 + len(ADVANTAGE))


def advantage_cell(figures: Sequence[Sequence[float]], *, rate: bool = True
                   ) -> dict[str, Any]:
    """A cell's baseline and advantage from its seeds' ``(baseline, advantage, low, high)``.

    ``leak_advantage`` is the mean over the ``leak_advantage_seeds`` seeds with a finite
    advantage, with the Student-t 95% interval over them; when they all agree (or one
    seed has one) that interval has no width, and the mean of the seeds' own 95% intervals
    stands in. ``rate``: the advantage is a difference of proportions, so the interval is
    clipped to [-1, 1]. ``leak_baseline``: the mean baseline.

    >>> got = advantage_cell([(0.1, 0.9, 0.8, 0.95), (0.1, 0.9, 0.7, 0.97)])
    >>> got["leak_advantage"], got["leak_advantage_low"], round(got["leak_advantage_high"], 3)
    (0.9, 0.75, 0.96)
    """
    rows = [f for f in figures if math.isfinite(f[1])]
    base = [f[0] for f in figures if math.isfinite(f[0])]
    mean, low, high = _t_interval([f[1] for f in rows])
    if rows and not high > low:
        lows = [f[2] for f in rows if math.isfinite(f[2])]
        highs = [f[3] for f in rows if math.isfinite(f[3])]
        if len(lows) == len(highs) == len(rows):
            low, high = statistics.fmean(lows), statistics.fmean(highs)
    if rate and rows:
        low, high = max(-1.0, low), min(1.0, high)
    return {"leak_baseline": statistics.fmean(base) if base else math.nan,
            "leak_advantage": mean, "leak_advantage_low": low, "leak_advantage_high": high,
            "leak_advantage_seeds": len(rows)}


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
    recorded promise (the largest: ``undecided_max``). The named attack's baseline and
    advantage over it: :func:`advantage_cell`.
    """
    quantity = next((str(r["leak_quantity"]) for r in rs if r.get("leak_quantity")), "")
    values = [_number(r.get("leak_value")) for r in rs]
    per_seed = _candidates(rs)
    if per_seed:  # the ranked attack with the largest mean over the seeds (LEAK_RULE)
        means = {name: statistics.fmean(vs) for name, vs in per_seed.items()}
        quantity = min(means, key=lambda n: (-means[n], n))
        values = [_number(c.get(quantity)) for c in (_parse(r) for r in rs)]
        if any(r.get("leak_details") for r in rs):  # the point estimates, not the ranking
            values = [_number(_figures(r, quantity)[0]) for r in rs]
    finite = [v for v in values if math.isfinite(v)]
    out: dict[str, Any] = {
        "leak_quantity": quantity, "leak_value": statistics.fmean(finite) if finite else math.nan,
        "leak_seeds": len(finite), "leak_infinite": sum(math.isinf(v) for v in values),
        "leak_errors": sum(bool(r.get("leak_error")) for r in rs),
        **advantage_cell([_figures(r, quantity)[1:] for r in rs],
                         rate=not _is_epsilon(quantity))}
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



__all__ = ["ADVANTAGE", "PER_SEED_ALPHA", "PROFILES", "Comparison", "NetworkProfile",
           "QUICK_SPEC", "advantage_cell", "aggregate", "cell_bound", "leak_cell",
           "load_comparison", "predict_network", "quick_spec", "ranking",
           "replay_audited", "run_cell", "run_comparison"]
