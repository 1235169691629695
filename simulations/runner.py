"""Run a PP-kNN scenario end to end and collect what it measured.

:func:`prepare` turns a validated :class:`~simulations.scenario.Scenario`
into the parties' private data and the public set-up; :func:`execute` runs
it on a runtime and returns a :class:`RunOutcome` (predictions of PP-kNN
and of scikit-learn's non-private kNN on the union, ground-truth checks,
per-node disclosure, communication); :mod:`simulations.results` writes it.
"""

from __future__ import annotations

import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.data import Dataset, DomainBounds, load_dataset, partition, train_test_split
from core.errors import ConfigError, PartyFailure, PrivacyLeakWarning
from core.leakage import DisclosureReport
from core.rng import RandomnessMode, SeedPolicy
from core.runtime import PartySpec, RunContext, Runtime, make_runtime
from core.transcript import Transcript
from parties.ring_owner import RingDataOwner
from protocols.ppknn import PPKNNConfig, random_ring, ring_from_start, run_ppknn, ties_at_kth
from protocols.ppknn.pp_topk import TopKParams, euclidean_distances, local_topk
from simulations.disclosure import measure_disclosure
from simulations.scenario import Scenario

PhaseProgress = Callable[[str, int, int], None]
"""Called with (phase, done, total)."""


@dataclass(frozen=True)
class PreparedRun:
    """Everything a run needs, before any party exists."""

    scenario: Scenario
    run_id: str
    dataset: Dataset
    party_names: tuple[str, ...]
    party_X: tuple[np.ndarray, ...]
    party_y: tuple[np.ndarray, ...]
    queries: np.ndarray
    query_labels: np.ndarray
    bounds: DomainBounds
    config: PPKNNConfig
    ring: tuple[str, ...]
    start: str

    @property
    def union_X(self) -> np.ndarray:
        """All training rows, in party order."""
        return np.concatenate(self.party_X)

    @property
    def union_y(self) -> np.ndarray:
        """All training labels, in party order."""
        return np.concatenate(self.party_y)

    def party_specs(self) -> list[PartySpec]:
        """How to build each owner."""
        s = self.scenario
        return [
            PartySpec(name, RingDataOwner, {
                "party_id": name, "index": i, "X": X, "y": y,
                "n_classes": self.dataset.n_classes, "run_id": self.run_id,
                "seed": s.run.seed, "mode": s.run.mode,
            })
            for i, (name, X, y) in enumerate(zip(self.party_names, self.party_X, self.party_y))
        ]

    def public(self) -> dict[str, Any]:
        """Public facts of the run (what every owner knows)."""
        return {
            "run_id": self.run_id,
            "ring": list(self.ring),
            "start": self.start,
            "party_index": {p: i for i, p in enumerate(self.party_names)},
            "max_distance": self.bounds.diameter,
            "n_queries": int(len(self.queries)),
            "k": self.config.params.k,
            "classes": [str(c) for c in self.dataset.classes],
        }


