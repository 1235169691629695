"""The paper's experiments (Mukherjee et al. 2008, §6) as functions of a :class:`Settings`.

For every dataset and repetition, a sanitizer party (90% of the rows) and a
miner party (the other 10%, at most ``max_queries`` of them classified) run
the release protocol once per scheme and parameter (:func:`paper_jobs`);
the miner classifies its rows and the attacks run over its view read back
from the transcript (:func:`~simulations.experiments.pca_evaluation.run_session`).
:func:`worst_case` and :func:`additive_audit` measure the worst-case
privacy (Fig. 6) and :func:`timing` the execution time (Figs. 10-11).
``simulations.reproduce.mukherjee`` turns the results into tables, plots
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
from ppknn.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.datasets import (
    PAPER_DATASETS,
    PaperDataset,
    load_paper_dataset,
)
from ppknn.protocols.pca_perturbation.privacy import audit_column, rho2_bound
from ppknn.protocols.pca_perturbation.protocol import MiningPlan
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest
from ppknn.simulations.experiments.pca_evaluation import Job, ReleaseResult, Split, run_session
from ppknn.simulations.experiments.pca_timing import time_mining, time_sanitize

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
        With the in-process runtime, ``> 1`` fans the sessions out over Ray
        tasks (:func:`core.runtime.pool.fan_out`, one CPU each); ``1`` runs
        them one after the other here.
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

    The bounds are the whole table's minimum and maximum: the paper
    normalises the data before splitting (and so do we, declaring them public).
    """
    n = len(ds.y)
    perm = rng.permutation(n)
    n_test = max(1, round(0.1 * n))
    test, train = perm[:n_test][:max_queries], perm[n_test:]
    # the paper normalises the whole table before splitting: bounds = its min and max
    bounds = DomainBounds(ds.X.min(axis=0), ds.X.max(axis=0))
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


def aggregate(rows: list[dict]) -> dict[tuple[str, str], dict[str, tuple[float, float]]]:
    """Mean and standard deviation over repetitions, per (dataset, release label)."""
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
                stats[col] = (float(np.mean(arr)), float(np.std(arr)))
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
    "SessionJob",
    "Settings",
    "additive_audit",
    "aggregate",
    "make_split",
    "paper_jobs",
    "run_experiments",
    "run_session_job",
    "timing",
    "worst_case",
]
