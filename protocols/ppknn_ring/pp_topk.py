"""PP-TopK (Xiong, Chitti & Liu): probabilistic top-k selection over a ring.

Each node holds a vector ``V`` of its k smallest distances per query; the
nodes find the k smallest values of the union by passing a global vector
``G`` around a ring for ``rounds`` rounds (Algorithm 2 of the paper,
vectorised over the query batch). All arrays have the query batch as their
leading axis: ``G`` and ``V`` are ``(Q, k)`` and sorted ascending per row.

Step of node ``i`` in round ``r`` (per query):

* ``P_r = P0 * d**(r-1)`` (``schedule = "r-1"``, the default) or
  ``P0 * d**r`` (``schedule = "r"``). READING (flagged deviation risk): the
  paper's formula is garbled in both places it appears (the prose before
  Algorithm 2 reads "P0 * d^r" with the exponent lost, the algorithm's first
  line "P0 * d^(r-1)" half-legible). ``r - 1`` is taken because it is the only
  reading consistent with the correctness bound of §5.1,
  ``(1 - P0**r * d**(r(r-1)/2))**k`` = the product of ``P_1 .. P_r``; the
  other reading is offered so its effect can be measured;
* ``G' = topk(G ∪ V)`` as a *stable multiset merge*: values of ``G`` come
  before equal values of ``V``, so a node's value displaces an incoming one
  only when strictly smaller; ``m`` = how many of the node's own values
  entered ``G'``;
* ``m == 0``, or the node already inserted its real values in an earlier
  round: pass ``G`` on unchanged (a node inserts its real values **at most
  once**, otherwise they would be counted twice);
* otherwise, with probability ``1 - P_r`` send ``G'`` (the node has now
  inserted); with probability ``P_r`` keep ``G[:k-m]`` and append ``m``
  values drawn uniformly from ``[G'[k], max(G'[k] + delta, G[k-m+1])]``
  (1-indexed as in the paper), then sort.

The start node begins round 1 from ``k`` copies of the public maximum
distance. READING (flagged): the paper says the start node "initializes a
global vector ... and sends this vector to its successor"; it does not say
whether the start node itself runs Algorithm 2 on that initial vector in
round 1 (``start_step = "first"``, the default: the start node is the first
node of every round) or forwards it unchanged and runs Algorithm 2 when the
vector comes back, as the last node of every round (``start_step = "last"``).
Both readings are implemented; under ``"first"`` the start node's successor
knows that every value below the maximum in the first vector it receives is
the start node's or a random fill. The initial value is public and finite
(the random-fill range uses ``G[k-m+1]``): the paper's "number larger than the
maximum distance between any query and any data point", computed from the
declared bounds and the public queries only (:func:`public_max_distance`; the
domain's diameter when every query lies inside the bounds). Nodes with fewer than
``k`` points pad ``V`` with ``+inf``: pads never enter ``G`` and are never
transmitted.

Every element carries its provenance (the index of the party it came from,
:data:`~core.messages.PUBLIC` for the initial maximum,
:data:`~core.messages.RANDOM_FILL` for random values). Provenance is only
permuted alongside values; no decision reads it.

Correctness (paper §5.1): the final vector is the true top-k with
probability at least ``(1 - P0**r * d**(r(r-1)/2))**k``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.knn import euclidean_distances, local_topk
from ppknn.core.messages import PROVENANCE_DTYPE, PUBLIC, RANDOM_FILL

try:  # the step compiled (built by pip install when a C compiler is there; optional)
    from ppknn.protocols.ppknn_ring import _topk_kernel as _kernel
except ImportError:  # pragma: no cover - exercised by the tests' kernel-off runs
    _kernel = None

PROTOCOL = "pp-topk"

SCHEDULES = ("r-1", "r")
"""Readings of the randomisation schedule: the exponent of ``d`` in ``P_r``."""

START_STEPS = ("first", "last")
"""Readings of the start node's place in a round (module docstring)."""


