"""Which of a node's points vote, given the broadcast final vector.

``vote = "paper"`` (the paper's rule, §4.2): every point with distance
``<= Delta``, the k-th value of the final vector, votes. When the final
vector still holds random fills (P0 > 0 and few rounds), Delta overestimates
the true k-th distance and more than k points vote; ties at Delta also add
voters.

``vote = "exact-k"`` (this framework's improvement, not in the paper): a
point votes only if its distance *occurs* in the final vector, and a node
admits at most as many of its points at a value as the value occurs in the
vector. Random fills are continuous draws that no real distance equals (with
probability one), so they get no voter, and a query has at most k voters:
the real entries of the final vector, i.e. the k nearest neighbours when
PP-TopK was exact. Ties: among a node's own points at one distance, the
points are admitted in the node's row order (a rule every node applies the
same way, needing no communication). Two *different* nodes each holding a
point at the same distance that occurs once in the vector both vote; the
nodes cannot see each other's counts without another secure sum, so such a
query has more than k voters (exact cross-node float ties need duplicate
rows; the simulation counts them).

``vote = "k-weighted"`` (also this framework's, not in the paper): the
points of ``"exact-k"`` vote with weight 1, and the other points within Delta
(a random fill in the vector usually replaced a withheld real neighbour
below it) share the remaining ``k - matched`` votes equally, so the total
weight is ``k`` whenever at least ``k`` points lie within Delta. The nodes
cannot see the counts, so every node adds to the secure sum its two class
vectors and its two counts (:func:`combine_k_weighted` then runs on the
total). With one round and ``P0 = 1`` no real value is in the vector and the
rule ranks classes as the paper's rule does (a common factor); it reveals
the two aggregate counts and the split of the votes, beyond the paper's total.

The rules read only the node's own distances and the public final vector,
and the final vector is broadcast under either rule, so choosing a rule
changes what each node learns about nothing but the vote it adds.

>>> import numpy as np
>>> dist = np.array([[0.1, 0.5, 0.3, 0.3]])
>>> final = np.array([[0.1, 0.3, 0.42]])           # 0.42: a random fill
>>> voter_mask(dist, final, "paper").tolist()
[[True, False, True, True]]
>>> voter_mask(dist, final, "exact-k").tolist()     # one 0.3 in the vector: one voter at 0.3
[[True, False, True, False]]
"""

from __future__ import annotations

import numpy as np

from ppknn.core.errors import ConfigError

try:  # optional: an install without a C compiler counts with numpy (the same counts)
    from ppknn.protocols.ppknn_ring import _topk_kernel as _kernel
except ImportError:  # pragma: no cover - depends on the install
    _kernel = None

VOTE_RULES = ("paper", "exact-k", "k-weighted")
"""Who votes: every point within the k-th value, only points whose distance is in the
final vector, or those with weight 1 and the rest sharing the remaining weight."""


def voter_mask(dist: np.ndarray, final: np.ndarray, rule: str,
               rows: np.ndarray | None = None) -> np.ndarray:
    """Boolean ``(Q, W)``: which of a node's points vote for each query.

    Parameters
    ----------
    dist:
        ``(Q, W)`` the node's distances (any column order; other columns may be
        absent as long as every candidate within Delta is present).
    final:
        ``(Q, k)`` the broadcast final vector, ascending per row.
    rule:
        ``"paper"`` or ``"exact-k"`` (module docstring; ``"k-weighted"`` uses both).
    rows:
        ``(Q, W)`` the node's row index of each column: ties among the node's
        points at one distance are admitted in row order (default: column order).
    """
    if rule not in ("paper", "exact-k"):
        raise ConfigError(f"vote must be one of {list(VOTE_RULES)}, got {rule!r}")
    dist = np.asarray(dist, dtype=np.float64)
    final = np.asarray(final, dtype=np.float64)
    q, w = dist.shape
    if rule == "paper" or w == 0:
        return dist <= final[:, -1:]
    tie_key = (np.broadcast_to(np.arange(w), dist.shape) if rows is None
               else np.asarray(rows))
    order = np.lexsort((tie_key, dist), axis=1)  # by distance, then row order
    s = np.take_along_axis(dist, order, axis=1)
    cols = np.arange(w)
    new_run = np.ones((q, w), dtype=bool)
    new_run[:, 1:] = s[:, 1:] != s[:, :-1]
    run_start = np.maximum.accumulate(np.where(new_run, cols, 0), axis=1)
    occurrence = cols - run_start  # 0 for the first point at a value, 1 for the next ...
    multiplicity = np.zeros((q, w), dtype=np.int64)
    candidates = s <= final[:, -1:]
    for j in range(final.shape[1]):  # k passes over the node's candidates
        multiplicity += candidates & (s == final[:, j : j + 1])
    admitted = occurrence < multiplicity
    out = np.empty_like(admitted)
    np.put_along_axis(out, order, admitted, axis=1)
    return out