def prepare(scenario: Scenario) -> PreparedRun:
    """Load, split, scale and partition the data; fix the ring (all from the seed)."""
    s = scenario
    policy = SeedPolicy(root=s.run.seed, mode=RandomnessMode(s.run.mode))
    ds = load_dataset(s.data.dataset, directory=s.data.data_dir)
    if s.data.bounds == "data":
        bounds = DomainBounds.from_data(ds.X, warn=False)
        warnings.warn(
            f"scenario {s.run.name!r}: domain bounds derived from dataset {ds.name!r} reveal "
            "its extremes; declare [data.bounds] lower/upper to avoid this",
            PrivacyLeakWarning, stacklevel=2,
        )
    else:
        bounds = DomainBounds(np.array(s.data.bounds.lower), np.array(s.data.bounds.upper))
    bounds.check(ds.X, f"dataset {ds.name!r}")
    X = ds.X
    if s.data.scale == "minmax":
        span = np.where(bounds.upper > bounds.lower, bounds.upper - bounds.lower, 1.0)
        X = (X - bounds.lower) / span
        bounds = DomainBounds(np.zeros(X.shape[1]), np.where(bounds.upper > bounds.lower, 1.0, 0.0))
    train, test = train_test_split(len(ds.y), s.data.test_fraction, policy.generator("split"))
    if s.data.max_queries is not None:
        test = test[: s.data.max_queries]
    n = s.parties.n
    if s.protocol.k > len(train):
        raise ConfigError(f"k = {s.protocol.k} is larger than the union of the parties' data "
                          f"({len(train)} training rows); choose k <= {len(train)}")
    parts = partition(ds.y[train], n, scheme=s.parties.partition,
                      rng=policy.generator("partition"), alpha=s.parties.alpha,
                      size_skew=s.parties.size_skew)
    names = tuple(f"owner-{i:0{max(2, len(str(n - 1)))}d}" for i in range(n))
    ring, start = random_ring(names, policy.generator("ring"))
    params = TopKParams(k=s.protocol.k, p0=s.protocol.p0, d=s.protocol.d,
                        rounds=s.protocol.rounds, delta=s.protocol.delta,
                        max_distance=bounds.diameter)
    config = PPKNNConfig(params=params, weighting=s.protocol.weighting,
                         secure_sum=s.protocol.secure_sum)
    run_id = (f"{s.run.name}-{s.run.seed}" if s.run.mode == "reproducible"
              else f"{s.run.name}-{uuid.uuid4().hex[:12]}")
    Xtr, ytr = X[train], ds.y[train]
    return PreparedRun(
        scenario=s, run_id=run_id, dataset=ds, party_names=names,
        party_X=tuple(Xtr[p] for p in parts), party_y=tuple(ytr[p] for p in parts),
        queries=X[test], query_labels=ds.y[test], bounds=bounds, config=config,
        ring=ring, start=start,
    )


@dataclass
class RunOutcome:
    """What a run measured."""

    prepared: PreparedRun
    runtime: str
    predictions: np.ndarray
    knn_predictions: np.ndarray
    final_vector: np.ndarray
    true_topk: np.ndarray
    ties: np.ndarray
    disclosure: DisclosureReport
    communication: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    transcript_dir: Path | None = None

    @property
    def accuracy(self) -> float:
        """PP-kNN accuracy on the query labels."""
        return float(np.mean(self.predictions == self.prepared.query_labels))

    @property
    def knn_accuracy(self) -> float:
        """Non-private kNN accuracy on the union."""
        return float(np.mean(self.knn_predictions == self.prepared.query_labels))

    @property
    def topk_exact(self) -> np.ndarray:
        """Queries whose final vector equals the true top-k."""
        return np.all(self.final_vector == self.true_topk, axis=1)


def _placement(s: Scenario, prepared: PreparedRun) -> dict[str, dict[str, float]]:
    """Custom resources per party from ``[runtime.placement]``.

    Keys are party names (or ``"*"`` for all); values map resources to
    amounts, e.g. ``owner-00 = {org_a = 0.01}``.
    """
    out = {}
    for name in prepared.party_names:
        spec = s.runtime.placement.get(name, s.runtime.placement.get("*"))
        if spec:
            out[name] = dict(spec)
    unknown = set(s.runtime.placement) - set(prepared.party_names) - {"*"}
    if unknown:
        raise ConfigError(f"[runtime.placement] names unknown parties {sorted(unknown)}; "
                          f"parties are {list(prepared.party_names)}")
    return out


def sklearn_knn(prepared: PreparedRun) -> np.ndarray:
    """scikit-learn's non-private brute-force kNN on the union of the parties' data.

    Runs on one BLAS/OpenMP thread: scikit-learn's distances (dot-product
    expansion) differ in the last bits with the thread count, which flips
    near-ties, so the baseline would differ between a sweep's Ray workers
    (one thread each) and a run here.
    """
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    p = prepared.config
    knn = KNeighborsClassifier(n_neighbors=p.params.k, algorithm="brute", weights=p.weighting)
    knn.fit(prepared.union_X, prepared.union_y)
    with threadpool_limits(limits=1):
        return knn.predict(prepared.queries)


