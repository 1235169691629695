"""The central DP owner: private training data, a privacy ledger, ε-DP labels on demand.

A :class:`DPOwner` answers analysts' batches of test instances (r-N or
k-NN, see :mod:`protocols.dp_knn`) with ε-DP labels, or converts a k-NN
batch to ε-DP radii alone (``"convert"`` queries). For every request it

1. decodes and validates the query against public facts only (feature
   count, algorithm, ε finite and > 0, a fresh request id per analyst), and
   refuses one whose worst-case cost (:mod:`~protocols.dp_knn.cost`: n, d,
   the algorithm and the clique budget, never the data) is over
   ``request_time_limit_s`` or ``request_memory_limit_bytes``
   (:class:`~core.errors.RequestTooLarge`, naming the largest batch that
   fits), before its id is claimed or the ledger charged; requests served
   at the same time are admitted while their estimates sum within
   ``request_memory_limit_bytes`` (the others wait: :class:`~protocols.dp_knn.cost.MemoryGate`);
2. does the data-free work: the region overlap graph, its components and
   clique bounds (cached per batch, so the same batch at several ε is
   analysed once); for an r-N batch without a radius this waits until the
   radius is chosen (step 4);
3. **reserves the batch's ε on the ledger** (with a private radius, its ε_r
   too: :attr:`~ppknn.protocols.dp_knn.protocol.Query.cost`) -- owner-wide and per analyst
   (the message's sender) -- raising :class:`~core.errors.BudgetExhausted`
   before any training row is read when it does not fit;
4. reads the data -- first, for a batch without a radius, choosing one ε_r-DP
   radius for it (:func:`~ppknn.protocols.dp_knn.radius.choose_radius`) --, draws the
   noise from a stream addressed by ``(analyst, request id)`` (so concurrent
   requests never share a generator and a run repeats whatever the
   interleaving), and
5. answers with one message that carries the labels and the ε charged.

The ledger is thread-safe, so one owner can serve many analysts at once:
from threads, or as a runtime party with ``max_concurrency > 1`` in its
:class:`~core.runtime.PartySpec` (on Ray, a threaded actor whose calls run
concurrently; :attr:`DPOwner.peak_concurrency` tells how many overlapped).
Since the noise of a request depends only on (analyst, request id), an
answered request's labels do not depend on the interleaving; which requests
the ledger refuses when the budget runs out does (first come, first served).

:meth:`DPOwner.answer` raises :class:`~core.errors.BudgetExhausted` (or its
:class:`~core.errors.RequestTooLarge`) on a refused request;
:meth:`DPOwner.reply` -- the step the driver calls -- returns a
``"refused"`` message to the analyst instead (see :mod:`core.service`), so
the refusal and its reason are in the transcript.

Neighbouring datasets: add or remove one training record.

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_knn.protocol import Answer, Query
>>> owner = DPOwner(party_id="owner", X=np.array([[0.1], [0.2], [0.9]]), y=np.array([0, 0, 1]),
...                 classes=[0, 1], lower=[0.0], upper=[1.0], epsilon=1.0, run_id="r")
>>> q = Query(task="rn", algorithm="proposed", x=np.array([[0.15]]), radius=0.1, epsilon=0.25)
>>> reply = owner.answer(q.to_message(run_id="r", sender="alice", receiver="owner", request=0))
>>> Answer.from_message(reply).epsilon, owner.ledger.remaining("alice").epsilon
(0.25, 0.75)
>>> big = Query(task="rn", algorithm="proposed", x=np.array([[0.15]]), radius=0.1, epsilon=0.9)
>>> owner.reply(big.to_message(run_id="r", sender="alice", receiver="owner", request=1)).kind
'refused'
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ppknn.core.data import DomainBounds
from ppknn.core.dp import PrivacyCost, PrivacyLedger
from ppknn.core.dp.validation import check_real
from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import Message, PartyId
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.core.service import answer_or_refuse
from ppknn.protocols.dp_knn.api import DPOwnerAPI
from ppknn.protocols.dp_knn.conversion import convert_interactive, convert_noninteractive
from ppknn.protocols.dp_knn.cost import (
    DEFAULT_REQUEST_MEMORY_LIMIT_BYTES,
    DEFAULT_REQUEST_TIME_LIMIT_S,
    MemoryGate,
    check_request,
    check_request_limits,
)
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.knn import classify_knn
from ppknn.protocols.dp_knn.protocol import Answer, Query
from ppknn.protocols.dp_knn.radius import choose_radius
from ppknn.protocols.dp_knn.rn import DEFAULT_CLIQUE_WORK, RNPlan, classify_rn, plan_rn
from ppknn.protocols.dp_knn.validation import encode_labels

PLAN_CACHE = 32
"""Overlap-graph plans kept (least recently used dropped), each without its edges."""

_NO_EDGES = np.zeros((0, 2), dtype=np.int64)
_NO_EDGES.flags.writeable = False


def _clique_limits(work: object, seconds: object) -> tuple[int, float | None]:
    """The owner's clique-search limits, checked (a :class:`ConfigError` naming the value)."""
    if isinstance(work, bool) or not isinstance(work, (int, np.integer)) or work < 1:
        raise ConfigError(f"clique_work_limit = {work!r}; allowed: an integer >= 1 (work units "
                          "of the clique search per batch)")
    if seconds is None:
        return int(work), None
    limit = check_real(seconds, "clique_time_limit_s")
    if limit <= 0:
        raise ConfigError(f"clique_time_limit_s = {seconds!r}; allowed: a number of seconds "
                          "> 0, or none (no wall-clock cap)")
    return int(work), limit


