"""The modified kd-tree of DP-TT (Lepert 2022, Algorithm 10): all data at the leaves.

Every internal node holds the *median* of its subtree along the node's
discriminator (``depth mod k``): the points are sorted by that coordinate,
``median = floor(n / 2)``, the node's value is ``P[median]``, and the subtree
splits into ``left = P[:median]`` and ``right = P[median:]`` -- the median
itself goes right and, unlike Bentley's kd-tree (Algorithm 3), is *also*
kept below, so every point ends at exactly one leaf. Subtree sizes at depth
t are ``floor(N / 2^t)`` or ``ceil(N / 2^t)``, so the leaves lie at depths
``floor(log2 N)`` and ``ceil(log2 N)``; the worst-case number of decisions on
a root-to-leaf path is :attr:`ModifiedKDTree.height` ``= ceil(log2 N)``.

Layout. Nodes are numbered as in a binary heap (root 1, children ``2i`` and
``2i + 1``); node i covers the range ``perm[lo[i]:hi[i]]`` of the leaf order
``perm``, so the leaves of any subtree are one slice (early stopping releases
such a slice). Ties in a coordinate are broken by the point's index, which
makes "sort by coordinate d" a total order.

Build in O(k N log N): each coordinate is sorted once; at every level the
orders of the other coordinates are partitioned stably around the medians
(vectorised over all nodes of the level), so every level costs O(k N).

Examples
--------
>>> import numpy as np
>>> tree = ModifiedKDTree.build(np.array([[5.0], [1.0], [4.0], [2.0], [3.0]]))
>>> tree.height, tree.n_points
(3, 5)
>>> tree.points[tree.value[1]]  # the root: the median of 1..5 (index floor(5/2) = 2)
array([3.])
>>> tree.points[tree.subtree_leaves(2)].ravel()  # left child covers P[:2]
array([1., 2.])
>>> tree.points[tree.descend(np.array([[3.9]]), rule="cmp")].ravel()
array([3.])
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ConfigError

RULES = ("cmp", "dis")


def check_points(points: object, *, name: str = "points") -> np.ndarray:
    """``points`` as a non-empty finite float array of shape ``(N, k)``."""
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} must be numeric, got {type(points).__name__}") from exc
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ConfigError(f"{name} must have shape (N, k), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ConfigError(f"{name} is empty: the server needs at least one point to build a tree")
    if arr.shape[1] == 0:
        raise ConfigError(f"{name} must have at least one coordinate, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ConfigError(f"{name} must be finite; got NaN or infinite coordinates")
    return arr


def tree_height(n_points: int) -> int:
    """Worst-case decisions on a root-to-leaf path of the tree over ``n_points``: ``ceil(log2 N)``.

    Public before the tree exists (it depends on N only), so a plan can
    account a query's privacy from the number of rows the server will hold.

    >>> [tree_height(n) for n in (1, 2, 5, 16, 17, 1_000_000)]
    [0, 1, 3, 4, 5, 20]
    """
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 1:
        raise ConfigError(f"the tree needs at least one point, got n_points={n_points!r}")
    return int(n_points - 1).bit_length()


def _segment_positions(starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated ``arange(start, start + size)`` per segment, and each position's segment."""
    total = int(sizes.sum())
    seg = np.repeat(np.arange(len(sizes)), sizes)
    offsets = np.cumsum(sizes) - sizes
    return starts[seg] + (np.arange(total) - offsets[seg]), seg


def _rank_within(flags: np.ndarray, seg: np.ndarray, first: np.ndarray) -> np.ndarray:
    """For each position, how many earlier positions of its segment have ``flags`` set."""
    c = np.cumsum(flags) - flags
    return c - c[first][seg]


_TREES: dict[tuple, ModifiedKDTree] = {}


