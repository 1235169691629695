"""The paper's experiments (Mukherjee et al. 2008, §6) as functions of a :class:`Settings`.

The reproduction runs the releases as scenario grids (:func:`paper_grids`, one
``pca-perturbation`` scenario run per release, dataset and repetition, through the
registry; :func:`run_grid_experiments`). A direct path over runtime sessions
serves scripts: for every dataset and repetition, a sanitizer party (90% of the rows) and a
miner party (the other 10%, at most ``max_queries`` of them classified) run
the release protocol once per scheme and parameter (:func:`paper_jobs`);
the miner classifies its rows and the attacks run over its view read back
from the transcript (:func:`~ppknn_reproductions.experiments.pca_evaluation.run_session`).
:func:`worst_case` and :func:`additive_audit` measure the worst-case
privacy (Fig. 6) and :func:`timing` the execution time (Figs. 10-11).
``ppknn_reproductions.mukherjee`` turns the results into tables, plots
and the report.

Examples
--------
>>> [j.request.label for j in paper_jobs(4, QUICK)][:5]
['PCA no noise', 'PCA-radius b=0.1', 'PCA-radius b=0.2', 'PCA-radius b=0.3', 'No-PCA Laplace b=0.1']
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ppknn.core.data import DomainBounds
from ppknn.core.rng import SeedPolicy
from ppknn.core.runtime import Runtime, make_runtime
from ppknn.core.runtime.pool import fan_out
from ppknn.protocols.pca_perturbation.datasets import (
    PAPER_DATASETS,
    PaperDataset,
    load_paper_dataset,
)
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.privacy import audit_column, rho2_bound
from ppknn.protocols.pca_perturbation.protocol import MiningPlan
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest
from ppknn.simulations.grids import Grid, run_grids
from ppknn.simulations.reporting import jsonio
from ppknn_reproductions.experiments.pca_evaluation import Job, ReleaseResult, Split, run_session
from ppknn_reproductions.experiments.pca_timing import time_mining, time_sanitize

BS = (0.1, 0.2, 0.3)
SDS = (0.1, 0.25, 0.5)
RHO1 = 0.001
LARGE = ("synthetic-2", "synthetic-8")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Sizes of one reproduction run.

    Parameters
    ----------
    reps, reps_large:
        Repetitions per dataset (``reps_large`` for the 100,000-row synthetic sets).
    rows:
        Rows to generate per generated dataset (default: the paper's sizes).
    max_queries:
        Test rows the miner classifies per repetition (a random subset of the 10% split).
    max_validation:
        Rows validated by the miner's cross-validation for best k.
    audit_samples, audit_confidence:
        Samples per input and confidence of the empirical amplification audit.
    timing_n, timing_m, timing_queries:
        Sizes of the execution-time sweeps.
    datasets:
        Which datasets to run.
    workers:
        ``> 1`` fans the grid runs out over Ray tasks (:func:`run_grids`, one CPU each);
        ``1`` runs them one after the other here (:func:`run_experiments`: the sessions).
    seed:
        Root seed of everything.
    """

    reps: int
    reps_large: int
    rows: dict[str, int]
    max_queries: int
    max_validation: int
    audit_samples: int
    audit_confidence: float
    timing_n: tuple[int, ...]
    timing_m: tuple[int, ...]
    timing_queries: int
    datasets: tuple[str, ...] = PAPER_DATASETS
    workers: int = 1
    seed: int = 2008


QUICK = Settings(reps=2, reps_large=1, rows={"waveform": 1000, "synthetic-2": 3000,
                                             "synthetic-8": 3000},
                 max_queries=200, max_validation=200, audit_samples=20_000,
                 audit_confidence=0.999, timing_n=(2000, 4000), timing_m=(10, 20),
                 timing_queries=100)
FULL = Settings(reps=20, reps_large=5, rows={}, max_queries=500, max_validation=500,
                audit_samples=200_000, audit_confidence=1 - 1e-6,
                timing_n=(20_000, 40_000, 60_000, 80_000, 100_000),
                timing_m=(20, 40, 60, 80, 100), timing_queries=500, workers=2)


logger = logging.getLogger(__name__)

Log = Callable[[str], None]
"""Where progress messages go: a callable taking one line of text."""