class DPOwner(DPOwnerAPI):
    """The data owner of Gursoy et al.: answers r-N / k-NN batches with ε-DP labels.

    Parameters
    ----------
    party_id:
        This party's name.
    X, y:
        Private training rows ``(N, D)`` and their labels (values of ``classes``).
    classes:
        The public label set; answers carry indices into it.
    lower, upper:
        The public domain bounds (every training row must lie inside).
    epsilon, delta:
        The owner's total budget.
    analyst_epsilon:
        Optional cap on what any single analyst may spend.
    run_id:
        The run's id (bound into messages).
    index:
        This party's provenance code.
    seed, mode:
        Root seed and randomness mode (``"secure"``: OS entropy and exact samplers).
    clique_work_limit:
        Deterministic work budget of the clique search per batch (an int >= 1;
        :mod:`~protocols.dp_knn.cliques`): the answers depend on the seed only.
    clique_time_limit_s:
        Optional wall-clock cap of the clique search per batch (``None``, the
        default: none). Setting it makes the answers depend on the machine's
        speed and load whenever the cap stops a search before the budget does.
    request_time_limit_s, request_memory_limit_bytes:
        Limits on a request's worst-case estimated time (seconds) and peak
        memory (bytes), from public facts only (:mod:`~protocols.dp_knn.cost`;
        defaults 600 s and 8 GiB); a request over either is refused before the
        ledger is charged. ``None`` disables a limit.
    count_share:
        Share of a conversion's budget spent on the noisy ``|D|``.
    accountant:
        How the ledger composes requests (:class:`~core.dp.ledger.PrivacyLedger`):
        ``"auto"`` (``"pld"`` when ``delta > 0``), ``"basic"``, ``"advanced"``
        or ``"pld"``. Requests are charged with their loss law
        (:func:`request_law`).
    """

    def __init__(self, *, party_id: PartyId, X: Any, y: Any, classes: Sequence[Any],
                 lower: ArrayLike, upper: ArrayLike, epsilon: float,
                 delta: float = 0.0, analyst_epsilon: float | None = None, run_id: str,
                 index: int = 0, seed: int = 0, mode: str = RandomnessMode.REPRODUCIBLE.value,
                 clique_work_limit: int = DEFAULT_CLIQUE_WORK,
                 clique_time_limit_s: float | None = None,
                 request_time_limit_s: float | None = DEFAULT_REQUEST_TIME_LIMIT_S,
                 request_memory_limit_bytes: int | None = DEFAULT_REQUEST_MEMORY_LIMIT_BYTES,
                 count_share: float = 0.05, accountant: str | None = "auto") -> None:
        labels, cls = encode_labels(y, classes)
        X = np.asarray(X, dtype=np.float64)
        self.bounds = DomainBounds(np.asarray(lower, dtype=np.float64),
                                   np.asarray(upper, dtype=np.float64))
        if X.ndim != 2 or X.shape[1] != len(self.bounds.lower):
            raise ConfigError(f"training rows of shape {X.shape} do not match the "
                              f"{len(self.bounds.lower)} declared domain bounds")
        self.bounds.check(X, f"DP owner {party_id!r}")
        self.party_id = party_id
        self.index = int(index)
        self.run_id = run_id
        self.classes = cls
        self._index = LabelIndex(X, labels, n_classes=len(cls))
        self.ledger = PrivacyLedger(owner=party_id, epsilon=epsilon, delta=delta,
                                    analyst_epsilon=analyst_epsilon, accountant=accountant)
        self.mode = RandomnessMode(mode)
        self._policy = SeedPolicy(root=seed, mode=self.mode)
        self.clique_work_limit, self.clique_time_limit_s = _clique_limits(
            clique_work_limit, clique_time_limit_s)
        self.request_time_limit_s, self.request_memory_limit_bytes = check_request_limits(
            request_time_limit_s, request_memory_limit_bytes)
        self._memory = MemoryGate(self.request_memory_limit_bytes)
        self.count_share = count_share
        self._lock = threading.Lock()
        self._seen: set[tuple[str, int]] = set()
        self._plans: OrderedDict[str, RNPlan] = OrderedDict()
        self._in_flight = 0
        self._peak = 0

    @property
    def n_features(self) -> int:
        """Public schema: the feature count."""
        return self._index.n_features

    # -- helpers -------------------------------------------------------------
    def _plan(self, x: np.ndarray, radius: np.ndarray) -> RNPlan:
        """The data-free overlap analysis of one batch (cached).

        An answer needs the components and their clique bounds only, so the plan is
        kept, and returned, without its edge list or packed adjacency (``graph.edges``
        empty, ``graph.packed`` None): O(n) memory per batch instead of O(edges) -- a
        dense batch of 10,000 queries has about 32 million edges, 512 MB as a list and
        12.5 MB packed, and :data:`PLAN_CACHE` of them would not fit.
        """
        h = hashlib.sha256(np.ascontiguousarray(x).tobytes())
        h.update(np.ascontiguousarray(radius).tobytes())
        h.update(repr((x.shape, self.clique_work_limit, self.clique_time_limit_s)).encode())
        key = h.hexdigest()
        with self._lock:
            if key in self._plans:
                self._plans.move_to_end(key)
                return self._plans[key]
        plan = plan_rn(x, radius, work_limit=self.clique_work_limit,
                       time_limit_s=self.clique_time_limit_s)
        plan = dataclasses.replace(plan, graph=dataclasses.replace(plan.graph, edges=_NO_EDGES,
                                                                   packed=None))
        with self._lock:
            self._plans[key] = plan
            while len(self._plans) > PLAN_CACHE:
                self._plans.popitem(last=False)
        return plan

    def _claim(self, analyst: str, request: int) -> None:
        with self._lock:
            if (analyst, request) in self._seen:
                raise ProtocolError(
                    f"analyst {analyst!r} reused request id {request}; every batch needs a fresh "
                    "id (its noise stream is derived from it)"
                )
            self._seen.add((analyst, request))

    def _release(self, analyst: str, request: int) -> None:
        with self._lock:
            self._seen.discard((analyst, request))

    @property
    def peak_concurrency(self) -> int:
        """The most :meth:`answer` calls that have run at the same time."""
        return self._peak

    # -- the protocol step -----------------------------------------------------
    def reply(self, request: Message) -> Message:
        """:meth:`answer`, or a ``"refused"`` message when the ledger refuses the batch."""
        return answer_or_refuse(self.answer, request)

    def answer(self, request: Message) -> Message:
        """Answer one batch (module docstring); ``BudgetExhausted`` if it does not fit."""
        with self._lock:
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
        try:
            return self._answer(request)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _answer(self, request: Message) -> Message:
        if request.receiver != self.party_id:
            raise ProtocolError(f"{self.party_id}: got a message for {request.receiver!r}")
        query, rid = Query.from_message(request)
        if query.x.shape[1] != self.n_features:
            raise ConfigError(f"test instances have {query.x.shape[1]} features, the training "
                              f"data has {self.n_features}")
        analyst = request.sender
        # public facts only, before the id is claimed and the ledger charged
        estimate = check_request(query.n_queries, self.n_features, task=query.task,
                                 algorithm=query.algorithm,
                                 clique_work_limit=self.clique_work_limit,
                                 time_limit_s=self.request_time_limit_s,
                                 memory_limit_bytes=self.request_memory_limit_bytes,
                                 what=f"request {rid}")
        self._claim(analyst, rid)
        with self._memory.admitted(estimate.bytes):  # with the requests running beside it
            return self._admitted(query, rid, analyst, request)

    def _admitted(self, query: Query, rid: int, analyst: str, request: Message) -> Message:
        plan = None
        if query.task == "rn" and query.algorithm == "proposed" and not query.auto_radius:
            plan = self._plan(query.x, query.radius)  # public: test instances only
        label = f"{query.kind} x{query.n_queries} (request {rid})"
        if query.auto_radius:
            label += f", radius ε_r {query.radius_epsilon:g} + classification ε {query.epsilon:g}"
        try:
            reservation = self.ledger.reserve(request_law(query, self.mode), analyst=analyst,
                                              label=label)
        except BaseException:
            self._release(analyst, rid)  # refused before any noise was drawn: the id stays free
            raise
        charged = query.cost
        with reservation:
            if query.auto_radius:
                rng_r = self._policy.generator("dp-owner", "radius", analyst, rid)
                r = choose_radius(self._index, query.x, target=float(query.radius_target or 0),
                                  epsilon=float(query.radius_epsilon or 0), bounds=self.bounds,
                                  rng=rng_r, mode=self.mode)
                query = dataclasses.replace(query, radius=r, radius_target=None,
                                            radius_epsilon=None)
                if query.algorithm == "proposed":  # the radius is now public (released)
                    plan = self._plan(query.x, query.radius)
            rng = self._policy.generator("dp-owner", "answer", analyst, rid)
            answer = dataclasses.replace(self._compute(query, rid, plan, rng), epsilon=charged)
        return answer.to_message(run_id=self.run_id, sender=self.party_id, receiver=analyst,
                                 round=request.round, provenance=self.index)

    def _compute(self, query: Query, rid: int, plan: RNPlan | None, rng: Any) -> Answer:
        if query.task == "rn":
            rn = classify_rn(self._index, query.x, query.radius, algorithm=query.algorithm,
                             epsilon=query.epsilon, rng=rng, mode=self.mode, plan=plan,
                             work_limit=self.clique_work_limit,
                             time_limit_s=self.clique_time_limit_s)
            return _answer(rid, query.epsilon, rn.labels, query.radius, rn.sensitivity, rn.plan)
        if query.task == "convert":  # the ε-DP radii themselves (Figs. 10-11)
            common = {"epsilon": query.epsilon, "bounds": self.bounds, "rng": rng,
                      "count_share": self.count_share, "mode": self.mode}
            if query.algorithm == "interactive":
                conv = convert_interactive(self._index, query.x, query.k,
                                           candidates=query.candidates, **common)
            else:
                conv = convert_noninteractive(self._index, query.x, query.k, gamma=query.gamma,
                                              **common)
            q = query.n_queries
            return _answer(rid, query.epsilon, np.full(q, -1), conv.radii, np.full(q, np.nan),
                           None)
        knn = classify_knn(self._index, query.x, query.k, algorithm=query.algorithm,
                           epsilon=query.epsilon, rng=rng, bounds=self.bounds,
                           weight=query.weight, candidates=query.candidates, gamma=query.gamma,
                           count_share=self.count_share, mode=self.mode,
                           work_limit=self.clique_work_limit,
                           time_limit_s=self.clique_time_limit_s)
        q = query.n_queries
        if knn.rn is None:  # the baseline: ε/|X| per instance
            return _answer(rid, query.epsilon, knn.labels, np.full(q, np.nan), np.full(q, q), None)
        return _answer(rid, query.epsilon, knn.labels, knn.radii, knn.rn.sensitivity,
                       knn.rn.plan)

    def remaining(self, analyst: str | None = None) -> PrivacyCost:
        """What the owner (or ``analyst``) can still spend."""
        return self.ledger.remaining(analyst)