def paper_counts(dist: np.ndarray, final: np.ndarray, labels: np.ndarray,
                 n_classes: int) -> np.ndarray | None:
    """Uniform class votes of the paper's rule, ``(Q, C)`` uint64, or ``None``.

    Row ``q`` counts, per class, the columns ``j`` with ``dist[q, j] <= final[q, -1]``
    whose point has class ``labels[j]``: ``voter_mask(dist, final, "paper")`` counted
    per class, the counts a node adds to the secure sum. Computed in one compiled pass
    over the distances (``_topk_kernel.class_counts``); ``None`` when the compiled
    extension is absent or the inputs are not the common case (float64 C-ordered
    ``dist`` and ``final``, one int64 label per column, each in ``[0, n_classes)``):
    the caller then counts with numpy (``tests/test_votes_kernel.py`` checks the two
    agree).

    >>> counts = paper_counts(np.array([[0.1, 0.5, 0.3]]), np.array([[0.1, 0.3]]),
    ...                       np.array([1, 0, 1]), 2)
    >>> counts is None or counts.tolist() == [[0, 2]]
    True
    """
    count = getattr(_kernel, "class_counts", None)  # absent from a build that predates it
    if count is None:
        return None
    q, w = dist.shape
    if (dist.dtype != np.float64 or final.dtype != np.float64 or final.ndim != 2
            or len(final) != q or final.shape[1] < 1 or labels.dtype != np.int64
            or labels.shape != (w,) or n_classes < 1 or not dist.flags.c_contiguous
            or not final.flags.c_contiguous or not labels.flags.c_contiguous):
        return None
    counts = np.empty((q, n_classes), dtype=np.uint64)  # zeroed by the kernel
    if count(dist, final, labels, counts, q, w, final.shape[1], n_classes) != 1:
        return None
    return counts


def combine_k_weighted(total: np.ndarray, n_classes: int, k: int) -> np.ndarray:
    """``(Q, C)`` class scores from the ``(Q, 2C + 2)`` total of ``"k-weighted"`` votes.

    ``matched + w * rest`` with ``w = min(1, (k - matched count) / rest count)`` (0
    when no point is in the rest).

    >>> t = np.array([[2, 0, 1, 3, 2, 4]])   # 2 matched votes for class 0; 4 more points
    >>> combine_k_weighted(t, 2, 3).tolist() # k = 3: the 4 others share 1 vote
    [[2.25, 0.75]]
    """
    total = np.asarray(total, dtype=np.float64)
    c = n_classes
    matched, rest = total[:, :c], total[:, c:2 * c]
    n_matched, n_rest = total[:, 2 * c], total[:, 2 * c + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(n_rest > 0, np.clip((k - n_matched) / n_rest, 0.0, 1.0), 0.0)
    return matched + w[:, None] * rest


__all__ = ["VOTE_RULES", "combine_k_weighted", "paper_counts", "voter_mask"]