@dataclass(frozen=True, eq=False)
class ModifiedKDTree:
    """The server's tree (see the module docstring); build with :meth:`build`.

    Attributes
    ----------
    points:
        The data ``(N, k)``, as given.
    lo, hi:
        ``(2^(height+1),)`` heap-indexed ranges into ``perm``; ``hi == lo`` for
        indices that are not nodes.
    value:
        Heap-indexed data index of each node's value (the subtree median, or
        the leaf's point); -1 for indices that are not nodes.
    perm:
        ``(N,)`` the leaf order: leaf ranges are slices of it.
    height:
        The worst-case number of decisions on a path, ``ceil(log2 N)``.
    """

    points: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    value: np.ndarray
    perm: np.ndarray
    height: int

    @property
    def n_points(self) -> int:
        """N, the number of points (= leaves)."""
        return int(self.points.shape[0])

    @property
    def dim(self) -> int:
        """k, the number of coordinates."""
        return int(self.points.shape[1])

    @property
    def size(self) -> np.ndarray:
        """Heap-indexed subtree sizes (0 where there is no node)."""
        return self.hi - self.lo

    def discriminator(self, depth: int) -> int:
        """The coordinate compared at ``depth``: ``depth mod k``."""
        return depth % self.dim

    def is_leaf(self, nodes: np.ndarray) -> np.ndarray:
        """Whether each heap index in ``nodes`` is a leaf."""
        return (self.hi[nodes] - self.lo[nodes]) == 1

    def subtree_leaves(self, node: int) -> np.ndarray:
        """Data indices of the leaves below ``node``."""
        return self.perm[self.lo[node] : self.hi[node]]

    def leaves_of(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Leaves below each of ``nodes``: ``(owner, data index)``; owner indexes ``nodes``."""
        nodes = np.asarray(nodes, dtype=np.int64)
        sizes = self.hi[nodes] - self.lo[nodes]
        pos, owner = _segment_positions(self.lo[nodes], sizes)
        return owner, self.perm[pos]

    @classmethod
    def build(cls, points: object) -> ModifiedKDTree:
        """Build the tree of Algorithm 10 over ``points`` ``(N, k)`` (or ``(N,)`` for 1-D)."""
        x = check_points(points)
        n, k = x.shape
        height = tree_height(n)  # ceil(log2 n), 0 for n == 1
        m_nodes = 1 << (height + 1)
        lo = np.zeros(m_nodes, dtype=np.int64)
        hi = np.zeros(m_nodes, dtype=np.int64)
        value = np.full(m_nodes, -1, dtype=np.int64)
        orders = [np.argsort(x[:, d], kind="stable").astype(np.int64) for d in range(k)]
        nodes = np.array([1], dtype=np.int64)
        nlo = np.array([0], dtype=np.int64)
        nhi = np.array([n], dtype=np.int64)
        for depth in range(height + 1):
            lo[nodes], hi[nodes] = nlo, nhi
            leaf = (nhi - nlo) == 1
            value[nodes[leaf]] = orders[0][nlo[leaf]]
            inner = ~leaf
            if not inner.any():
                break
            d = depth % k
            inodes, ilo, ihi = nodes[inner], nlo[inner], nhi[inner]
            mid = ilo + (ihi - ilo) // 2
            value[inodes] = orders[d][mid]
            if k > 1:
                cls._partition(orders, d, ilo, ihi, mid, n)
            nodes = np.stack([2 * inodes, 2 * inodes + 1], axis=1).ravel()
            nlo = np.stack([ilo, mid], axis=1).ravel()
            nhi = np.stack([mid, ihi], axis=1).ravel()
        return cls(points=x, lo=lo, hi=hi, value=value, perm=orders[0], height=height)

    @classmethod
    def build_cached(cls, points: object) -> ModifiedKDTree:
        """:meth:`build`, memoised by the value of ``points`` (a few trees, this process only).

        The tree is a pure function of the points, so runs over the same data
        (a grid of scenarios) share one; its arrays are read-only.

        >>> a = ModifiedKDTree.build_cached(np.arange(8.0))
        >>> a is ModifiedKDTree.build_cached(np.arange(8.0)), a.value.flags.writeable
        (True, False)
        """
        x = check_points(points)
        digest = hashlib.blake2b(np.ascontiguousarray(x).data, digest_size=16)
        key = (x.shape, digest.hexdigest())
        tree = _TREES.get(key)
        if tree is None:
            tree = cls.build(x)
            for a in (tree.points, tree.lo, tree.hi, tree.value, tree.perm):
                a.setflags(write=False)
            while len(_TREES) >= 4:
                _TREES.pop(next(iter(_TREES)))
            _TREES[key] = tree
        return tree

    @staticmethod
    def _partition(orders: list[np.ndarray], d: int, ilo: np.ndarray, ihi: np.ndarray,
                   mid: np.ndarray, n: int) -> None:
        """Stably partition every other coordinate's order around the level's medians."""
        pos, seg = _segment_positions(ilo, ihi - ilo)
        first = np.searchsorted(pos, ilo)  # where each segment starts within ``pos``
        right = np.zeros(n, dtype=bool)
        right[orders[d][pos]] = pos >= mid[seg]
        for d2, order in enumerate(orders):
            if d2 == d:
                continue
            members = order[pos]
            goes_right = right[members]
            rank_r = _rank_within(goes_right, seg, first)
            rank_l = _rank_within(~goes_right, seg, first)
            order[np.where(goes_right, mid[seg] + rank_r, ilo[seg] + rank_l)] = members

    # -- non-private reference descents -------------------------------------
    def descend(self, queries: object, *, rule: str = "cmp") -> np.ndarray:
        """Leaf (data index) a plain, non-private descent reaches for each query.

        ``rule="cmp"``: go right iff ``q[d] >= value[d]`` at the discriminator d
        (Algorithm 5; the limit of DP-TT-CMP as ε → ∞). ``rule="dis"``: go to
        the child whose value is nearer (the limit of DP-TT-DIS; a tie goes left).
        """
        q = self.check_queries(queries)
        if rule not in RULES:
            raise ConfigError(f"rule must be one of {RULES}, got {rule!r}")
        node = np.ones(len(q), dtype=np.int64)
        for depth in range(self.height):
            inner = ~self.is_leaf(node)
            if not inner.any():
                break
            cur = node[inner]
            if rule == "cmp":
                d = self.discriminator(depth)
                go = q[inner, d] >= self.points[self.value[cur], d]
            else:
                dl = np.linalg.norm(self.points[self.value[2 * cur]] - q[inner], axis=1)
                dr = np.linalg.norm(self.points[self.value[2 * cur + 1]] - q[inner], axis=1)
                go = dr < dl
            node[inner] = 2 * cur + go
        return self.value[node]

    def check_queries(self, queries: object) -> np.ndarray:
        """Queries as ``(Q, k)`` floats; ``ConfigError`` on a wrong shape or non-finite value."""
        try:
            q = np.asarray(queries, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"queries must be numeric, got {type(queries).__name__}") from exc
        if q.ndim == 1 and self.dim == 1:
            q = q[:, None]
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ConfigError(
                f"queries must have shape (Q, {self.dim}) to match the server's {self.dim}-D "
                f"tree, got shape {q.shape}"
            )
        if not np.all(np.isfinite(q)):
            raise ConfigError("queries must be finite; got NaN or infinite coordinates")
        return q


__all__ = ["RULES", "ModifiedKDTree", "check_points", "tree_height"]
