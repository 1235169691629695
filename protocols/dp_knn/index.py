"""The DP owner's private index: per-label kd-trees over the training data.

Every count the classifiers release goes through :class:`LabelIndex`, so
"touching the data" has one address (tests watch it to prove that a refused
batch never reached the data). All queries are vectorised over the batch:
:meth:`LabelIndex.radius_counts` asks each label's
:class:`scipy.spatial.cKDTree` for ball sizes (``return_length=True``) with
one radius per test instance, and :meth:`LabelIndex.ball_counts` gives the
ball sizes of several radii per test instance (the k-NN -> r-N conversion).

Large balls (a good share of the data in every ball, as the conversion's
candidate radii have) are counted faster by brute force: every (instance,
row) squared distance at once (:func:`squared_distances`), compared with
``r * r``. Up to :data:`MAX_FEATURES` features the counts are the kd-tree's
to the last row, boundary included: the kd-tree keeps row t iff
``s(t) <= r * r``, with ``s`` the squared distance summed in feature order
(which :func:`squared_distances` reproduces bit for bit), because its node
bounds, summed in the same order, can neither prune a row with
``s(t) <= r * r`` nor admit one with ``s(t) > r * r`` (rounding is
monotone). Which of the two paths runs is decided from a sample of the batch
(:meth:`LabelIndex.prefers_brute_force`); it changes the speed only.

Above :data:`MAX_FEATURES` features the kd-tree decides boundary rows with sums
that depend on its shape, so brute force counts with the matrix-product form of
the distances (fast in high dimension) only the rows clearly inside each radius,
and flags the (instance, radius) pairs with a row within a band far wider than
any rounding of the sums (:data:`_HD_TOL`); the kd-trees count exactly those pairs.
Rows outside the band are decided alike by every summation order, the kd-tree's
node bounds included, so the counts are the kd-tree's.
The last brute-force :meth:`LabelIndex.ball_counts` batch is kept per label,
so the r-N step that follows a conversion finds its counts there.

Examples
--------
>>> import numpy as np
>>> idx = LabelIndex(np.array([[0.0], [0.5], [3.0]]), np.array([0, 1, 1]), n_classes=2)
>>> idx.radius_counts(np.array([[0.0], [3.0]]), np.array([1.0, 0.1])).tolist()
[[1, 1], [0, 1]]
>>> idx.ball_counts(np.array([[0.0], [3.0]]), np.array([[0.5, 3.0], [0.1, 2.5]])).tolist()
[[2, 3], [1, 2]]
>>> idx.knn_counts(np.array([[2.9]]), np.array([2])).tolist()
[[0, 2]]
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from ppknn.core.progress import beat
from ppknn.protocols.dp_knn.validation import check_training

PAIR_BLOCK = 1 << 18
"""(instance, row) pairs per block of the brute-force path (2 MiB of distances)."""

HD_PAIR_BLOCK = 1 << 22
"""Pairs per block above :data:`MAX_FEATURES` (32 MiB: the matrix product wants tall blocks)."""

MAX_FEATURES = 7
"""Most features the brute-force path handles (see :func:`squared_distances`)."""

SAMPLE_ROWS = 16
"""Test instances (evenly spaced over the batch) that decide between the two paths."""

# cost model of the path choice, in nanoseconds (measured with scipy 1.17, one core)
_KD_BALL_NS = 1500.0  # one kd-tree ball search, besides the rows it reports
_KD_ROW_NS = 1.5  # one reported row in 2 dimensions (x2 per further dimension, up to 96)
_PAIR_NS = 1.2  # one (instance, row) distance: _PAIR_NS + _FEATURE_NS * D ...
_FEATURE_NS = 0.24
_THRESHOLD_NS = 0.3  # ... plus this per radius compared
_KD_SCAN_NS = 30.0  # above MAX_FEATURES: one training row per ball (it visits most)
_GEMM_NS = 0.05  # above MAX_FEATURES: one feature of one pair in the matrix product


def squared_distances(x: np.ndarray, X: np.ndarray, out: np.ndarray | None = None
                      ) -> np.ndarray:
    """``(len(x), len(X))`` squared distances, rounded as :class:`~scipy.spatial.cKDTree` rounds.

    For ``D <= MAX_FEATURES`` the kd-tree (p = 2) sums a row's squared feature
    differences in feature order (its four accumulators hold one term each),
    and so do its node bounds; ``cdist(..., "sqeuclidean")`` sums a pair's
    features in order starting from 0: the same sum, bit for bit. (From 8
    features on, the kd-tree's rows use four interleaved accumulators while
    its node bounds still sum in order, so which boundary rows it keeps
    depends on the tree's shape: only the kd-tree gives its counts there.)
    ``out``: a C-contiguous float64 ``(len(x), len(X))`` array to write to.
    """
    if x.shape[1] > MAX_FEATURES:
        raise ValueError(f"brute force reproduces the kd-tree up to {MAX_FEATURES} features")
    return np.asarray(cdist(x, X, "sqeuclidean", out=out))


def _blocks(rows: np.ndarray, n_cols: int, pairs: int | None = None) -> list[np.ndarray]:
    step = max(1, (PAIR_BLOCK if pairs is None else pairs) // max(1, n_cols))
    return [rows[i:i + step] for i in range(0, len(rows), step)]


_LANE = 255
"""Words summed at once: each byte lane of a uint64 sum of 0/1 bytes stays below 256."""


class _Layout:
    """Training rows laid out for brute-force counting.

    The rows of each label (``groups`` of them: every label, or one group of
    all rows) form a block padded with NaN rows to a multiple of 8 (a NaN row
    is within no radius), so a row of the comparison mask is a row of uint64
    words, each holding 8 rows' 0/1 bytes. Words are summed ``_LANE`` at a
    time (no carry between byte lanes), then the 8 lanes are added.
    """

    def __init__(self, X: np.ndarray, group: np.ndarray, n_groups: int) -> None:
        order = np.argsort(group, kind="stable")
        sizes = np.bincount(group, minlength=n_groups)
        padded = -(-sizes // 8) * 8
        first = np.concatenate([[0], np.cumsum(padded)])
        self.X = np.full((int(first[-1]), X.shape[1]), np.nan)
        at = np.repeat(first[:-1] - np.concatenate([[0], np.cumsum(sizes)])[:-1], sizes)
        self.X[at + np.arange(len(order))] = X[order]
        starts, owner = [], []
        for c in range(n_groups):
            lo, hi = int(first[c]) // 8, int(first[c + 1]) // 8
            for w in range(lo, hi, _LANE):
                starts.append(w)
                owner.append(c)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.onehot = np.zeros((len(starts), n_groups), dtype=np.int64)  # segment -> group
        self.onehot[np.arange(len(starts)), np.asarray(owner, dtype=np.int64)] = 1
        self.n_groups = n_groups
        self.high = X.shape[1] > MAX_FEATURES  # counted by the matrix-product form
        self.sq = (self.X * self.X).sum(axis=1)  # NaN on padding rows
        self.sq_max = float(np.nanmax(self.sq)) if len(X) else 0.0

    def count(self, words: np.ndarray) -> np.ndarray:
        """``(B, groups)`` int64: the 1 bytes of each group in ``(B, W)`` mask words."""
        out = np.zeros((len(words), self.n_groups), dtype=np.int64)
        if not len(self.starts):
            return out
        seg = np.add.reduceat(words, self.starts, axis=1)
        lanes = seg.view(np.uint8).reshape(len(words), len(self.starts), 8).sum(axis=2)
        if self.n_groups == 1:
            out[:, 0] = lanes.sum(axis=1)
        else:
            np.matmul(lanes.astype(np.int64), self.onehot, out=out)
        return out


_HD_TOL = 1e-9
"""High-dimension band: relative to ``|x|^2 + max |X|^2``, far above any rounding of the sums."""


def _block_distances(x: np.ndarray, layout: _Layout, out: np.ndarray) -> np.ndarray:
    """Squared distances of ``x`` to the layout's rows (``out``: the buffer to fill).

    Up to :data:`MAX_FEATURES` features the kd-tree's sums; above, the matrix-product
    form ``|x|^2 + |X|^2 - 2 x.X``, exact to within the band :data:`_HD_TOL`.
    """
    if not layout.high:
        return squared_distances(x, layout.X, out=out)
    np.matmul(x, layout.X.T, out=out)
    out *= -2.0
    out += (x * x).sum(axis=1)[:, None]
    out += layout.sq[None, :]
    return out


def _brute_counts(x: np.ndarray, t2: np.ndarray, layout: _Layout
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """``(Q, L, G)``: rows of each group of ``layout`` with squared distance ``<= t2[i, l]``.

    Instances whose thresholds are all equal are compared with scalars (much
    faster than a per-instance broadcast); many distinct threshold rows fall
    back to the broadcast. Both count the same rows.

    Up to :data:`MAX_FEATURES` features the counts are the kd-tree's and the second
    value is ``None``. Above, the counts are of the rows below the band
    ``t2 - tol`` (``tol`` = :data:`_HD_TOL` times ``|x_i|^2 + max |X|^2``, which
    bounds the rounding of every way of summing the squares, the kd-tree's
    included), and the second value is the ``(Q, L)`` mask of the thresholds with
    a row inside the band ``[t2 - tol, t2 + tol]``: only there may the kd-tree's
    count differ, so the caller asks the kd-tree for exactly those.
    """
    q, n_t = t2.shape
    X = layout.X
    out = np.zeros((q, n_t, layout.n_groups), dtype=np.int64)
    unsure = np.zeros((q, n_t), dtype=bool) if layout.high else None
    if q == 0 or len(X) == 0:
        return out, unsure
    block = HD_PAIR_BLOCK if layout.high else PAIR_BLOCK
    height = max(1, block // len(X))
    dist = np.empty((height, len(X)))  # reused: no fresh memory per block
    mask = np.zeros((height, len(X)), dtype=bool)
    words = mask.view(np.uint64)
    tol = (_HD_TOL * ((x * x).sum(axis=1) + layout.sq_max))[:, None] if layout.high else None

    def compare(s: np.ndarray, rows: np.ndarray, j: int, t: np.ndarray | float) -> None:
        m = mask[:len(rows)]
        if tol is None:
            np.less_equal(s, t, out=m)
            out[rows, j] = layout.count(words[:len(rows)])
            return
        band = tol[rows]
        np.less_equal(s, t - band, out=m)
        sure = layout.count(words[:len(rows)])
        out[rows, j] = sure
        np.less_equal(s, t + band, out=m)
        unsure[rows, j] = layout.count(words[:len(rows)]).sum(axis=1) != sure.sum(axis=1)

    keys, group = np.unique(t2, axis=0, return_inverse=True)
    group = group.reshape(-1)
    if len(keys) <= max(1, q // 16):
        order = np.argsort(group, kind="stable")
        cuts = np.searchsorted(group[order], np.arange(len(keys) + 1))
        for g in range(len(keys)):
            for rows in _blocks(order[cuts[g]:cuts[g + 1]], len(X), block):
                beat()  # counts over many rows take seconds: the step is still working
                s = _block_distances(x[rows], layout, dist[:len(rows)])
                for j, t in enumerate(keys[g].tolist()):
                    compare(s, rows, j, t)
        return out, unsure
    for rows in _blocks(np.arange(q), len(X), block):
        beat()
        s = _block_distances(x[rows], layout, dist[:len(rows)])
        for j in range(n_t):
            compare(s, rows, j, t2[rows, j:j + 1])
    return out, unsure


class LabelIndex:
    """kd-trees over private training rows, one per label and one over all rows.

    Parameters
    ----------
    X:
        ``(N, D)`` training features.
    y:
        ``(N,)`` integer labels in ``[0, n_classes)``.
    n_classes:
        Size of the public label set.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, *, n_classes: int) -> None:
        X, y = check_training(X, y, n_classes)
        self.n_classes = int(n_classes)
        self.n_features = int(X.shape[1])
        self._X, self._y = X, y
        self._all = cKDTree(X) if len(X) else None
        self._trees = [cKDTree(X[y == c]) if np.any(y == c) else None for c in range(n_classes)]
        self._labels = _Layout(X, y, self.n_classes)  # the brute-force path's rows
        # the last brute-force ball_counts batch: (x, r**2, per-label counts)
        self._memo: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def size(self) -> int:
        """|D|: the number of training rows (private: release it only with noise)."""
        return int(self._y.size)

    def radius_counts(self, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        """``(Q, C)`` int64: per label, training rows t with ``δ(x_i, t) <= r_i``.

        Counts the last :meth:`ball_counts` batch already made (the same
        instances, each ``r_i**2`` one of its radii squared) are looked up.
        """
        x = np.asarray(x, dtype=np.float64)
        r = np.broadcast_to(np.asarray(r, dtype=np.float64), (len(x),))
        known = self._recall(x, r)
        if known is not None:
            return known
        sample, head = self._sample(x, r[:, None])
        trees = sum(t is not None for t in self._trees)
        if head is not None and self.prefers_brute_force(head[0], trees):
            counts, unsure = self._fill(x, r[:, None], sample, head)
            return self._settle(x, r[:, None], counts, unsure, None)[:, 0, :]
        out = np.zeros((len(x), self.n_classes), dtype=np.int64)
        for c, tree in enumerate(self._trees):
            if tree is not None:
                out[:, c] = tree.query_ball_point(x, r, return_length=True)
        return out

    def total_counts(self, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        """``(Q,)`` int64: training rows within ``r_i`` of ``x_i`` (all labels)."""
        r = np.broadcast_to(np.asarray(r, dtype=np.float64), (len(x),))
        return self.ball_counts(x, r[:, None])[:, 0]

    def ball_counts(self, x: np.ndarray, radii: np.ndarray) -> np.ndarray:
        """``(Q, L)`` int64: training rows within ``radii[i, l]`` of ``x_i`` (all labels).

        The kd-tree's counts (:meth:`total_counts` of each column), by whichever
        path is faster for the batch (module docstring).
        """
        x = np.asarray(x, dtype=np.float64)
        radii = np.asarray(radii, dtype=np.float64)
        if self._all is None:
            return np.zeros(radii.shape, dtype=np.int64)
        sample, head = self._sample(x, radii)
        if head is not None and self.prefers_brute_force(head[0], 1):
            counts, unsure = self._fill(x, radii, sample, head)
            totals = counts.sum(axis=2)
            counts = self._settle(x, radii, counts, unsure, totals)
            self._memo = (x.copy(), radii * radii, counts)  # one assignment: thread-safe
            return totals
        return _kd_ball_counts(self._all, x, radii)

    def _recall(self, x: np.ndarray, r: np.ndarray) -> np.ndarray | None:
        """Per-label counts of ``(x, r)`` from the last ball_counts batch, if it holds them all.

        A count depends on ``x_i`` and ``r_i * r_i`` only (module docstring).
        """
        memo = self._memo
        if memo is None or memo[0].shape != x.shape or not np.array_equal(memo[0], x):
            return None
        same = memo[1] == (r * r)[:, None]
        if not same.any(axis=1).all():
            return None
        return memo[2][np.arange(len(x)), np.argmax(same, axis=1)]

    def _sample(self, x: np.ndarray, radii: np.ndarray
                ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray | None] | None]:
        """Brute-force counts (and unsure mask) of up to :data:`SAMPLE_ROWS` spaced instances."""
        if not (self.size and radii.size):
            return np.zeros(0, dtype=np.int64), None
        take = np.unique(np.linspace(0, len(x) - 1, min(len(x), SAMPLE_ROWS)).astype(np.int64))
        return take, _brute_counts(x[take], radii[take] * radii[take], self._labels)

    def _fill(self, x: np.ndarray, radii: np.ndarray, sample: np.ndarray,
              head: tuple[np.ndarray, np.ndarray | None]
              ) -> tuple[np.ndarray, np.ndarray | None]:
        """All instances' brute-force counts and unsure mask, the sample's reused."""
        rest = np.ones(len(x), dtype=bool)
        rest[sample] = False
        out = np.empty((len(x),) + head[0].shape[1:], dtype=np.int64)
        out[sample] = head[0]
        counts, unsure = _brute_counts(x[rest], radii[rest] * radii[rest], self._labels)
        out[rest] = counts
        if unsure is None:
            return out, None
        flags = np.empty(radii.shape, dtype=bool)
        flags[sample] = head[1]
        flags[rest] = unsure
        return out, flags

    def _settle(self, x: np.ndarray, radii: np.ndarray, counts: np.ndarray,
                unsure: np.ndarray | None, totals: np.ndarray | None) -> np.ndarray:
        """The kd-trees' counts where brute force was unsure (high dimension only).

        ``counts`` ``(Q, L, C)`` per label (overwritten there with the label trees'
        counts); ``totals`` ``(Q, L)``, if given, with the all-rows tree's count.
        """
        if unsure is None or not unsure.any():
            return counts
        i, j = np.nonzero(unsure)
        pts, rad = x[i], radii[i, j]
        for c, tree in enumerate(self._trees):
            counts[i, j, c] = 0 if tree is None else \
                tree.query_ball_point(pts, rad, return_length=True)
        if totals is not None and self._all is not None:
            totals[i, j] = self._all.query_ball_point(pts, rad, return_length=True)
        return counts

    def prefers_brute_force(self, head: np.ndarray, trees: int) -> bool:
        """Whether brute force looks faster, from a sample's ``(S, L, C)`` counts.

        The kd-tree's cost grows with the rows it reports (many more per row in
        high dimension), brute force's with the training size.
        """
        n_radii = head.shape[1]
        reported = float(head.sum()) / max(1, len(head))
        row_ns = _KD_ROW_NS * 2.0 ** min(max(self.n_features - 2, -1), 6)
        kd_ns = _KD_BALL_NS * n_radii * max(1, trees) + row_ns * reported
        if self.n_features > MAX_FEATURES:  # the kd-tree visits most rows of every ball
            kd_ns += _KD_SCAN_NS * self.size * n_radii
            pair_ns = _PAIR_NS + _GEMM_NS * self.n_features + 2 * _THRESHOLD_NS * n_radii
        else:
            pair_ns = _PAIR_NS + _FEATURE_NS * self.n_features + _THRESHOLD_NS * n_radii
        return pair_ns * self.size < kd_ns

    def count_profile(self, x: np.ndarray, radii: np.ndarray, *, chunk: int = 1 << 22
                      ) -> np.ndarray:
        """``(L,)`` int64: summed over ``x``, the training rows within each of the ``radii``.

        ``radii`` ascending. One pass over the (query, row) distances, in chunks of
        about ``chunk`` pairs: each distance goes to the first radius that holds it.
        """
        radii = np.asarray(radii, dtype=np.float64)
        out = np.zeros(len(radii), dtype=np.int64)
        if self._all is None or len(x) == 0:
            return out
        X = self._X
        xx = (X**2).sum(1)
        step = max(1, chunk // max(1, len(X)))
        for start in range(0, len(x), step):
            beat()
            q = x[start:start + step]
            d2 = np.maximum((q**2).sum(1)[:, None] + xx[None, :] - 2.0 * (q @ X.T), 0.0)
            slot = np.searchsorted(radii, np.sqrt(d2).ravel(), side="left")
            out += np.bincount(slot, minlength=len(radii) + 1)[: len(radii)]
        return np.cumsum(out)

    def knn_counts(self, x: np.ndarray, k: np.ndarray) -> np.ndarray:
        """``(Q, C)`` int64: labels among the ``min(k_i, N)`` nearest rows of ``x_i``.

        Ties at the k-th distance are broken by the kd-tree's order.
        """
        q = len(x)
        out = np.zeros((q, self.n_classes), dtype=np.int64)
        if self._all is None:
            return out
        kk = np.minimum(np.asarray(k, dtype=np.int64), self.size)
        _, idx = self._all.query(x, k=int(kk.max()))
        idx = np.asarray(idx).reshape(q, -1)
        use = np.arange(idx.shape[1])[None, :] < kk[:, None]
        rows = np.broadcast_to(np.arange(q)[:, None], idx.shape)[use]
        np.add.at(out, (rows, self._y[idx[use]]), 1)
        return out

    def kth_distance(self, x: np.ndarray, k: np.ndarray) -> np.ndarray:
        """``(Q,)``: distance from ``x_i`` to its ``min(k_i, N)``-th nearest row (non-private)."""
        q = len(x)
        kk = np.minimum(np.asarray(k, dtype=np.int64), self.size)
        dist, _ = self._all.query(x, k=int(kk.max())) if self._all is not None else (None, None)
        dist = np.asarray(dist).reshape(q, -1)
        return dist[np.arange(q), kk - 1]

    def histogram(self, edges: list[np.ndarray]) -> np.ndarray:
        """Counts of training rows per cell of a grid given by per-axis ``edges``.

        Rows outside the edges are clipped into the border cells (the owner's
        data lies in the public domain, checked at construction time).
        """
        cells = [len(e) - 1 for e in edges]
        pos = np.stack(
            [np.clip(np.searchsorted(e, self._X[:, a], side="right") - 1, 0, cells[a] - 1)
             for a, e in enumerate(edges)],
            axis=1,
        )
        flat = np.ravel_multi_index(tuple(pos.T), cells) if len(pos) else np.zeros(0, np.int64)
        return np.bincount(flat, minlength=int(np.prod(cells))).astype(np.int64)


def _kd_ball_counts(tree: cKDTree, x: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """``(Q, L)`` ball sizes from the kd-tree, one search per (instance, radius)."""
    q, n_r = radii.shape
    if q == 0 or n_r == 0:
        return np.zeros((q, n_r), dtype=np.int64)
    found = tree.query_ball_point(np.repeat(x, n_r, axis=0), radii.ravel(), return_length=True)
    return np.asarray(found, dtype=np.int64).reshape(q, n_r)


__all__ = ["MAX_FEATURES", "PAIR_BLOCK", "SAMPLE_ROWS", "LabelIndex", "squared_distances"]
