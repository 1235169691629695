"""Attacks on a release, run over the miner's view (§6.1.3 and §6.3 of the paper).

The miner is the attacker. It knows only what it received (a
:class:`~core.transcript.View` without provenance); the scorer compares its
estimates with the sanitizer's normalised rows (simulation-only ground truth).

Transform attack (Liu, Giannella & Kargupta)
    The attacker knows the transform: for the PCA schemes it inverts the
    PCA with the released components, ``Z_hat = scores @ components +
    mean`` (every released column is used, so the noise is not filtered);
    for Rand-P it multiplies by the pseudo-inverse of the random matrix;
    additive schemes release the data themselves.
Correlation attack (Huang, Du & Chen)
    PCA filtering: a PCA of the estimate, keep its first ``s2`` components,
    reconstruct. The paper lets the attacker pick the ``s2`` whose
    reconstruction is closest to the original data: an oracle choice (worst
    case for the data owner). Closest is measured by the mean squared error
    over all released rows and attributes.
    Allowed ``s2``: ``[1, s - 1]`` for the PCA schemes (the paper's ``s2 <
    s``), ``[1, m - 1]`` for No-PCA Laplace, ``[1, m]`` for Rand-U and Rand-N
    (``s2 = m`` is no filtering).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> truth = rng.random((300, 1)) @ np.ones((1, 4))      # rank-1 data
>>> noisy = truth + rng.normal(0, 0.1, truth.shape)
>>> scan = pca_filter(noisy, truth, s2_values=range(1, 5))
>>> scan.best_s2, scan.privacy < average_privacy(noisy, truth)
(1, True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ProtocolError
from ppknn.core.messages import Message
from ppknn.core.transcript import View
from ppknn.protocols.pca_perturbation.privacy import average_privacy


def release_message(view: View, round: int) -> Message:
    """The release the viewing party received in ``round``."""
    found = [m for m in view.received if m.kind.startswith("release:") and m.round == round]
    if len(found) != 1:
        raise ProtocolError(f"expected one release in round {round} of the view of "
                            f"{list(view.parties)}, found {len(found)}")
    return found[0]


def scheme_of(release: Message) -> str:
    """The release scheme named by the message kind."""
    return release.kind.removeprefix("release:")


def reconstruct(release: Message) -> np.ndarray:
    """The transform attack: the attacker's estimate of the normalised rows."""
    p = release.payload
    scheme = scheme_of(release)
    if scheme in ("pca-laplace", "pca-no-noise"):
        return np.asarray(p["scores"]) @ np.asarray(p["components"]) + np.asarray(p["mean"])
    if scheme == "rand-p":
        return np.asarray(p["data"]) @ np.linalg.pinv(np.asarray(p["projection"]))
    if scheme in ("laplace", "rand-u", "rand-n"):
        return np.array(p["data"], dtype=np.float64)
    raise ProtocolError(f"no transform attack for release kind {release.kind!r}")


def filter_range(release: Message) -> range:
    """The ``s2`` values the correlation attack may use on this release (see module docstring)."""
    scheme = scheme_of(release)
    m = len(release.payload["lower"])
    if scheme in ("pca-laplace", "pca-no-noise"):
        return range(1, len(release.payload["components"]))
    if scheme == "laplace":
        return range(1, m)
    if scheme in ("rand-u", "rand-n"):
        return range(1, m + 1)
    return range(0)


@dataclass(frozen=True)
class FilterScan:
    """Result of :func:`pca_filter`.

    Attributes
    ----------
    best_s2:
        The chosen number of components (closest reconstruction).
    privacy:
        Average privacy of the reconstruction with ``best_s2``.
    mse:
        ``(s2, mean squared error of the reconstruction)`` for every ``s2`` tried.
    """

    best_s2: int
    privacy: float
    mse: tuple[tuple[int, float], ...]


def pca_filter(estimate: np.ndarray, truth: np.ndarray, *, s2_values: Iterable[int],
               max_rows: int | None = None) -> FilterScan:
    """The correlation attack with the attacker's best ``s2`` (see module docstring).

    In the estimate's eigenbasis the reconstruction error splits by
    component: a kept component contributes the squared error of its score,
    a dropped one the squared true score. Both come from ``m x m`` Gram
    matrices, and cumulative sums give the error of every ``s2``. The
    privacy of the chosen reconstruction is measured on every
    ``ceil(n / max_rows)``-th row (all rows when ``max_rows`` is None).
    """
    est = np.asarray(estimate, dtype=np.float64)
    tru = np.asarray(truth, dtype=np.float64)
    values = sorted(set(int(v) for v in s2_values))
    if not values or values[0] < 1 or values[-1] > est.shape[1]:
        raise ProtocolError(f"s2 values must lie in [1, {est.shape[1]}], got {values}")
    mean = est.mean(axis=0)
    centred = est - mean
    eigvals, vectors = np.linalg.eigh(centred.T @ centred / len(est))
    basis = vectors[:, np.argsort(eigvals, kind="stable")[::-1]]
    diff = est - tru
    offset = tru - mean
    # per component: squared error of the kept score, squared true score if dropped
    kept = np.einsum("ij,ik,kj->j", basis, diff.T @ diff, basis)
    dropped = np.einsum("ij,ik,kj->j", basis, offset.T @ offset, basis)
    cum_kept = np.concatenate([[0.0], np.cumsum(kept)])
    tail_dropped = np.concatenate([np.cumsum(dropped[::-1])[::-1], [0.0]])
    mse = tuple((s2, float((cum_kept[s2] + tail_dropped[s2]) / tru.size)) for s2 in values)
    best = min(mse, key=lambda t: (t[1], t[0]))[0]
    rows = slice(None, None, _stride(len(est), max_rows))
    reconstruction = mean + (centred[rows] @ basis[:, :best]) @ basis[:, :best].T
    return FilterScan(best_s2=best, privacy=average_privacy(reconstruction, tru[rows]), mse=mse)


