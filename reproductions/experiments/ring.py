"""Batched experiments: many random splits of a dataset in one protocol run.

The paper's experiments repeat each setting over many random train/test
splits. Running them one protocol run per split would spend most of the
time in per-run overhead; instead :func:`make_split_batch` gives every owner
its rows of *every* split, tagged with the split (a block), and the query
batch holds every split's test rows, tagged the same way. Owners only
compare a query with rows of its own split
(:class:`~protocols.ppknn_ring.parties.ring_owner.RingDataOwner` ``row_block``), so one run
computes all splits at once, vectorised over the whole batch. The ring is
one per run; the data each ring position holds is re-drawn for every split.

Large batches are cut into chunks of splits so no vector exceeds
``max_elements`` values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.data import Dataset, DomainBounds, partition, train_test_split
from ppknn.core.rng import SeedPolicy
from ppknn.core.runtime import PartySpec, RunContext, make_runtime
from ppknn.core.transcript import Transcript
from ppknn.protocols.ppknn_ring import (
    PPKNNConfig,
    random_ring,
    ring_from_start,
    run_ppknn,
    ties_at_kth,
)
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams, euclidean_distances, public_max_distance


@dataclass(frozen=True)
class SplitBatch:
    """One dataset, ``splits`` random splits, each partitioned over ``n`` owners."""

    dataset: Dataset
    n: int
    splits: int
    party_X: tuple[np.ndarray, ...]
    party_y: tuple[np.ndarray, ...]
    party_block: tuple[np.ndarray, ...]
    queries: np.ndarray
    labels: np.ndarray
    query_block: np.ndarray
    train_index: tuple[np.ndarray, ...]  # per split, rows of the dataset
    max_distance: float
    seed: int

    @property
    def party_names(self) -> list[str]:
        """Owner names."""
        return [f"owner-{i:02d}" for i in range(self.n)]

    def union_size(self, split: int = 0) -> int:
        """Training rows of one split (the union of the owners' data)."""
        return len(self.train_index[split])

    def subset(self, splits: np.ndarray) -> SplitBatch:
        """The batch restricted to some splits, renumbered ``0..len(splits)-1``."""
        keep = np.isin(self.query_block, splits)
        rows = [np.isin(b, splits) for b in self.party_block]
        keep_train = tuple(self.train_index[s] for s in splits)
        remap = np.full(self.splits, -1, dtype=np.int64)
        remap[np.asarray(splits)] = np.arange(len(splits))
        return SplitBatch(
            dataset=self.dataset, n=self.n, splits=len(splits),
            party_X=tuple(x[r] for x, r in zip(self.party_X, rows)),
            party_y=tuple(y[r] for y, r in zip(self.party_y, rows)),
            party_block=tuple(remap[b[r]] for b, r in zip(self.party_block, rows)),
            queries=self.queries[keep], labels=self.labels[keep],
            query_block=remap[self.query_block[keep]],
            train_index=keep_train, max_distance=self.max_distance, seed=self.seed,
        )


def make_split_batch(dataset: Dataset, *, n: int, splits: int, seed: int,
                     test_fraction: float = 1 / 3, scheme: str = "iid") -> SplitBatch:
    """Draw ``splits`` random splits (seeded) and partition each training set over ``n`` owners."""
    policy = SeedPolicy(root=seed)
    px: list[list[np.ndarray]] = [[] for _ in range(n)]
    py: list[list[np.ndarray]] = [[] for _ in range(n)]
    pb: list[list[np.ndarray]] = [[] for _ in range(n)]
    qx, qy, qb, trains = [], [], [], []
    for s in range(splits):
        train, test = train_test_split(len(dataset.y), test_fraction,
                                       policy.generator("split", s))
        parts = partition(dataset.y[train], n, scheme=scheme,
                          rng=policy.generator("partition", s))
        for i, p in enumerate(parts):
            rows = train[p]
            px[i].append(dataset.X[rows])
            py[i].append(dataset.y[rows])
            pb[i].append(np.full(len(rows), s))
        qx.append(dataset.X[test])
        qy.append(dataset.y[test])
        qb.append(np.full(len(test), s))
        trains.append(train)
    # The initial value of PP-TopK's vector reads public inputs only: bounds from each
    # split's training rows (never its test rows) and the public queries; one value for
    # the batch, the largest over its splits.
    max_distance = 0.0
    for train, q in zip(trains, qx):
        b = DomainBounds.from_data(dataset.X[train], warn=False)
        max_distance = max(max_distance, public_max_distance(b.lower, b.upper, q))
    return SplitBatch(
        dataset=dataset, n=n, splits=splits,
        party_X=tuple(np.concatenate(x) for x in px), party_y=tuple(np.concatenate(y) for y in py),
        party_block=tuple(np.concatenate(b) for b in pb),
        queries=np.concatenate(qx), labels=np.concatenate(qy), query_block=np.concatenate(qb),
        train_index=tuple(trains), max_distance=max_distance, seed=seed,
    )


@dataclass
class BatchOutcome:
    """Outputs of one batched PP-kNN run (all chunks concatenated)."""

    predictions: np.ndarray
    final_vector: np.ndarray
    transcripts: list[Transcript] = field(default_factory=list)
    publics: list[dict] = field(default_factory=list)


class SplitSession:
    """Owners of a :class:`SplitBatch` hosted once, for many protocol runs.

    Parties keep their distance blocks between runs (the query batch does
    not change), so sweeping ``k``, ``P0``, ``d`` or the rounds costs only
    the protocol itself. One call holds every split, so the runtime's per-call
    timeout (``party_timeout_s``) is an hour by default, not a minute. On Ray
    the hosted layout is the default (one host actor per CPU, ring neighbours
    together). Use as a context manager.
    """

    def __init__(self, batch: SplitBatch, *, runtime: str = "inprocess", record: bool = False,
                 channels: bool = False, seed: int = 0, transcript_dir: Path | None = None,
                 cache_limit: int = 400_000_000, tag: str = "0",
                 layout: str = "hosted", party_timeout_s: float = 3600.0) -> None:
        self.batch = batch
        self.record = record
        self.seed = seed
        self.runs = 0
        self.run_id = f"batch-{batch.dataset.name}-{batch.n}-{seed}-{tag}"
        names = batch.party_names
        specs = [PartySpec(nm, RingDataOwner, {
            "party_id": nm, "index": i, "X": batch.party_X[i], "y": batch.party_y[i],
            "n_classes": batch.dataset.n_classes, "run_id": self.run_id, "seed": seed,
            "row_block": batch.party_block[i], "cache_limit": cache_limit})
            for i, nm in enumerate(names)]
        self.ring, self.start = random_ring(names, SeedPolicy(root=seed).generator("ring", tag))
        self.transcript_dir = transcript_dir
        options: dict[str, Any] = {"layout": layout} if runtime == "ray" else {}
        self.runtime = make_runtime(runtime, **options)
        by_name = {spec.party_id: spec for spec in specs}
        # ring order from the start node: in the hosted layout neighbours share a host
        specs = [by_name[p] for p in ring_from_start(self.ring, self.start)]
        self.runtime.start(specs, RunContext(run_id=self.run_id, transcript_dir=transcript_dir,
                                             record=record, secure_channels=channels,
                                             record_batch=1 << 16, flush_every=1 << 16,
                                             party_timeout_s=party_timeout_s))

    def run(self, *, k: int, p0: float, d: float, rounds: int, weighting: str = "uniform",
            secure_sum: str = "ring", delta: float = 1e-3) -> BatchOutcome:
        """One PP-kNN run over every split."""
        config = PPKNNConfig(params=TopKParams(k=k, p0=p0, d=d, rounds=rounds, delta=delta,
                                               max_distance=self.batch.max_distance),
                             weighting=weighting, secure_sum=secure_sum)
        res = run_ppknn(self.runtime, self.batch.queries, config, ring=self.ring,
                        start=self.start, query_block=self.batch.query_block)
        self.runs += 1
        return BatchOutcome(res.predictions, res.final_vector)

    def public(self, k: int) -> dict:
        """Public facts of the runs (for the disclosure adversaries)."""
        return {"ring": list(self.ring), "start": self.start,
                "party_index": {p: i for i, p in enumerate(self.batch.party_names)},
                "max_distance": self.batch.max_distance,
                "n_queries": int(len(self.batch.queries)), "k": k}

    def close(self) -> Transcript | None:
        """Close the transcript (returned when recorded) and release the parties."""
        try:
            self.runtime.close_transcript()
            if not self.record:
                return None
            if self.transcript_dir is not None:
                return Transcript(self.transcript_dir)
            return Transcript(self.runtime.transcript_table())
        finally:
            self.runtime.shutdown()

    def __enter__(self) -> SplitSession:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.runtime.hosts:
            self.runtime.shutdown()


def run_split_batch(batch: SplitBatch, *, k: int, p0: float, d: float, rounds: int,
                    weighting: str = "uniform", secure_sum: str = "ring", delta: float = 1e-3,
                    runtime: str = "inprocess", record: bool = False, channels: bool = False,
                    seed: int = 0, max_elements: int = 20_000_000) -> BatchOutcome:
    """One PP-kNN run over every split, in chunks of splits.

    Each chunk's vectors hold at most ``max_elements`` values (for very large ``k``).
    """
    per_split = max(1, int(max_elements // max(1, k * len(batch.queries) / batch.splits)))
    chunks = [np.arange(s, min(s + per_split, batch.splits))
              for s in range(0, batch.splits, per_split)]
    preds = np.empty(len(batch.queries), dtype=np.int64)
    finals = np.empty((len(batch.queries), k))
    outcome = BatchOutcome(preds, finals)
    for c, splits in enumerate(chunks):
        part = batch if len(chunks) == 1 else batch.subset(splits)
        keep = np.isin(batch.query_block, splits)
        session = SplitSession(part, runtime=runtime, record=record, channels=channels,
                               seed=seed, tag=f"chunk{c}", cache_limit=0)
        res = session.run(k=k, p0=p0, d=d, rounds=rounds, weighting=weighting,
                          secure_sum=secure_sum, delta=delta)
        transcript = session.close()
        if transcript is not None:
            outcome.transcripts.append(transcript)
            outcome.publics.append(session.public(k) | {"n_queries": int(keep.sum())})
        preds[keep] = res.predictions
        finals[keep] = res.final_vector
    return outcome


def sklearn_split_predictions(batch: SplitBatch, *, k: int, weighting: str = "uniform"
                              ) -> np.ndarray:
    """scikit-learn's brute-force kNN, fitted on each split's training set independently.

    One BLAS/OpenMP thread, as :func:`simulations.runner.sklearn_knn` (results
    must not depend on the process's thread count).
    """
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    out = np.empty(len(batch.queries), dtype=np.int64)
    ds = batch.dataset
    with threadpool_limits(limits=1):
        for s in range(batch.splits):
            q = batch.query_block == s
            train = batch.train_index[s]
            knn = KNeighborsClassifier(n_neighbors=min(k, len(train)), algorithm="brute",
                                       weights=weighting)
            out[q] = knn.fit(ds.X[train], ds.y[train]).predict(batch.queries[q])
    return out


def split_truth(batch: SplitBatch, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the true top-k distances of its split's union, and ties at the k-th."""
    topk = np.empty((len(batch.queries), k))
    ties = np.empty(len(batch.queries), dtype=bool)
    for s in range(batch.splits):
        q = batch.query_block == s
        rows = np.concatenate([x[b == s] for x, b in zip(batch.party_X, batch.party_block)])
        dist = euclidean_distances(batch.queries[q], rows)
        topk[q] = np.sort(np.partition(dist, k - 1, axis=1)[:, :k] if k < dist.shape[1]
                          else dist, axis=1)[:, :k]
        ties[q] = ties_at_kth(dist, k)
    return topk, ties


def per_split(values: np.ndarray, block: np.ndarray, splits: int,
              reduce: Callable[[np.ndarray], float] = np.mean) -> np.ndarray:
    """Reduce a per-query array within each split."""
    return np.array([reduce(values[block == s]) for s in range(splits)])


def mean_ci(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval over splits."""
    from scipy import stats

    values = np.asarray(values, dtype=np.float64)
    m = float(values.mean())
    if len(values) < 2:
        return m, m, m
    half = float(stats.t.ppf(0.5 + confidence / 2, len(values) - 1)
                 * values.std(ddof=1) / np.sqrt(len(values)))
    return m, m - half, m + half


__all__ = [
    "BatchOutcome",
    "SplitSession",
    "SplitBatch",
    "make_split_batch",
    "mean_ci",
    "per_split",
    "run_split_batch",
    "sklearn_split_predictions",
    "split_truth",
]