def _logger(log: Log | None) -> Log:
    """``log``, or the module logger's ``info`` when none is given."""
    return log if log is not None else logger.info


def paper_jobs(m: int, settings: Settings) -> list[Job]:
    """The releases of one repetition: b = 0 reference, PCA-radius, No-PCA, Rand-P/U/N."""
    s = max(1, m // 2)
    best = MiningPlan(methods=("best-k",), max_validation=settings.max_validation)
    three = MiningPlan(methods=("radius", "best-k", "fixed-k"),
                       max_validation=settings.max_validation)
    reqs: list[tuple[dict, MiningPlan | None, bool]] = [
        ({"scheme": "pca-no-noise", "s": s},
         MiningPlan(methods=("best-k", "fixed-k"), max_validation=settings.max_validation),
         False)]
    reqs += [({"scheme": "pca-laplace", "b": b, "s": s}, three, True) for b in BS]
    reqs += [({"scheme": "laplace", "b": b}, None, True) for b in BS]
    reqs += [({"scheme": "rand-p", "k": k}, best, True)
             for k in sorted({max(1, m // 4), max(1, m // 2), m - 1})]
    reqs += [({"scheme": sch, "sd": sd}, best, True) for sch in ("rand-u", "rand-n") for sd in SDS]
    return [Job(request=ReleaseRequest(round=i + 1, **r), plan=p, attack=a)
            for i, (r, p, a) in enumerate(reqs)]


def make_split(ds: PaperDataset, rng: np.random.Generator, max_queries: int) -> Split:
    """A random 90/10 split; the miner gets at most ``max_queries`` of the 10%.

    The bounds are the training rows' minimum and maximum. Deviation: the paper normalises
    the whole table before splitting, so its bounds read the test rows; no parameter of a
    release here does (the miner clips its rows to the released bounds).
    """
    n = len(ds.y)
    perm = rng.permutation(n)
    n_test = max(1, round(0.1 * n))
    test, train = perm[:n_test][:max_queries], perm[n_test:]
    # deviation: the paper normalises the whole table (test rows included) before splitting
    bounds = DomainBounds(ds.X[train].min(axis=0), ds.X[train].max(axis=0))
    return Split(X_train=ds.X[train], y_train=ds.y[train], X_test=ds.X[test],
                 y_test=ds.y[test], n_classes=ds.n_classes, bounds=bounds)


# --------------------------------------------------------------------------- experiments
def _load(name: str, settings: Settings) -> PaperDataset:
    return load_paper_dataset(name, rng=SeedPolicy(root=settings.seed).generator("data", name),
                              rows=settings.rows.get(name))


def _session(ds: PaperDataset, rep: int, settings: Settings, factory: Callable[[], Runtime],
             workdir: Path) -> list[dict]:
    split = make_split(ds, SeedPolicy(root=settings.seed).generator("split", ds.name, rep),
                       settings.max_queries)
    results = run_session(split, paper_jobs(ds.X.shape[1], settings), make_runtime=factory,
                          seed=settings.seed + rep, run_id=f"mukherjee-{ds.name}-{rep}",
                          workdir=workdir)
    return [_flatten(ds.name, rep, r) for r in results]


@dataclass(frozen=True)
class SessionJob:
    """One (dataset, repetition) session: what a worker needs to run it.

    ``dataset`` is the loaded dataset when the job runs here; ``None`` makes
    the job load it itself (same seed, same rows), so a job sent to a Ray
    task carries only names and sizes.
    """

    name: str
    rep: int
    settings: Settings
    workdir: Path
    runtime: str = "inprocess"
    dataset: PaperDataset | None = None


def run_session_job(job: SessionJob) -> list[dict]:
    """Run one session with single-threaded BLAS; one flat row per release.

    Every seed derives from the settings, the dataset and the repetition, so
    the rows do not depend on where or in which order the job runs.
    """
    ds = job.dataset if job.dataset is not None else _load(job.name, job.settings)
    with threadpool_limits(limits=1, user_api="blas"):
        return _session(ds, job.rep, job.settings, partial(make_runtime, job.runtime),
                        job.workdir)


def run_experiments(settings: Settings, runtime: str, workdir: Path, *, workers: int = 1,
                    log: Log | None = None) -> tuple[dict[str, PaperDataset], list[dict]]:
    """Every (dataset, repetition) session; one flat row per release.

    With the in-process runtime and ``workers > 1`` the sessions are fanned
    out over Ray tasks (:func:`core.runtime.pool.fan_out`); otherwise they
    run one after the other here (on Ray the parties are Ray actors
    already). Every session has its own seeds, so the rows are the same
    whatever ``workers`` is.

    Ray's lifetime belongs to the caller: the fan-out starts Ray if it is
    not running and leaves it running. Progress goes to ``log`` (default:
    this module's logger at INFO level).
    """
    say = _logger(log)
    datasets = {name: _load(name, settings) for name in settings.datasets}
    tasks = [(name, rep) for name in settings.datasets
             for rep in range(settings.reps_large if name in LARGE else settings.reps)]
    use_ray = runtime == "inprocess" and workers > 1
    # TODO(runtime lifetime): with runtime="ray" every session starts its own RayRuntime, and
    # RayRuntime.shutdown() calls ray.shutdown() when it is the last runtime using the Ray
    # instance it started, so Ray restarts between sessions. core/runtime/ray_runtime.py has
    # no option to leave Ray running; once it has one, the caller should own one Ray lifetime
    # for all sessions.
    jobs = [SessionJob(name=name, rep=rep, settings=settings, workdir=workdir,
                       runtime=runtime, dataset=None if use_ray else datasets[name])
            for name, rep in tasks]
    t0 = time.perf_counter()
    results = fan_out(run_session_job, jobs, use_ray=use_ray, chunk_size=1,
                      progress=lambda done, total: say(
                          f"{done}/{total} sessions done after {time.perf_counter() - t0:.1f} s"))
    return datasets, [row for rows in results for row in rows]


# ------------------------------------------------------------------------ scenario grids
GRID_PREFIX = "mukherjee-"
RELEASE_KEYS = ("protocol.scheme", "protocol.b", "protocol.components", "protocol.sd",
                "protocol.method", "protocol.compare", "protocol.attacks")
"""The zipped axis of one repetition's releases (one scenario run each)."""


def release_points(m: int) -> list[tuple]:
    """One repetition's releases on ``m`` attributes, as values of :data:`RELEASE_KEYS`.

    The same releases as :func:`paper_jobs`: the b = 0 reference (PCA, no noise), PCA-radius
    at every b (radius, best-k and k = 5 on one release), No-PCA Laplace (attacked only; the
    miner's k = 5 is a by-product), Rand-P at three projection sizes, Rand-U and Rand-N.
    A key a scheme does not use holds a valid placeholder (components 1, b 0.2, sd 0.1).

    >>> [p[0] for p in release_points(4)][:5]
    ['pca-no-noise', 'pca-laplace', 'pca-laplace', 'pca-laplace', 'laplace']
    """
    s = max(1, m // 2)
    pts: list[tuple] = [("pca-no-noise", 0.2, s, 0.1, "fixed-k", ("best-k",), False)]
    pts += [("pca-laplace", b, s, 0.1, "radius", ("best-k", "fixed-k"), True) for b in BS]
    pts += [("laplace", b, 1, 0.1, "fixed-k", (), True) for b in BS]
    pts += [("rand-p", 0.2, k, 0.1, "best-k", (), True)
            for k in sorted({max(1, m // 4), max(1, m // 2), m - 1})]
    pts += [(sch, 0.2, 1, sd, "best-k", (), True) for sch in ("rand-u", "rand-n") for sd in SDS]
    return pts


def materialise(datasets: dict[str, PaperDataset], folder: Path) -> Path:
    """Write the prepared datasets as CSV files with a ``manifest.json``; returns ``folder``.

    The grids' scenarios read them by name (``[data] dataset``, ``data_dir``): the rows a
    scenario run sees are exactly these (ionosphere without its constant column, the
    generated sets as generated). Real sets are written exactly; the 100-dimensional
    generated sets to 5 decimals (``sd`` >= 2, so the rounding is immaterial), which keeps
    their files at about 85 MB.
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    folder.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for name, ds in datasets.items():
        X = np.round(ds.X, 5) if name in LARGE else ds.X
        columns: dict[str, np.ndarray] = {f"x{j:03d}": X[:, j] for j in range(X.shape[1])}
        columns["label"] = ds.y
        pcsv.write_csv(pa.table(columns), folder / f"{name}.csv")
        manifest[name] = {"file": f"{name}.csv", "label": "label", "rows": int(len(ds.y)),
                          "features": int(X.shape[1]), "classes": int(ds.n_classes),
                          "description": ds.note}
    (folder / "manifest.json").write_text(jsonio.dumps(manifest))
    return folder


def paper_grids(datasets: dict[str, PaperDataset], settings: Settings, data_dir: Path
                ) -> list[Grid]:
    """One :class:`~ppknn.simulations.grids.Grid` per dataset: releases x repetitions.

    Every point is a ``pca-perturbation`` scenario run (a sanitizer with the training rows,
    a miner with at most ``max_queries`` of the 10% test split). Repetition ``r`` is
    ``[run].seed = settings.seed + r``: a new random split and new noise; within a
    repetition every release shares the split and the sanitizer's noise stream (each run
    is release round 1 of its own scenario: common random numbers across b and schemes,
    where the paper's session draws fresh noise per release; each release's noise is
    still exactly its scheme's distribution). Bounds are the training rows' minimum and
    maximum (``bounds = "data"``, a :class:`~ppknn.core.errors.PrivacyLeakWarning`), never
    the test rows'.
    """
    grids = []
    for name, ds in datasets.items():
        reps = settings.reps_large if name in LARGE else settings.reps
        base = {
            "run": {"name": f"mukherjee-{name}"},
            "data": {"dataset": name, "data_dir": str(data_dir), "test_fraction": 0.1,
                     "max_queries": settings.max_queries, "bounds": "data"},
            "parties": {"n": 1},
            "protocol": {"name": "pca-perturbation", "k": 5, "fallback_k": 5,
                         "max_validation": settings.max_validation, "rho1": RHO1},
            "runtime": {"channels": False},
        }
        grids.append(Grid(f"{GRID_PREFIX}{name}", base=base,
                          axes={RELEASE_KEYS: release_points(ds.X.shape[1])},
                          seeds=tuple(settings.seed + r for r in range(reps))))
    return grids


def _num(value: object) -> float:
    """A grid cell as a float (``None``, empty and missing are NaN)."""
    if value is None or value == "":
        return math.nan
    return float(value)  # type: ignore[arg-type]


def release_row(grid_row: dict, settings: Settings) -> dict:
    """One grid row as a flat release row (the columns :func:`aggregate` and the report use)."""
    scheme = grid_row["protocol.scheme"]
    request = ReleaseRequest(
        scheme=scheme, round=1,
        b=grid_row["protocol.b"] if scheme in ("pca-laplace", "laplace") else None,
        s=grid_row["protocol.components"] if scheme in ("pca-laplace", "pca-no-noise")
        else None,
        k=grid_row["protocol.components"] if scheme == "rand-p" else None,
        sd=grid_row["protocol.sd"] if scheme in ("rand-u", "rand-n") else None)
    best_s2 = grid_row.get("correlation_attack_s2")
    return {
        "dataset": grid_row["dataset"], "rep": int(grid_row["seed"]) - settings.seed,
        "seed": int(grid_row["seed"]), "scheme": scheme, "label": request.label,
        "param": request.b if request.b is not None else (
            request.k if request.k is not None else request.sd),
        "acc_radius": _num(grid_row.get("accuracy_radius")),
        "acc_best-k": _num(grid_row.get("accuracy_best_k")),
        "acc_fixed-k": _num(grid_row.get("accuracy_fixed_k")),
        "privacy_nofilter": _num(grid_row.get("privacy_transform_attack")),
        "privacy_filter": _num(grid_row.get("privacy_correlation_attack")),
        "best_s2": 0 if best_s2 in (None, "") or _num(best_s2) != _num(best_s2)
        else int(best_s2),
        "best_k": 0 if grid_row.get("best_k") in (None, "") else int(grid_row["best_k"]),
        "in_radius": _num(grid_row.get("mean_in_radius")),
        "fallback": _num(grid_row.get("fallback_fraction")),
        "amp_min": _num(grid_row.get("amplification_min")),
        "amp_max": _num(grid_row.get("amplification")),
        "E": _num(grid_row.get("distortion_mean")), "Var": _num(grid_row.get("distortion_var")),
        "E_measured": _num(grid_row.get("distortion_mean_measured")),
        "Var_measured": _num(grid_row.get("distortion_var_measured")),
        "nsr_min": _num(grid_row.get("noise_to_signal_min")),
        "nsr_median": _num(grid_row.get("noise_to_signal_median")),
        "baseline_accuracy": _num(grid_row.get("baseline_accuracy")),
        "queries": int(grid_row["queries"]), "run_id": grid_row["run_id"],
    }


def run_grid_experiments(settings: Settings, workdir: Path, *, parallel: str = "sequential",
                         log: Log | None = None
                         ) -> tuple[dict[str, PaperDataset], list[Grid], dict[str, list[dict]],
                                    list[dict]]:
    """The paper's release experiments as scenario grids through the registry.

    Loads (or generates) the datasets, writes them to ``workdir/datasets``, runs
    :func:`paper_grids` with :func:`~ppknn.simulations.grids.run_grids` (``parallel``:
    ``"ray"`` fans the runs out as Ray tasks) and returns the datasets, the grids, the
    grid rows by grid name and the flat release rows (:func:`release_row`).
    """
    say = _logger(log)
    datasets = {name: _load(name, settings) for name in settings.datasets}
    data_dir = materialise(datasets, Path(workdir) / "datasets")
    grids = paper_grids(datasets, settings, data_dir.resolve())
    t0 = time.perf_counter()
    total = sum(len(g.points()) for g in grids)
    say(f"{total} scenario runs in {len(grids)} grids")
    rows = run_grids(grids, parallel=parallel, progress=lambda done, n: say(
        f"{done}/{n} runs done after {time.perf_counter() - t0:.1f} s"))
    flat = [release_row(r, settings) for g in grids for r in rows[g.name]]
    return datasets, grids, rows, flat


def _flatten(name: str, rep: int, r: ReleaseResult) -> dict:
    q = r.request
    out = r.output
    return {
        "dataset": name, "rep": rep, "scheme": q.scheme, "label": q.label,
        "param": q.b if q.b is not None else (q.k if q.k is not None else q.sd),
        **{f"acc_{m}": v for m, v in r.accuracy.items()},
        "privacy_nofilter": r.attack.no_filter if r.attack else math.nan,
        "privacy_filter": r.attack.filtered if r.attack else math.nan,
        "best_s2": r.attack.best_s2 if r.attack else 0,
        "best_k": out.best_k if out else 0,
        "in_radius": out.mean_in_radius if out else math.nan,
        "fallback": out.fallback_fraction if out else math.nan,
        "amp_min": float(r.amplification.min()) if r.amplification is not None else math.nan,
        "amp_max": float(r.amplification.max()) if r.amplification is not None else math.nan,
        "E": r.stats[0] if r.stats else math.nan, "Var": r.stats[1] if r.stats else math.nan,
        "E_measured": r.measured[0] if r.measured else math.nan,
        "Var_measured": r.measured[1] if r.measured else math.nan,
        "nsr_min": r.noise_to_signal[0] if r.noise_to_signal else math.nan,
        "nsr_median": r.noise_to_signal[1] if r.noise_to_signal else math.nan,
    }


def aggregate(rows: list[dict]) -> dict[tuple[str, str], dict[str, tuple[float, float, float]]]:
    """Mean, standard deviation and 95% half-width over repetitions, per (dataset, label).

    The standard deviation is the sample one (``ddof = 1``; 0 for one repetition) and the
    half-width Student's ``t(0.975, n - 1) * sd / sqrt(n)`` (NaN for one repetition): the
    interval is over repetitions, each a new split and new noise.
    """
    from scipy import stats as sps

    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["label"])].append(r)
    out = {}
    for key, group in groups.items():
        stats = {}
        for col in group[0]:
            vals = [g.get(col) for g in group]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                arr = np.asarray(vals, dtype=np.float64)
                n = len(arr)
                sd = float(np.std(arr, ddof=1)) if n > 1 else 0.0
                half = float(sps.t.ppf(0.975, n - 1) * sd / math.sqrt(n)) if n > 1 else math.nan
                stats[col] = (float(np.mean(arr)), sd, half)
        out[key] = stats
    return out


def worst_case(datasets: dict[str, PaperDataset], settings: Settings) -> list[dict]:
    """Fig. 6: per dataset and b, the amplification of a release and an empirical audit."""
    policy = SeedPolicy(root=settings.seed)
    rows = []
    for name, ds in datasets.items():
        split = make_split(ds, policy.generator("split", name, 0), settings.max_queries)
        san = Sanitizer(party_id="sanitizer", index=0, X=split.X_train, y=split.y_train,
                        n_classes=ds.n_classes, run_id="fig6", bounds=split.bounds)
        s = max(1, ds.X.shape[1] // 2)
        scores = san.fit.scores(san.Z, 1)[:, 0]
        for b in (0.1, 0.2, 0.25, 0.3, 0.5):
            g = san.guarantee(b, s)
            res = audit_column(low=float(scores.min()), high=float(scores.max()),
                               noise="laplace", scale=b, n_samples=settings.audit_samples,
                               rng=policy.generator("audit", name, int(b * 100)),
                               confidence=settings.audit_confidence)
            rows.append({"dataset": name, "b": b, "s": s, "exp_1_over_b": math.exp(1 / b),
                         "amp_min": float(g.amplification.min()),
                         "amp_max": float(g.amplification.max()),
                         "domain_amp_max": float(g.domain_amplification.max()),
                         "audit_eps_lower": res.eps_lower,
                         "audit_amp_lower": math.exp(res.eps_lower),
                         "rho2_max": rho2_bound(math.exp(1 / b), RHO1)})
    return rows


def additive_audit(settings: Settings) -> list[dict]:
    """Rand-U and Rand-N on a [0, 1] attribute: the audit finds no bounded amplification."""
    policy = SeedPolicy(root=settings.seed)
    rows = []
    for noise in ("uniform", "normal"):
        for sd in SDS:
            res = audit_column(low=0.0, high=1.0, noise=noise, scale=sd,
                               n_samples=settings.audit_samples,
                               rng=policy.generator("audit", noise, int(sd * 100)),
                               confidence=settings.audit_confidence)
            rows.append({"noise": noise, "sd": sd, "audit_eps_lower": res.eps_lower,
                         "audit_amp_lower": math.exp(res.eps_lower)})
    return rows


def timing(settings: Settings, *, log: Log | None = None) -> tuple[list[dict], list[dict]]:
    """Figs. 10-11: sanitisation and mining time over n (m = max) and over m (n = max).

    Progress goes to ``log`` (default: this module's logger at INFO level).
    """
    say = _logger(log)
    policy = SeedPolicy(root=settings.seed)
    n_max, m_max = max(settings.timing_n), max(settings.timing_m)
    grid = [("n", n, m_max) for n in settings.timing_n] + \
        [("m", n_max, m) for m in settings.timing_m if m != m_max]
    san, mine = [], []
    for axis, n, m in grid:
        t = time_sanitize(n, m, b=0.3, rng=policy.generator("time-s", n, m))
        san.append({"vary": axis, "n": n, "m": m, "pca_s": t["pca"], "noise_s": t["noise"]})
        t = time_mining(n, m, b=0.3, queries=settings.timing_queries,
                        rng=policy.generator("time-m", n, m))
        mine.append({"vary": axis, "n": n, "m": m, "radius_ms": 1e3 * t["radius"],
                     "knn5_ms": 1e3 * t["knn5"], "sklearn5_ms": 1e3 * t["sklearn5"]})
        say(f"timing n={n} m={m} done")
    # the largest configuration belongs to both sweeps
    san += [dict(r, vary="m") for r in san if r["n"] == n_max and r["m"] == m_max]
    mine += [dict(r, vary="m") for r in mine if r["n"] == n_max and r["m"] == m_max]
    return san, mine


__all__ = [
    "BS",
    "FULL",
    "LARGE",
    "QUICK",
    "RHO1",
    "SDS",
    "RELEASE_KEYS",
    "SessionJob",
    "Settings",
    "additive_audit",
    "aggregate",
    "make_split",
    "materialise",
    "paper_grids",
    "paper_jobs",
    "release_points",
    "release_row",
    "run_experiments",
    "run_grid_experiments",
    "run_session_job",
    "timing",
    "worst_case",
]
