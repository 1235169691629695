"""``ppknn-ring``: PP-kNN over a ring of data owners (Xiong, Chitti & Liu).

Scenario table::

    [protocol]
    name = "ppknn-ring"          # the default when no name is given
    k = 5
    p0 = 1.0                     # initial randomisation probability
    d = 0.5                      # P_r = p0 * d**(r-1)
    rounds = 2
    delta = 0.001                # minimum width of the random-fill range
    weighting = "uniform"        # or "distance"
    secure_sum = "ring"          # or "shared" (collusion-resistant)
    vote = "paper"               # or "exact-k": only points whose distance is in the
                                 # final vector vote (at most k voters); or "k-weighted":
                                 # those, plus the other points within Delta sharing the
                                 # remaining k - matched votes
    schedule = "r-1"             # reading of the garbled P_r: "r-1" or "r" (p0 * d**r)
    start_step = "first"         # reading: the start node runs Algorithm 2 first in
                                 # round 1, or "last" (forwards the initial vector)
    score = "successor"          # attacks scored on the transcript: the successor's;
                                 # "detail" adds the informed successor and pooling
                                 # counts; "none" scores nothing (accuracy only)

The initial value of the global vector is computed from the bounds and the
public queries (:func:`~ppknn.protocols.ppknn_ring.pp_topk.public_max_distance`),
so queries outside bounds taken from the training rows are handled exactly.

Parties: ``[parties].n`` ring data owners (at least 3), each holding its
share of the training rows; the query batch is public. Baseline:
scikit-learn's brute-force kNN on the union. Leakage: the successor's
attribution attack on PP-TopK (per-node disclosure probability).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from ppknn.core.errors import ConfigError
from ppknn.core.leakage import DisclosureReport
from ppknn.core.runtime import PartySpec
from ppknn.core.transcript import Transcript
from ppknn.protocols.ppknn_ring import (
    MIN_PARTIES,
    PPKNNConfig,
    PPKNNResult,
    drive,
    random_ring,
    ring_from_start,
)
from ppknn.protocols.ppknn_ring.api import RingOwnerAPI
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn_ring.plugin import attacks as attacks  # registers its attacks
from ppknn.protocols.ppknn_ring.plugin import deviations as deviating
from ppknn.protocols.ppknn_ring.plugin.disclosure import measure_disclosure
from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL as TOPK_PROTOCOL
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams, euclidean_distances, public_max_distance
from ppknn.protocols.ppknn_ring.votes import voter_mask
from ppknn.simulations.knn import sklearn_knn, union_topk_and_ties
from ppknn.simulations.prepare import PreparedData
from ppknn.simulations.registry import (
    Baseline,
    Measured,
    Plan,
    ProtocolConfig,
    ProtocolPlugin,
    Role,
    register,
)
from ppknn.simulations.scenario import Scenario

NAME: Literal["ppknn-ring"] = "ppknn-ring"

DETAIL_METRICS = ("disclosure_trials", "disclosure_by_position", "disclosure_claimed",
                  "disclosure_correct", "disclosure_exact_rows", "disclosure_exact_hits",
                  "informed_mean", "informed_by_position", "informed_claimed",
                  "informed_correct", "informed_exact_rows", "informed_exact_hits")
"""Metrics of ``score = "detail"`` (:func:`attribution_detail`); None otherwise."""


MAX_ROUNDS = 1000
"""Most rounds of PP-TopK (each is a full pass around the ring)."""


class PPKNNRingConfig(ProtocolConfig):
    """``[protocol]`` of ``ppknn-ring``."""

    name: Literal["ppknn-ring"] = NAME
    k: int = Field(5, ge=1, strict=True)
    p0: float = Field(1.0, ge=0, le=1, strict=True)
    d: float = Field(0.5, gt=0, le=1, strict=True)
    rounds: int = Field(2, ge=1, le=MAX_ROUNDS, strict=True)
    delta: float = Field(1e-3, ge=0, strict=True)
    weighting: Literal["uniform", "distance"] = "uniform"
    secure_sum: Literal["ring", "shared"] = "ring"
    vote: Literal["paper", "exact-k", "k-weighted"] = "paper"
    schedule: Literal["r-1", "r"] = "r-1"
    start_step: Literal["first", "last"] = "first"
    score: Literal["successor", "detail", "none"] = "successor"
    """Which attacks the run scores on its transcript: the paper's successor attack
    (``disclosure_*`` metrics); ``"detail"``: also the informed successor and the counts
    for pooling runs (:func:`attribution_detail`); ``"none"``: no attack (a sweep that
    needs accuracy only, e.g. very large k, where the attack dominates the run's time)."""

    @field_validator("delta")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("must be finite")
        return v


class ValueCache:
    """Results of pure functions of arrays, keyed by the arrays' values (one process).

    A grid runs the same split at many points (Figs. 3-4 all at k = 5), and the
    simulation-side references (the union's true top-k and ties, scikit-learn's
    predictions) depend only on the split's values and k: they are computed once per
    process and handed out read-only. Least recently used entries go first once the
    held arrays exceed ``max_bytes``.
    """

    def __init__(self, max_bytes: int = 256 << 20) -> None:
        from collections import OrderedDict

        self.max_bytes = max_bytes
        self.entries: OrderedDict[bytes, tuple[Any, int]] = OrderedDict()
        self.held = 0
        self.hits = 0

    @staticmethod
    def key(arrays: tuple[np.ndarray, ...], extra: tuple[Any, ...]) -> bytes:
        """A digest of the arrays' dtypes, shapes and bytes, and ``extra``."""
        import hashlib

        h = hashlib.blake2b(repr(extra).encode(), digest_size=20)
        for a in arrays:
            a = np.ascontiguousarray(a)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        return h.digest()

    def get(self, arrays: tuple[np.ndarray, ...], extra: tuple[Any, ...],
            compute: Any) -> Any:
        """``compute()`` (a tuple of arrays or one array), cached by value."""
        k = self.key(arrays, extra)
        if k in self.entries:
            self.entries.move_to_end(k)
            self.hits += 1
            return self.entries[k][0]
        value = compute()
        parts = value if isinstance(value, tuple) else (value,)
        size = 0
        for part in parts:
            part.setflags(write=False)
            size += part.nbytes
        if size <= self.max_bytes:
            self.entries[k] = (value, size)
            self.held += size
            while self.held > self.max_bytes:
                _, (_, freed) = self.entries.popitem(last=False)
                self.held -= freed
        return value


_REFERENCES = ValueCache()


def owner_specs(data: PreparedData, order: list[str]) -> list[PartySpec]:
    """The ring owners' specs in ``order`` (each with its share of the training rows)."""
    s = data.scenario
    index = {name: i for i, name in enumerate(data.owner_names)}
    return [PartySpec(name, RingDataOwner, {
        "party_id": name, "index": index[name], "X": data.owner_X(index[name]),
        "y": data.owner_y(index[name]), "n_classes": data.n_classes, "run_id": data.run_id,
        "seed": s.run.seed, "mode": s.run.mode,
    }) for name in order]


def ring_of(data: PreparedData) -> tuple[tuple[str, ...], str]:
    """The ring order and start node of a run (from the seed's ``ring`` stream)."""
    return random_ring(data.owner_names, data.policy.generator("ring"))


def check_ring_size(scenario: Scenario, source: str, name: str) -> None:
    """A ring needs at least three data owners."""
    n = scenario.parties.n
    if n < MIN_PARTIES:
        raise ConfigError(f"invalid scenario {source}:\n  parties.n = {n}: Input should be "
                          f"greater than or equal to {MIN_PARTIES} ({name} runs over a ring "
                          "of data owners)")


@register
class PPKNNRing(ProtocolPlugin):
    """PP-kNN over a ring of data owners (Xiong, Chitti & Liu).

    PP-TopK over the ring, local votes, a secure sum.
    """

    name = NAME
    config_model = PPKNNRingConfig
    roles = (
        Role("owner", RingDataOwner, "[parties].n (>= 3)",
             "a data owner on the ring, in ring order from the start node", api=RingOwnerAPI),
        Role("start", RingDataOwner, "1 of the owners", "the random start node", api=RingOwnerAPI),
    )
    guarantee = "no DP: per-node disclosure probability to the successor (paper §6.6)"
    adversaries = ("informed-successor", "secure-sum-neighbours", "successor-attribution")
    driver = staticmethod(drive)

    def check_scenario(self, config: ProtocolConfig, scenario: Scenario, *, source: str
                       ) -> None:
        """The ring needs three owners."""
        check_ring_size(scenario, source, self.name)

    def plan(self, config: ProtocolConfig, data: PreparedData) -> Plan:
        """Owners in ring order from the start node; the public query batch."""
        assert isinstance(config, PPKNNRingConfig)
        if config.k > len(data.train_y):
            raise ConfigError(f"k = {config.k} is larger than the union of the parties' data "
                              f"({len(data.train_y)} training rows); choose k <= "
                              f"{len(data.train_y)}")
        ring, start = ring_of(data)
        max_distance = public_max_distance(data.bounds.lower, data.bounds.upper, data.queries)
        params = TopKParams(k=config.k, p0=config.p0, d=config.d, rounds=config.rounds,
                            delta=config.delta, max_distance=max_distance,
                            schedule=config.schedule, start_step=config.start_step)
        ppknn = PPKNNConfig(params=params, weighting=config.weighting,
                            secure_sum=config.secure_sum, vote=config.vote)
        order = ring_from_start(ring, start)
        public = {
            "run_id": data.run_id, "ring": list(ring), "start": start,
            "party_index": {p: i for i, p in enumerate(data.owner_names)},
            "max_distance": max_distance, "n_queries": int(len(data.queries)),
            "k": config.k, "classes": [str(c) for c in data.dataset.classes],
        }
        # ring order from the start node: in the hosted layout neighbours share a host
        return Plan(specs=tuple(owner_specs(data, order)),
                    roles={"owner": tuple(ring), "start": (start,)}, config=ppknn,
                    queries=data.queries, query_labels=data.query_labels, public=public)

    def baseline(self, config: ProtocolConfig, data: PreparedData) -> Baseline:
        """scikit-learn's brute-force kNN on the union, same k and weighting."""
        assert isinstance(config, PPKNNRingConfig)
        return Baseline("kNN (union, non-private)", _REFERENCES.get(
            (data.union_X, data.union_y, data.queries), ("sklearn", config.k, config.weighting),
            lambda: sklearn_knn(data.union_X, data.union_y, data.queries, k=config.k,
                                weighting=config.weighting)))

    def measure(self, config: ProtocolConfig, data: PreparedData, plan: Plan,
                result: Any, baseline: Baseline, transcript: Transcript | None) -> Measured:
        """Ties, exact top-k against the union, and per-node disclosure from the transcript."""
        assert isinstance(config, PPKNNRingConfig)
        detail: PPKNNResult = result.detail
        true_topk, ties = _REFERENCES.get(
            (data.queries, data.union_X), ("topk", config.k),
            lambda: union_topk_and_ties(data.queries, data.union_X, config.k))
        exact = np.all(detail.final_vector == true_topk, axis=1)
        knn = baseline.predictions
        non_tie = ~ties
        same = result.predictions == knn
        metrics: dict[str, Any] = {
            "k": config.k, "p0": config.p0, "d": config.d, "rounds": config.rounds,
            "delta": config.delta, "weighting": config.weighting,
            "secure_sum": config.secure_sum,
            "accuracy_ppknn": float(np.mean(result.predictions == data.query_labels)),
            "accuracy_knn": float(np.mean(knn == data.query_labels)),
            "agreement_with_knn": float(np.mean(same)),
            "agreement_with_knn_excluding_ties": (float(np.mean(same[non_tie]))
                                                  if non_tie.any() else float("nan")),
            "queries_with_tie_at_kth": int(ties.sum()),
            "topk_exact_fraction": float(exact.mean()),
            "topk_correctness_bound": plan.config.params.correctness_bound(),
            "vote": config.vote, "schedule": config.schedule, "start_step": config.start_step,
        }
        metrics["union_size"] = int(len(data.train_y))
        voters = _voters(data, detail.final_vector, config.vote, config.k)
        metrics["voters_mean"] = float(voters.mean()) if len(voters) else float("nan")
        metrics["queries_over_k_voters"] = int((voters > config.k).sum())
        report = None
        per_party: dict[str, dict[str, Any]] = {}
        if transcript is not None:
            totals = transcript.totals().by_protocol
            topk = totals.get(TOPK_PROTOCOL, [0, 0])
            summed = [sum(v[i] for p, v in totals.items() if p != TOPK_PROTOCOL)
                      for i in (0, 1)]
            metrics |= {"messages_topk": int(topk[0]), "bytes_topk": int(topk[1]),
                        "messages_sum": int(summed[0]), "bytes_sum": int(summed[1])}
        if transcript is not None and config.score != "none":
            report = measure_disclosure(transcript, plan.public)
            lo, hi = report.pooled_interval
            metrics["disclosure"] = {
                "adversary": report.adversary,
                "definition": "fraction of queries where the node's successor correctly "
                              "attributes at least one value of the vector it received from "
                              "the node to it",
                "mean_probability": report.mean_probability, "pooled_ci95": [lo, hi],
            }
            metrics["disclosure_mean"] = report.mean_probability
            metrics["disclosure_ci_low"], metrics["disclosure_ci_high"] = lo, hi
            for d in report.parties:
                per_party[d.party] = {"disclosure": d.probability,
                                      "disclosure_ci_low": d.interval[0],
                                      "disclosure_ci_high": d.interval[1]}
            if config.score == "detail":
                metrics |= attribution_detail(transcript, plan.public)
        # the pooling counts are None unless scored (a sweep's rows then compare equal
        # across processes, which NaN would not)
        for key in DETAIL_METRICS:
            metrics.setdefault(key, None)
        return Measured(metrics=metrics, per_party=per_party,
                        per_query={"tie_at_kth": ties.astype(int),
                                   "topk_exact": exact.astype(int)},
                        leakage=report)

    def leakage(self, transcript: Transcript, public: Mapping[str, Any]) -> DisclosureReport:
        """Per-node disclosure recomputed from the transcript alone."""
        return measure_disclosure(transcript, public)

    def ground_truth(self, outcome: Any, data: PreparedData) -> dict[str, np.ndarray]:
        """``votes/<owner>``: each owner's encoded local vote vector ``(Q, C)``.

        Computed by the owner's own code from the final broadcast vector.
        """
        from ppknn.core.errors import PpknnError
        from ppknn.protocols.ppknn_ring.config import RingSetup

        detail = outcome.result.detail
        plan = outcome.plan
        truth: dict[str, np.ndarray] = {}
        setup = RingSetup(ring=tuple(plan.public["ring"]), start=plan.public["start"],
                          params=plan.config.params, weighting=plan.config.weighting)
        for spec in plan.specs:
            try:  # the owner's own code, from its construction arguments
                owner = spec.factory(**spec.kwargs)
                owner.configure(setup)
                owner.load_queries(plan.queries)
                owner._set_final(np.asarray(detail.final_vector))
            except PpknnError:  # e.g. owners built for query blocks: no vote truth, no row
                continue
            truth[f"votes/{spec.party_id}"] = np.asarray(owner.last_votes, dtype=np.uint64)
        return truth

    def compare_defaults(self) -> Mapping[str, Any]:
        """``ppknn compare --quick``: the privacy key, its two levels (most private first)."""
        return {"privacy_key": "p0", "quick_levels": [1.0, 0.0], "settings": {"k": 5}}

    def deviations(self) -> Mapping[str, Any]:
        """Its deviating parties (:mod:`.deviations`)."""
        return deviating.KINDS

    def headline(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Exact top-k against the paper's bound; mean disclosure with its interval."""
        lines = [("exact top-k fraction / paper bound",
                  f"{summary['topk_exact_fraction']:.3f} / "
                  f"{summary['topk_correctness_bound']:.3f}")]
        if "disclosure" in summary:
            lo, hi = summary["disclosure"]["pooled_ci95"]
            lines.append(("mean per-node disclosure [95% CI]",
                          f"{summary['disclosure']['mean_probability']:.3f} "
                          f"[{lo:.3f}, {hi:.3f}]"))
        return lines

    def plot(self, ax: Any, outcome: Any) -> bool:
        """Per-node disclosure with 95% intervals (sorted curves beyond 40 nodes)."""
        from ppknn.simulations.results import plot_disclosure

        if outcome.leakage is None:
            return False
        plot_disclosure(ax, outcome.leakage)
        return True


def attribution_detail(transcript: Transcript, public: Mapping[str, Any]) -> dict[str, Any]:
    """Both successor adversaries' counts of one run, for pooling over runs.

    The same attack as :func:`ppknn.protocols.ppknn_ring.plugin.attribution.ring_attribution` (the
    successor compares every vector it receives with the last one it sent; the informed
    successor keeps only values also in the final vector), with what pooling needs:
    ``<adv>_by_position`` (disclosed queries per node, in ring order from the start node,
    a list), ``<adv>_claimed`` / ``_correct`` (claimed values, and those right), and
    ``<adv>_exact_rows`` / ``_exact_hits`` (claimed (message, query) rows, and those whose
    every claimed value is the target's). ``<adv>`` is ``disclosure`` (the paper's
    adversary) or ``informed``; ``disclosure_trials`` is the queries per node.
    """
    from ppknn.core.leakage import multiset_new
    from ppknn.core.messages import decode_arrays
    from ppknn.simulations.leakage.stream import iter_rows, rounds_of

    index = {p: int(i) for p, i in dict(public["party_index"]).items()}
    n_q = int(public["n_queries"])
    max_d = float(public["max_distance"])
    order = ring_from_start(tuple(public["ring"]), str(public["start"]))
    final: np.ndarray | None = None
    starts: set[str] = set()
    for row in iter_rows(transcript, TOPK_PROTOCOL, kinds=("topk-final",)):
        starts.add(row["sender"])
        if final is None:
            final = np.asarray(decode_arrays(row["payload"])["g"])
    names = ("disclosure", "informed")
    disclosed = {a: {p: np.zeros(n_q, dtype=bool) for p in order} for a in names}
    counts = {a: dict.fromkeys(("claimed", "correct", "exact_rows", "exact_hits"), 0)
              for a in names}
    last_sent: dict[str, np.ndarray] = {}
    for r in rounds_of(transcript, TOPK_PROTOCOL):
        start_now = {}
        for row in iter_rows(transcript, TOPK_PROTOCOL, round=r, kinds=("topk-vector",)):
            if row["sender"] in starts:
                start_now[row["sender"]] = np.asarray(decode_arrays(row["payload"])["g"])
        sent_now: dict[str, np.ndarray] = {}
        for row in iter_rows(transcript, TOPK_PROTOCOL, round=r, kinds=("topk-vector",)):
            sender, me = row["sender"], row["receiver"]
            g = np.asarray(decode_arrays(row["payload"])["g"])
            reference = (start_now[me] if me in start_now
                         else last_sent.get(me, np.full(g.shape, max_d)))
            plain = multiset_new(g, reference)
            prov = np.broadcast_to(np.asarray(decode_arrays(row["provenance"])["g"]), g.shape)
            own = prov == index[sender]
            masks = {"disclosure": plain}
            if final is not None:
                masks["informed"] = plain & ~multiset_new(g, final)
            for adv, mask in masks.items():
                if not mask.any():
                    continue
                hit = mask & own
                c = counts[adv]
                c["claimed"] += int(mask.sum())
                c["correct"] += int(hit.sum())
                rows = mask.reshape(mask.shape[0], -1)
                claimed_rows = rows.any(axis=1)
                right = np.all(~rows | own.reshape(own.shape[0], -1), axis=1)
                c["exact_rows"] += int(claimed_rows.sum())
                c["exact_hits"] += int((claimed_rows & right).sum())
                disclosed[adv][sender] |= hit.reshape(hit.shape[0], -1).any(axis=1)
            sent_now[sender] = g
        last_sent.update(sent_now)
    out: dict[str, Any] = {"disclosure_trials": n_q}
    for adv in names:
        by_pos = [int(disclosed[adv][p].sum()) for p in order]
        out[f"{adv}_by_position"] = by_pos
        out |= {f"{adv}_{key}": value for key, value in counts[adv].items()}
    out["informed_mean"] = (float(np.mean(out["informed_by_position"])) / n_q if n_q
                            else float("nan"))
    return out


def _voters(data: PreparedData, final: np.ndarray, rule: str, k: int) -> np.ndarray:
    """Voters (total vote weight, unweighted) per query under ``rule`` (simulation side).

    ``"k-weighted"``: the matched points plus ``min(rest, k - matched)``, the weight the
    other points within Delta share.
    """
    matched = np.zeros(len(data.queries), dtype=np.float64)
    within = np.zeros(len(data.queries), dtype=np.float64)
    for i in range(len(data.owner_rows)):
        x = data.owner_X(i)
        if len(x) == 0:
            continue
        dist = euclidean_distances(data.queries, x)
        if rule != "paper":
            matched += voter_mask(dist, final, "exact-k").sum(axis=1)
        if rule != "exact-k":
            within += voter_mask(dist, final, "paper").sum(axis=1)
    if rule == "paper":
        return within
    if rule == "exact-k":
        return matched
    return matched + np.minimum(within - matched, np.maximum(k - matched, 0))


__all__ = ["NAME", "PPKNNRing", "PPKNNRingConfig", "ValueCache", "attribution_detail",
           "check_ring_size", "owner_specs", "ring_of"]
