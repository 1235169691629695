"""Secure summation of per-query vectors in Z_(2^64).

Values are fixed-point encoded to unsigned 64-bit integers and every
operation wraps modulo 2^64, so a uniformly random mask hides a partial
sum perfectly (a float mask would leak through magnitudes and rounding).

Two protocols:

**Ring sum** (Algorithm 3 of Xiong et al., from Clifton et al.). The start
node draws a mask ``R`` uniform over the whole ring and sends it to its
successor; every other node adds its vector and passes the result on; the
start node subtracts ``R``, adds its own vector and broadcasts the total.
``2n - 1`` messages. Two ring neighbours of a node that pool their views
recover its vector: it is the difference between what the successor
received and what the predecessor sent.

**Secret-shared sum** (collusion resistant). Each node splits its vector
into ``n`` additive shares (``n - 1`` uniform, the last fixing the sum),
keeps one and sends one to every other node; each node adds the shares it
holds and sends that partial sum to the aggregator (the start node), which
adds the partials and broadcasts the total. ``n(n-1) + 2(n-1)`` messages. A
coalition missing at least one other honest node learns nothing about a
node's vector beyond the total.

Encoding: uniform votes are counts (scale 1). Distance-weighted votes
``w = 1/dist`` use a per-query power-of-two scale chosen from public
information only (the smallest distance in the broadcast top-k vector and
``k``), so no node's data decides it and the encoded total of up to ``2k``
voters cannot overflow 2^63.
"""

from __future__ import annotations

import numpy as np

from ppknn.core.errors import ProtocolError

RING_PROTOCOL = "secure-sum"
SHARED_PROTOCOL = "shared-sum"
SUM_KINDS = ("ring", "shared")


def weight_scale(smallest_distance: np.ndarray, k: int) -> np.ndarray:
    """Per-query fixed-point scale (a power of two, float64) for weights ``1/dist``.

    Chosen so that ``2k`` votes of the largest possible weight
    (``1/smallest_distance``) stay below 2^62. Queries whose smallest
    distance is 0 use unit weights for zero-distance points only (as
    scikit-learn does) and get scale 1.
    """
    smallest = np.asarray(smallest_distance, dtype=np.float64)
    headroom = 62 - int(np.ceil(np.log2(2 * k + 1)))
    with np.errstate(divide="ignore"):
        wmax = np.where(smallest > 0, 1.0 / np.where(smallest > 0, smallest, 1.0), 1.0)
    exponent = np.floor(headroom - np.log2(wmax))
    return np.where(smallest > 0, np.exp2(np.minimum(exponent, 52 + headroom)), 1.0)


def encode_fixed(values: np.ndarray, scale: np.ndarray | float = 1.0) -> np.ndarray:
    """Non-negative floats to uint64 fixed point: ``round(values * scale)``.

    NaN (in the values or the scale) is refused, never encoded.
    """
    values = np.asarray(values, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    if np.isnan(values).any() or np.isnan(scale).any():
        raise ProtocolError("fixed-point encoding of NaN refused (a value or scale is NaN)")
    if scale.ndim:
        scale = scale.reshape((-1,) + (1,) * (values.ndim - 1))
    scaled = np.rint(values * scale)
    if (scaled < 0).any() or (scaled >= 2.0**63).any():
        raise ProtocolError("fixed-point encoding out of range [0, 2^63)")
    return scaled.astype(np.uint64)


def decode_total(total: np.ndarray) -> np.ndarray:
    """The ring total as signed integers (sums of non-negative encodings stay below 2^63)."""
    return np.asarray(total, dtype=np.uint64).view(np.int64)


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Addition modulo 2^64."""
    return np.add(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))


def sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Subtraction modulo 2^64."""
    return np.subtract(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))


def split_shares(vector: np.ndarray, n: int, uniform: np.ndarray) -> np.ndarray:
    """Additive shares of ``vector``: ``n`` arrays summing to it modulo 2^64.

    ``uniform`` holds ``n - 1`` uniformly random arrays (shape ``(n-1,) +
    vector.shape``); the last share is fixed by the sum.
    """
    vector = np.asarray(vector, dtype=np.uint64)
    if uniform.shape != (n - 1,) + vector.shape:
        raise ProtocolError(f"need {n - 1} random shares of shape {vector.shape}")
    last = sub(vector, np.add.reduce(uniform, axis=0, dtype=np.uint64))
    return np.concatenate([uniform, last[None]], axis=0)


__all__ = [
    "RING_PROTOCOL",
    "SHARED_PROTOCOL",
    "SUM_KINDS",
    "add",
    "decode_total",
    "encode_fixed",
    "split_shares",
    "sub",
    "weight_scale",
]