@dataclass(frozen=True, kw_only=True)
class TopKParams:
    """Public parameters of PP-TopK.

    Parameters
    ----------
    k:
        Number of smallest values to select (k >= 1).
    p0:
        Initial randomisation probability, in [0, 1].
    d:
        Randomisation factor (dampening), in (0, 1].
    rounds:
        Number of rounds (>= 1).
    delta:
        Minimum width of the random-fill range (>= 0).
    max_distance:
        Public maximum distance: the initial value of the global vector.
    schedule:
        ``"r-1"``: ``P_r = P0 * d**(r-1)``; ``"r"``: ``P_r = P0 * d**r``
        (module docstring: the paper's formula is garbled).
    start_step:
        ``"first"``: the start node runs Algorithm 2 on the initial vector in
        round 1; ``"last"``: it forwards the initial vector and runs Algorithm 2
        as the last node of every round (module docstring).
    """

    k: int
    p0: float = 1.0
    d: float = 0.5
    rounds: int = 2
    delta: float = 1e-3
    max_distance: float
    schedule: str = "r-1"
    start_step: str = "first"

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ConfigError(f"k must be an integer >= 1, got {self.k!r}")
        if not (0.0 <= self.p0 <= 1.0):
            raise ConfigError(f"P0 must be in [0, 1], got {self.p0}")
        if not (0.0 < self.d <= 1.0):
            raise ConfigError(f"d must be in (0, 1], got {self.d}")
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, (int, np.integer)) \
                or self.rounds < 1:
            raise ConfigError(f"rounds must be an integer >= 1, got {self.rounds!r}")
        if not (np.isfinite(self.delta) and self.delta >= 0):
            raise ConfigError(f"delta must be finite and >= 0, got {self.delta}")
        if not (np.isfinite(self.max_distance) and self.max_distance > 0):
            raise ConfigError(f"max_distance must be finite and > 0, got {self.max_distance}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"schedule must be one of {list(SCHEDULES)}, got {self.schedule!r}")
        if self.start_step not in START_STEPS:
            raise ConfigError(f"start_step must be one of {list(START_STEPS)}, "
                              f"got {self.start_step!r}")

    def randomisation_probability(self, round: int) -> float:
        """``P_r = P0 * d**(r-1)`` (or ``P0 * d**r`` with ``schedule = "r"``)."""
        exponent = round - 1 if self.schedule == "r-1" else round
        return float(self.p0 * self.d ** exponent)

    def correctness_bound(self) -> float:
        """Paper's lower bound on P(final vector = true top-k).

        ``(1 - prod_r P_r)**k``: ``(1 - P0**r * d**(r(r-1)/2))**k`` as in §5.1; with
        ``schedule = "r"`` the product is ``P0**r * d**(r(r+1)/2)``.

        >>> TopKParams(k=2, p0=1.0, d=0.5, rounds=2, max_distance=1.0).correctness_bound()
        0.25
        >>> TopKParams(k=2, p0=1.0, d=0.5, rounds=2, max_distance=1.0,
        ...            schedule="r").correctness_bound()
        0.765625
        """
        r = self.rounds
        product = float(np.prod([self.randomisation_probability(j) for j in range(1, r + 1)]))
        return float((1.0 - product) ** self.k)


def public_max_distance(lower: np.ndarray, upper: np.ndarray, queries: np.ndarray) -> float:
    """The initial value of the global vector: no query-to-point distance exceeds it.

    The larger of the domain's diameter and the distance from any query to the
    farthest corner of the box ``[lower, upper]``. It reads only public inputs (the
    declared or training-derived bounds and the query batch), so a query outside
    the bounds (possible when the bounds come from the training rows) is handled
    exactly, without clipping it.

    >>> public_max_distance(np.zeros(2), np.ones(2), np.array([[0.5, 0.5]]))
    1.4142135623730951
    >>> public_max_distance(np.zeros(2), np.ones(2), np.array([[3.0, 1.0]]))
    3.1622776601683795
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    diameter = float(np.linalg.norm(upper - lower))
    queries = np.asarray(queries, dtype=np.float64)
    if queries.size == 0:
        return diameter
    far = np.maximum(np.abs(queries - lower), np.abs(queries - upper))
    return float(max(diameter, np.sqrt((far**2).sum(axis=1)).max()))


def initial_vector(n_queries: int, params: TopKParams) -> tuple[np.ndarray, np.ndarray]:
    """The start node's initial ``G`` (all public maximum) and its provenance."""
    g = np.full((n_queries, params.k), params.max_distance)
    return g, np.full(g.shape, PUBLIC, dtype=PROVENANCE_DTYPE)


@dataclass(frozen=True)
class StepOutcome:
    """Result of one node's step (per query)."""

    g: np.ndarray
    provenance: np.ndarray
    inserted: np.ndarray  # (Q,) bool: real values inserted in this step
    randomised: np.ndarray  # (Q,) bool: random fill used in this step
    m: np.ndarray  # (Q,) own values that would have entered


def topk_step(
    g: np.ndarray,
    g_prov: np.ndarray,
    v: np.ndarray,
    *,
    own: int,
    already_inserted: np.ndarray,
    p_r: float,
    delta: float,
    rng: np.random.Generator,
    v_ascending: bool | None = None,
) -> StepOutcome:
    """One node's local algorithm (Algorithm 2), vectorised over queries.

    The generator is always advanced by the same amount (``Q`` coin flips and
    ``Q*k`` uniforms), so a node's stream does not depend on the values.

    Two implementations of the same step, bit for bit (``tests/test_topk_fast.py``
    checks them against each other and against the algorithm as first written):
    when both ``G`` and ``V`` are sorted ascending per row without NaN (always, for
    honest nodes) the merge is read off the sorted rows (:func:`_step_sorted_rows`);
    otherwise (e.g. an unsorted vector from a misbehaving predecessor) the rows are
    merged by a stable sort of ``G ∪ V`` (:func:`_step_by_sorting`, the algorithm as
    first vectorised). ``already_inserted`` is a boolean mask. ``v_ascending``: whether
    every row of ``v`` is known to be ascending and free of NaN (a node's own ``V``, checked
    once when it was built, :func:`ascending_rows`); ``None``: checked here.
    """
    g = np.asarray(g, dtype=np.float64)
    if g.ndim != 2 or g.shape != v.shape:
        raise ProtocolError(f"global vector shape {g.shape} does not match local {v.shape}")
    q, k = g.shape
    # Q coin flips then Q*k uniforms, drawn as one run of the stream (the same doubles as
    # two calls: a generator's doubles come one after the other whatever the call sizes)
    draws = rng.random(q * (k + 1))
    coins, uniforms = draws[:q], draws[q:].reshape(q, k)
    if q == 0:
        empty = np.zeros(0, dtype=bool)
        return StepOutcome(g, g_prov, empty, empty, np.zeros(0, dtype=np.int64))

    v = np.asarray(v, dtype=np.float64)
    g_prov = np.asarray(g_prov)
    if g_prov.shape != g.shape:
        raise ProtocolError(f"provenance shape {g_prov.shape} does not match {g.shape}")
    already_inserted = np.asarray(already_inserted)
    if _kernel is not None and v_ascending is not False:
        done = _compiled_step(g, g_prov, v, own, already_inserted, p_r, delta, coins,
                              uniforms, check_v=v_ascending is None)
        if done is not None:
            return done
    fast = (already_inserted.dtype == bool and _ascending_rows(g)
            and (_ascending_rows(v) if v_ascending is None else v_ascending))
    step = _step_sorted_rows if fast else _step_by_sorting
    return step(g, g_prov, v, own=own, already_inserted=already_inserted, p_r=p_r,
                delta=delta, coins=coins, uniforms=uniforms)


_INT32 = np.iinfo(np.int32)


def _compiled_step(g: np.ndarray, g_prov: np.ndarray, v: np.ndarray, own: int,
                   already_inserted: np.ndarray, p_r: float, delta: float, coins: np.ndarray,
                   uniforms: np.ndarray, *, check_v: bool) -> StepOutcome | None:
    """:func:`_step_sorted_rows` compiled (``_topk_kernel.c``), or ``None`` where it does not apply.

    The same outputs bit for bit, in one pass per row. ``None`` (the caller then takes the
    numpy paths, which decide as before) when the inputs are not the common case (a boolean
    mask of the batch's length, ``int32`` provenance, C-ordered arrays, ``own`` an
    ``int32``), when a row is not ascending or holds a NaN, and when a random fill's
    arithmetic could warn or meets zeros of opposite sign (numpy's own rules decide those).
    """
    q, k = g.shape
    if not (already_inserted.dtype == bool and already_inserted.shape == (q,)
            and g_prov.dtype == PROVENANCE_DTYPE and g.flags.c_contiguous
            and v.flags.c_contiguous and g_prov.flags.c_contiguous
            and already_inserted.flags.c_contiguous and _INT32.min <= own <= _INT32.max):
        return None
    out = np.empty((q, k))
    prov = np.empty((q, k), dtype=PROVENANCE_DTYPE)
    real, fill = np.empty(q, dtype=bool), np.empty(q, dtype=bool)
    m = np.empty(q, dtype=np.int64)
    status = _kernel.step(g, g_prov, v, already_inserted, coins, uniforms, out, prov, real,
                          fill, m, q, k, int(own), float(p_r), float(delta), check_v)
    return StepOutcome(out, prov, real, fill, m) if status == 1 else None


def ascending_rows(a: np.ndarray) -> bool:
    """Whether every row of the 2-D ``a`` is non-decreasing and free of NaN."""
    return _ascending_rows(np.asarray(a, dtype=np.float64))


def _ascending_rows(a: np.ndarray) -> bool:
    """Whether every row of the 2-D ``a`` is non-decreasing and free of NaN.

    Compared as one flat run of neighbours (a single pass) with the comparisons that
    straddle two rows set to true. A NaN fails every comparison, so with two or more
    columns a NaN anywhere makes a comparison inside its row false; with one column
    only the NaN test can catch it.
    """
    q, k = a.shape
    if k == 1:
        return not np.isnan(a).any()
    flat = a.ravel()
    ascending = flat[1:] >= flat[:-1]
    ascending[k - 1::k] = True  # last of a row against the first of the next
    return bool(ascending.all())


def _step_by_sorting(g: np.ndarray, g_prov: np.ndarray, v: np.ndarray, *, own: int,
                     already_inserted: np.ndarray, p_r: float, delta: float,
                     coins: np.ndarray, uniforms: np.ndarray) -> StepOutcome:
    """Algorithm 2 for any rows: merge by a stable sort of ``G ∪ V`` (G first among equals)."""
    q, k = g.shape
    values = np.concatenate([g, v], axis=1)
    origin = np.concatenate([g_prov, np.full(v.shape, own, dtype=PROVENANCE_DTYPE)], axis=1)
    order = np.argsort(values, axis=1, kind="stable")[:, :k]  # G first among equals
    flat = order + (np.arange(q) * (2 * k))[:, None]  # take_along_axis, by flat index
    merged = values.ravel()[flat]
    merged_prov = origin.ravel()[flat]
    own_in = order >= k
    m = own_in[:, 0].astype(np.int64)
    for j in range(1, k):  # a row sum over k columns, column by column
        m += own_in[:, j]
    m[already_inserted] = 0

    randomise = coins < p_r
    real = (m > 0) & ~randomise
    fill = (m > 0) & randomise

    keep = ~real[:, None]
    out = np.where(keep, g, merged)
    prov = np.where(keep, g_prov, merged_prov)

    if fill.any():
        lo = merged[:, k - 1]
        g_km = g[np.arange(q), np.clip(k - m, 0, k - 1)]  # paper's G[k-m+1], 1-indexed
        hi = np.maximum(lo + delta, g_km)
        draws = lo[:, None] + uniforms * (hi - lo)[:, None]
        slots = fill[:, None] & (np.arange(k)[None, :] >= (k - m)[:, None])
        out = np.where(slots, draws, out)
        prov = np.where(slots, RANDOM_FILL, prov)
        resort = np.argsort(out, axis=1, kind="stable")
        flat = resort + (np.arange(q) * k)[:, None]
        out = out.ravel()[flat]
        prov = prov.ravel()[flat]
    return StepOutcome(out, prov, real, fill, m)


def _step_sorted_rows(g: np.ndarray, g_prov: np.ndarray, v: np.ndarray, *, own: int,
                      already_inserted: np.ndarray, p_r: float, delta: float,
                      coins: np.ndarray, uniforms: np.ndarray) -> StepOutcome:
    """Algorithm 2 when every row of ``G`` and ``V`` is ascending and free of NaN.

    The same outputs as :func:`_step_by_sorting`, bit for bit, with fewer and smaller
    array passes. Rows are independent (every operation is per row or per element),
    so each kind of row can be computed on its own. Why each shortcut is exact
    (0-indexed; "before" is the stable order of ``G ∪ V``, G first among equals, a
    total preorder since there is no NaN):

    * ``V[j]`` is among the first k of the merge iff fewer than k values come
      before it: ``j`` of ``V`` and ``#(G <= V[j])`` of ``G``; with ``G``
      ascending that is ``V[j] < G[k-1-j]``. This holds for ``j < m`` exactly, so
      the first k of the merge are ``G[:k-m]`` and ``V[:m]``, and slot ``i`` is in
      the tail ``i >= k - m`` iff ``V[k-1-i] < G[i]`` (``tail``: one comparison of
      ``G`` with ``V`` reversed; ``m`` is the tail's length, ``m > 0`` iff the
      last slot is in it).
    * Rows inserting their real values take the merge, computed on those rows only
      by the stable sort of :func:`_step_by_sorting`. The merge is ascending, so
      the re-sort that function then applies to it changes nothing.
    * Random-fill rows are ``G[:k-m]`` then ``m`` draws, as in
      :func:`_step_by_sorting`, whose ``lo`` (``G'[k]`` in the paper, the last of
      the merge's first k) is the later of ``G[k-m-1]`` and ``V[m-1]``: ``V[m-1]``
      when ``V[m-1] >= G[k-m-1]`` (G first among equals) or ``m = k``, else
      ``G[k-m-1]`` (``G[k-1]`` when ``m = 0``). As in that path, ``lo``, ``hi``
      and the draws are computed for every row (the same values, so the same
      floating-point warnings) and only the fill rows use them. Each draw is
      ``lo + u*(hi - lo)`` with ``hi >= lo``, so it is ``>= lo >=`` every kept
      value (or NaN, which sorts last): the stable re-sort leaves the kept prefix
      in place and orders only the draws, whose provenance is all
      ``RANDOM_FILL``. Provenance does not move, and the values are the row's
      stable value sort (``np.sort`` and ``np.argsort`` with ``kind="stable"``
      order alike, so equal values such as ``-0.0`` and ``0.0`` keep their
      places).
    * Every other row is ``G``, ascending: the re-sort leaves it unchanged.
    """
    q, k = g.shape
    tail = v[:, ::-1] < g  # slot i holds one of V[:m] in the merge's first k
    m_true = tail.view(np.uint8) @ _ones(k)  # the tail's length
    active = tail[:, k - 1] & ~already_inserted  # m > 0 and no earlier insertion
    m = m_true * active  # the count reported: 0 once inserted
    randomise = coins < p_r
    real = active & ~randomise
    fill = active & randomise

    prov_dtype = np.result_type(g_prov.dtype, PROVENANCE_DTYPE)  # as the merge's
    if fill.any():
        row_start = _row_starts(q, k)
        # for every row, as the sorting path computes them (only fill rows use them)
        at = row_start + (k - m_true)  # flat index of slot k-m (V[m-1] there in the tail)
        v_last = v.ravel()[row_start + np.maximum(m_true - 1, 0)]  # V[m-1]
        g_last = g.ravel()[np.maximum(at - 1, row_start)]  # G[k-m-1]
        v_later = (m_true > 0) & ((m_true == k) | (v_last >= g_last))
        lo = np.where(v_later, v_last, g_last)  # G'[k], 1-indexed
        # paper's G[k-m+1], 1-indexed: G[k-m] (0-indexed), G[k-1] when m = 0 (reported)
        g_km = g.ravel()[np.where(m > 0, at, row_start + (k - 1))]
        hi = np.maximum(lo + delta, g_km)
        width = hi - lo
        draws = uniforms * width[:, None]
        draws += lo[:, None]  # lo + u*(hi - lo): the same float (addition commutes)
        slots = tail & fill[:, None]
        out = np.sort(np.where(slots, draws, g), axis=1, kind="stable")
        prov = np.where(slots, prov_dtype.type(RANDOM_FILL), g_prov).astype(prov_dtype,
                                                                            copy=False)
    else:  # fresh arrays, as the other path returns
        out, prov = g.copy(), g_prov.astype(prov_dtype)

    rows = np.flatnonzero(real)
    if len(rows):  # the stable merge of G and V, on these rows only
        values = np.concatenate([g[rows], v[rows]], axis=1)
        origin = np.concatenate([g_prov[rows], np.full((len(rows), k), own,
                                                       dtype=PROVENANCE_DTYPE)], axis=1)
        order = np.argsort(values, axis=1, kind="stable")[:, :k]  # G first among equals
        flat = order + (np.arange(len(rows)) * (2 * k))[:, None]  # take_along_axis, flat
        out[rows] = values.ravel()[flat]
        prov[rows] = origin.ravel()[flat]
    return StepOutcome(out, prov, real, fill, m)


@functools.cache
def _row_starts(q: int, k: int) -> np.ndarray:
    """Flat index of every row's first element in a C-ordered ``(q, k)`` array (read-only)."""
    out = np.arange(0, q * k, k)
    out.flags.writeable = False
    return out


@functools.cache
def _ones(k: int) -> np.ndarray:
    """``k`` ones (int64, read-only): a row sum of a boolean ``(q, k)`` as one product."""
    out = np.ones(k, dtype=np.int64)
    out.flags.writeable = False
    return out


def true_topk(distance_blocks: list[np.ndarray], k: int) -> np.ndarray:
    """The exact k smallest distances of the union (simulation ground truth)."""
    return local_topk(np.concatenate(distance_blocks, axis=1), k)


__all__ = [
    "PROTOCOL",
    "SCHEDULES",
    "START_STEPS",
    "StepOutcome",
    "TopKParams",
    "ascending_rows",
    "euclidean_distances",
    "initial_vector",
    "local_topk",
    "public_max_distance",
    "topk_step",
    "true_topk",
]