def union_topk_and_ties(queries: np.ndarray, X: np.ndarray, k: int, *,
                        block_bytes: int = 128 << 20) -> tuple[np.ndarray, np.ndarray]:
    """The union's true top-k distances and ties at the k-th, per query.

    Computed over blocks of queries so the distance matrix held at once
    stays under ``block_bytes`` (a large run's full matrix would not fit).
    """
    rows = max(1, block_bytes // (8 * max(1, len(X))))
    topk = np.empty((len(queries), k))
    ties = np.empty(len(queries), dtype=bool)
    for i in range(0, len(queries), rows):
        d = euclidean_distances(queries[i : i + rows], X)
        topk[i : i + rows] = local_topk(d, k)
        ties[i : i + rows] = ties_at_kth(d, k)
    return topk, ties


def execute(scenario: Scenario, *, transcript_dir: Path | None = None,
            runtime: Runtime | None = None, progress: PhaseProgress | None = None) -> RunOutcome:
    """Run ``scenario`` and measure it.

    On a :class:`~core.errors.PartyFailure` the transcript recorded so far is
    flushed to ``transcript_dir`` before the error propagates.
    """
    prepared = prepare(scenario)
    s = scenario
    if transcript_dir is None:
        transcript_dir = Path(tempfile.mkdtemp(prefix="ppknn-transcript-"))
    own_runtime = runtime is None
    if runtime is None:
        options = {}
        if s.runtime.kind == "ray":
            options = {"layout": s.runtime.layout, "hosts": s.runtime.hosts,
                       "placement": _placement(s, prepared)}
        rt = make_runtime(s.runtime.kind, address=s.runtime.address,
                          num_cpus=s.runtime.num_cpus, **options)
    else:
        rt = runtime
    context = RunContext(run_id=prepared.run_id, transcript_dir=transcript_dir,
                         secure_channels=s.runtime.channels, record_batch=s.runtime.record_batch,
                         flush_every=s.runtime.flush_every,
                         record_batch_bytes=s.runtime.record_batch_bytes,
                         flush_bytes=s.runtime.flush_bytes,
                         party_timeout_s=s.runtime.party_timeout_s)
    timings: dict[str, float] = {}
    report = (lambda done, total: progress("protocol", done, total)) if progress else None
    try:
        t0 = time.perf_counter()
        # ring order from the start node: in the hosted layout neighbours share a host
        specs = {spec.party_id: spec for spec in prepared.party_specs()}
        rt.start([specs[p] for p in ring_from_start(prepared.ring, prepared.start)], context)
        timings["startup_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = run_ppknn(rt, prepared.queries, prepared.config, ring=prepared.ring,
                           start=prepared.start, progress=report)
        timings["protocol_s"] = time.perf_counter() - t0
        communication = rt.close_transcript()
    except PartyFailure:
        try:
            rt.close_transcript()
        finally:
            if own_runtime:
                rt.shutdown()
        raise
    if own_runtime:
        rt.shutdown()

    t0 = time.perf_counter()
    knn_pred = sklearn_knn(prepared)
    timings["sklearn_s"] = time.perf_counter() - t0
    k = prepared.config.params.k
    true_topk, ties = union_topk_and_ties(prepared.queries, prepared.union_X, k)
    if progress:
        progress("leakage", 0, 1)
    transcript = Transcript(transcript_dir)
    disclosure = measure_disclosure(transcript, prepared.public())
    if progress:
        progress("leakage", 1, 1)
    return RunOutcome(
        prepared=prepared, runtime=rt.name, predictions=result.predictions,
        knn_predictions=knn_pred, final_vector=result.final_vector,
        true_topk=true_topk, ties=ties,
        disclosure=disclosure, communication=communication, timings=timings,
        transcript_dir=transcript_dir,
    )


__all__ = ["PreparedRun", "RunOutcome", "execute", "prepare", "sklearn_knn",
           "union_topk_and_ties"]
