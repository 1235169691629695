"""Scoring helpers the attacks of several protocols share.

The secure-sum neighbours' estimate on a ring (a node's two neighbours pool
their views and subtract), the best-constant and nothing-seen baselines, the
membership-inference rows with their empirical ε, and the test whether a
message carries given rows. They read views, public facts and ground truth
(:class:`~simulations.leakage.attacks.Context`) and name no protocol: each
protocol's attacks (``protocols/<name>/plugin/attacks.py``) call them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppknn.simulations.leakage.attacks import Adversary, Context
from ppknn.simulations.leakage.table import (
    LeakageRow,
    paired_rate_baseline,
)


def observer_name(parties: Sequence[str]) -> str:
    """A coalition's name: its members joined by ``+``."""
    return "+".join(parties)


def ring_neighbours(ring: Sequence[str], party: str,
                    position: Mapping[str, int]) -> tuple[str, str]:
    """``party``'s predecessor and successor (``position``: :func:`positions` of ``ring``)."""
    i = position[party]
    return ring[(i - 1) % len(ring)], ring[(i + 1) % len(ring)]


def positions(ring: Sequence[str]) -> dict[str, int]:
    """Each party's index in the ring (a ring of 100,000 is not searched per node)."""
    return {p: i for i, p in enumerate(ring)}


BEST_CONSTANT = ("the best constant guess: the target's most frequent true vector over "
                 "the queries (an oracle choice; no transcript)")
BEST_CONSTANT_TARGETS = ("the best constant guess: the most frequent true vector over "
                         "every target (an oracle choice; no transcript)")
NOTHING_SEEN = ("no transcript: nothing seen (an exact real-valued row or total is not "
                "guessed)")


def mode_row(rows: np.ndarray) -> np.ndarray:
    """The most frequent row of ``rows`` (the first of the most frequent, sorted)."""
    flat = np.asarray(rows).reshape(len(rows), -1)
    if flat.dtype.kind not in "biu" or not flat.size:  # floats: NaN and -0.0 as np.unique
        uniq, counts = np.unique(flat, axis=0, return_counts=True)
        return uniq[int(np.argmax(counts))]
    # integers: equal rows are equal bytes, so rows are counted as opaque byte strings
    # (one 1-D sort, ~20x faster than np.unique's structured sort); of the most frequent,
    # the first in np.unique's (numeric, lexicographic) order is taken
    packed = np.ascontiguousarray(flat)
    keys = packed.view(np.dtype((np.void, packed.dtype.itemsize * packed.shape[1]))).ravel()
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    tied = packed[first[counts == counts.max()]]
    return tied[np.lexsort(tied.T[::-1])[0]]


def nothing_seen(row: LeakageRow) -> LeakageRow:
    """The baseline of an exact-sighting row: no sighting on the same trials."""
    hits = np.zeros(row.trials, dtype=bool)
    hits[:int(round(row.value * row.trials)) if math.isfinite(row.value) else 0] = True
    return paired_rate_baseline(row, hits=hits, base=np.zeros(row.trials, dtype=bool),
                                name=NOTHING_SEEN)


def analyst_groups(ctx: Context, adv: Adversary) -> list[tuple[str, ...]]:
    """The scripted coalition, or else each analyst on its own."""
    return ([tuple(adv.observers)] if adv.observers
            else [(a,) for a in ctx.public["analysts"]])


def rows_carried(messages: Sequence[Any], rows: np.ndarray) -> np.ndarray:
    """Which of ``rows`` appear exactly as a row of some float payload array of ``messages``.

    Every floating-point payload array whose last axis has the rows' width is
    read as rows of that width; a party's private rows sent in any field are
    found, whatever the field is called. Returns a mask over ``rows``.
    """
    r = np.asarray(rows, dtype=np.float64)
    found = np.zeros(len(r), dtype=bool)
    if r.ndim != 2 or not len(r):
        return found
    index: dict[bytes, list[int]] = {}
    for i, row in enumerate(r):
        index.setdefault(row.tobytes(), []).append(i)
    for m in messages:
        for value in m.payload.values():
            a = np.asarray(value)
            if a.ndim == 0 or a.shape[-1] != r.shape[1] or not np.issubdtype(a.dtype,
                                                                            np.floating):
                continue
            for row in a.reshape(-1, r.shape[1]).astype(np.float64):
                for i in index.get(row.tobytes(), ()):
                    found[i] = True
    return found


__all__ = ["BEST_CONSTANT", "BEST_CONSTANT_TARGETS", "NOTHING_SEEN", "analyst_groups", "mode_row",
           "nothing_seen", "observer_name", "positions", "ring_neighbours", "rows_carried"]