def _stride(n: int, max_rows: int | None) -> int:
    return 1 if max_rows is None else max(1, math.ceil(n / max_rows))


@dataclass(frozen=True)
class AttackOutcome:
    """Average privacy of one release under the attacks.

    Attributes
    ----------
    no_filter:
        After the transform attack alone ("No-Filtering").
    filtered:
        After the transform and the correlation attack (NaN when no ``s2`` applies).
    best_s2:
        The correlation attack's ``s2`` (0 when it does not apply).
    """

    no_filter: float
    filtered: float
    best_s2: int


def attack(release: Message, truth: np.ndarray, *, max_rows: int | None = 20_000
           ) -> AttackOutcome:
    """Both attacks on ``release``, scored against the normalised rows ``truth``.

    Average privacy is measured on every ``ceil(n / max_rows)``-th row (the
    rows are in random order); the filter's ``s2`` is chosen on all rows.
    """
    estimate = reconstruct(release)
    if estimate.shape != np.shape(truth):
        raise ProtocolError(f"estimate {estimate.shape} and truth {np.shape(truth)} differ")
    rows = slice(None, None, _stride(len(truth), max_rows))
    base = average_privacy(estimate[rows], truth[rows])
    s2_values = filter_range(release)
    if len(s2_values) == 0:
        return AttackOutcome(no_filter=base, filtered=float("nan"), best_s2=0)
    scan = pca_filter(estimate, truth, s2_values=s2_values, max_rows=max_rows)
    return AttackOutcome(no_filter=base, filtered=scan.privacy, best_s2=scan.best_s2)


def own_rows(release: Message, instances: np.ndarray) -> np.ndarray:
    """The miner's own rows normalised by the release's public bounds (clipped to them)."""
    from ppknn.protocols.pca_perturbation.sanitize import normalise

    return normalise(np.asarray(instances, dtype=np.float64),
                     np.asarray(release.payload["lower"], dtype=np.float64),
                     np.asarray(release.payload["upper"], dtype=np.float64))


def prior_guess(own: np.ndarray, *, reach: float | None = None) -> np.ndarray:
    """The guess of every record's values from the attacker's own rows alone (no release).

    Without ``reach``: each column's mean of ``own`` (the least-squares constant).
    With ``reach``: per column the value ``c`` whose window ``[c - reach, c + reach]``
    holds the most of ``own`` (the constant guess most often within ``±reach``).
    Returns one value per column.

    >>> own = np.array([[0.1], [0.12], [0.14], [0.9]])
    >>> prior_guess(own).round(3).tolist(), prior_guess(own, reach=0.05).round(3).tolist()
    ([0.315], [0.15])
    """
    own = np.asarray(own, dtype=np.float64)
    if reach is None:
        return own.mean(axis=0)
    v = np.sort(own, axis=0)
    out = np.empty(v.shape[1])
    for j in range(v.shape[1]):  # one search per column, vectorised over the rows
        ends = np.searchsorted(v[:, j], v[:, j] + 2 * reach, side="right")
        best = int(np.argmax(ends - np.arange(len(v))))
        out[j] = v[best, j] + reach
    return out


def measured_distortion(release: Message, Z_train: np.ndarray, Zq: np.ndarray, *,
                        rng: np.random.Generator, max_rows: int = 600) -> tuple[float, float]:
    """Mean and variance of the measured distortion ``|noisy x - y|^2 - |x - y|^2``.

    The ground truth set beside the released ``E(D)``, ``Var(D)`` (eqs. 12-13):
    over pairs of a training row ``x`` (its noisy scores in ``release``, its clean
    normalised row in ``Z_train``) and a normalised test row ``y`` of ``Zq``
    (projected with the released mean and components).

    Parameters
    ----------
    release:
        A ``pca-laplace`` release (payload ``scores``, ``mean``, ``components``).
    Z_train, Zq:
        The sanitizer's normalised training rows (simulation-only truth) and the
        normalised test rows.
    rng:
        Draws which rows are used.
    max_rows:
        At most this many training rows and this many test rows (random ones).

    Returns
    -------
    tuple of float
        The mean and the variance over the ``max_rows**2`` (or fewer) pairs.
    """
    p = release.payload
    tr = rng.permutation(len(Z_train))[:max_rows]
    te = rng.permutation(len(Zq))[:max_rows]
    noisy, q = np.asarray(p["scores"])[tr], (Zq[te] - p["mean"]) @ np.asarray(p["components"]).T
    after = ((noisy[:, None, :] - q[None, :, :]) ** 2).sum(axis=2)
    before = ((Z_train[tr][:, None, :] - Zq[te][None, :, :]) ** 2).sum(axis=2)
    d = (after - before).ravel()
    return float(d.mean()), float(d.var())


__all__ = [
    "own_rows",
    "prior_guess",
    "AttackOutcome",
    "FilterScan",
    "attack",
    "filter_range",
    "measured_distortion",
    "pca_filter",
    "reconstruct",
    "release_message",
    "scheme_of",
]