def request_law(query: Query, mode: RandomnessMode = RandomnessMode.REPRODUCIBLE) -> Any:
    """The privacy-loss law of one request, as the ledger charges it (cost ``query.cost``).

    An r-N batch labelled by ``proposed`` or ``baseline-laplace`` releases
    Laplace noise on its counts whose L1 sensitivity is the noise's (a record
    lies in one overlap component, so it moves one Laplace release): in
    reproducible mode its loss is dominated by one-dimensional Laplace(ε)
    noise. Every other request is ε-DP, dominated by randomised response at
    ε (so is a private radius, at ε_r). Both laws are tighter than basic
    composition under the PLD accountant; under ``"basic"`` only the cost counts.
    """
    from ppknn.core.dp.pld import Composite, LaplaceLoss, RandomisedResponseLoss

    laplace = (query.task == "rn" and query.algorithm in ("proposed", "baseline-laplace")
               and RandomnessMode(mode) is RandomnessMode.REPRODUCIBLE)
    labels = LaplaceLoss(query.epsilon) if laplace else RandomisedResponseLoss(query.epsilon)
    if not query.auto_radius:
        return labels
    return Composite((RandomisedResponseLoss(float(query.radius_epsilon or 0)), labels))


def _answer(rid: int, epsilon: float, labels: np.ndarray, radius: np.ndarray,
            sensitivity: np.ndarray, plan: RNPlan | None) -> Answer:
    q = len(labels)
    if plan is None:
        component = np.full(q, -1, dtype=np.int64)
        method = np.full(q, -1, dtype=np.int8)
    else:
        component = plan.graph.component
        method = plan.cliques.method[plan.graph.component]
    return Answer(request=rid, epsilon=epsilon, labels=labels, radius=radius,
                  sensitivity=np.asarray(sensitivity, dtype=np.float64), component=component,
                  clique_method=method)


__all__ = ["PLAN_CACHE", "DPOwner", "request_law"]
