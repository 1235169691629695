"""Seeded samples whose class mix matches their population.

Files are often sorted by class and split indices are sorted, so "the first
n rows" of a split is nearly one class. Every subset a run or a scorer takes
(the queries kept by ``max_queries``, the members and held-out rows of a
membership test) is drawn here instead: at random from a seeded generator,
stratified by class.

:func:`stratified_subset`
    ``n`` positions whose class counts are the population's proportions
    (largest remainder), each class's rows drawn at random.
:func:`stratified_order`
    a random order of positions in which every contiguous block carries the
    population's class mix to within a few rows per class (systematic sampling
    within each class), so splitting the batch into contiguous blocks (per
    analyst, per request) gives each block the mix too.
:func:`matched_sample`
    a membership test's two samples: the same number of rows of each class
    from the members and from the held-out rows, in the same class sequence,
    so that a score separating the two samples cannot be separating classes.
"""

from __future__ import annotations

import numpy as np

from ppknn.core.errors import ConfigError


def _labels(y: np.ndarray, what: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise ConfigError(f"{what}: labels must be one-dimensional, got shape {y.shape}")
    return y


def allocation(counts: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Per-class sample sizes for ``n`` rows out of classes of sizes ``counts``.

    Largest-remainder apportionment of ``n * counts / counts.sum()``, ties broken
    at random; no class gets more than it has.

    Examples
    --------
    >>> import numpy as np
    >>> allocation(np.array([50, 30, 20]), 10, np.random.default_rng(0)).tolist()
    [5, 3, 2]
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if not 0 <= n <= total:
        raise ConfigError(f"sample size {n} is outside [0, {total}] (the population's rows)")
    quota = n * counts / total if total else np.zeros(len(counts))
    take = np.floor(quota).astype(np.int64)
    left = n - int(take.sum())
    if left:
        frac = quota - take
        # largest remainder first, random order among equal remainders
        order = np.lexsort((rng.random(len(counts)), -frac))
        order = order[take[order] < counts[order]]
        take[order[:left]] += 1
    return take


def stratified_order(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random order of ``range(len(y))`` whose every contiguous block carries the mix.

    Row ``i`` of class ``c`` (``n_c`` rows) gets the key ``(r_i + u_c) / n_c``: ``r_i``
    its rank in a random permutation of its class, ``u_c`` one uniform offset per
    class; positions are sorted by key (ties at random). A block of ``L`` consecutive
    positions spans a key interval holding ``n_c`` times its length of class ``c``, give
    or take one row, so it holds ``L n_c / n`` rows of class ``c`` to within
    ``1 + K n_c / n`` (``K`` classes): about two.
    """
    y = _labels(y, "stratified_order")
    keys = np.empty(len(y), dtype=np.float64)
    for c in np.unique(y):
        where = np.flatnonzero(y == c)
        ranks = rng.permutation(len(where))
        keys[where] = (ranks + rng.random()) / len(where)
    return np.lexsort((rng.random(len(y)), keys))


def stratified_subset(y: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` positions of ``y`` drawn at random, stratified by class, in stratified order.

    Parameters
    ----------
    y:
        The population's labels.
    n:
        The sample size, ``0 <= n <= len(y)``.
    rng:
        The seeded generator every draw comes from.

    Returns
    -------
    Positions into ``y`` (no repeats): the class counts are :func:`allocation`'s,
    the rows of each class a uniform random choice, the order
    :func:`stratified_order`'s.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.repeat([0, 1], [60, 40])               # a class-sorted file
    >>> pick = stratified_subset(y, 10, np.random.default_rng(1))
    >>> np.bincount(y[pick]).tolist()
    [6, 4]
    """
    y = _labels(y, "stratified_subset")
    classes, inverse = np.unique(y, return_inverse=True)
    take = allocation(np.bincount(inverse, minlength=len(classes)), n, rng)
    chosen = [rng.choice(np.flatnonzero(inverse == i), size=int(t), replace=False)
              for i, t in enumerate(take)]
    pick = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
    return pick[stratified_order(y[pick], rng)].astype(np.int64)


def matched_sample(y_in: np.ndarray, y_out: np.ndarray, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Class-matched samples of two populations (members and held-out rows).

    For each class ``c``, ``m_c = min(count_in(c), count_out(c))`` rows are drawn at
    random from each population; the two samples follow one random class sequence
    in :func:`stratified_order`, so position ``i`` holds a row of the same class in
    both, and any contiguous or alternate half of them keeps the mix.

    Returns
    -------
    ``(pick_in, pick_out)``: positions into ``y_in`` and ``y_out``, of equal length.
    """
    y_in, y_out = _labels(y_in, "matched_sample"), _labels(y_out, "matched_sample")
    classes = np.union1d(y_in, y_out)
    per_in = [np.flatnonzero(y_in == c) for c in classes]
    per_out = [np.flatnonzero(y_out == c) for c in classes]
    sizes = [min(len(a), len(b)) for a, b in zip(per_in, per_out, strict=True)]
    seq = np.repeat(np.arange(len(classes)), sizes)
    seq = seq[stratified_order(seq, rng)]
    pick_in = np.empty(len(seq), dtype=np.int64)
    pick_out = np.empty(len(seq), dtype=np.int64)
    for i, size in enumerate(sizes):
        slots = np.flatnonzero(seq == i)
        pick_in[slots] = rng.choice(per_in[i], size=size, replace=False)
        pick_out[slots] = rng.choice(per_out[i], size=size, replace=False)
    return pick_in, pick_out


__all__ = ["allocation", "matched_sample", "stratified_order", "stratified_subset"]
