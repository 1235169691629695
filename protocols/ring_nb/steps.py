r"""Ring Naive Bayes: the pure steps (statistics, encoding, noise, model, prediction).

Every owner normalises its rows to ``[-1, 1]`` with the **public** bounds,
``z = (clip(x, L, U) - m) / h`` with midpoint ``m = (L + U) / 2`` and
half-width ``h = (U - L) / 2`` (a feature with ``U = L`` is the constant
``z = 0``), and computes its Gaussian Naive Bayes sufficient statistics:

* ``n_c``: rows of class ``c`` (``C`` values),
* ``S_cj = sum z_j``, ``Q_cj = sum z_j**2`` over its rows of class ``c``
  (``C x D`` each).

They are packed into one vector ``[n, S, Q]`` of ``C + 2CD`` values, encoded
as signed fixed point in Z_(2^64) (:func:`encode_signed`, two's complement,
:data:`FRACTION_BITS` fractional bits) and added with the ring or the
secret-shared secure sum of :mod:`protocols.ppknn_ring.secure_sum`.

Noise (the start node, once, on the exact total). Under add/remove-one
neighbouring one record changes one class count by 1 and one class's row of
``S`` and of ``Q`` by at most ``|z_j| <= 1`` and ``z_j**2 <= 1`` per feature, so
the L1 global sensitivities of the groups are ``1``, ``D`` and ``D`` -- a
feature's largest ``|bound|`` (for ``S``) and largest ``bound**2`` (for ``Q``),
taken on the normalised domain, where both are 1 (normalising first gives every
feature the same relative noise; on raw units a wide feature would set the noise
of all).
Group ``g`` gets Laplace noise of scale ``sensitivity_g / ε_g``
(:class:`core.dp.Laplace`), ``ε_g`` from
:meth:`~protocols.ring_nb.config.RingNBConfig.group_epsilons`; the model is
``ε``-DP by sequential composition, and everything after the noise is
post-processing.

Model (:func:`fit`, on the normalised domain): counts ``ñ_c = max(n_c, 1)``,
priors ``ñ_c / sum ñ``, means ``clip(S_c / ñ_c, -1, 1)``, variances
``clip(Q_c / ñ_c - mean**2, var_floor, 1) + var_smoothing``. Prediction is
Gaussian Naive Bayes on the normalised queries (not clipped): an affine map
per feature shifts every class's log-likelihood by the same constant, so
without noise the predictions equal scikit-learn's ``GaussianNB`` on raw units
(up to its ``var_smoothing`` and exact ties).

Examples
--------
>>> import numpy as np
>>> X = np.array([[0.0], [1.0], [9.0], [10.0]]); y = np.array([0, 0, 1, 1])
>>> lower, upper = np.array([0.0]), np.array([10.0])
>>> v = local_statistics(X, y, 2, lower, upper)
>>> v.round(6).tolist()  # n_0, n_1, S_00, S_10, Q_00, Q_10
[2.0, 2.0, -1.8, 1.8, 1.64, 1.64]
>>> back = decode_signed(encode_signed(v))
>>> bool(np.allclose(back, v, atol=2.0**-FRACTION_BITS))
True
>>> model = fit(back, n_classes=2, n_features=1, var_floor=0.0, var_smoothing=1e-9)
>>> predict(model, normalise(np.array([[2.0], [8.0]]), lower, upper)).tolist()
[0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.dp import Laplace
from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import MIXED, Message, PartyId, uniform_provenance
from ppknn.core.rng import RandomnessMode

FRACTION_BITS = 32
"""Fixed-point fractional bits of the encoded statistics (resolution 2^-32)."""
LIMIT = 2.0**62
"""An owner's encoded values stay below this in magnitude. Every statistic is at most
the row count, so a total stays below ``2^63`` (no wrap) while the union holds fewer than
``2^30`` rows."""
MODEL = "nb-model"
"""Kind of the start node's broadcast of the noisy model."""


def halfwidth_and_mid(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature half-width ``(U - L) / 2`` and midpoint of the public bounds."""
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    return (upper - lower) / 2.0, (upper + lower) / 2.0


def normalise(X: np.ndarray, lower: np.ndarray, upper: np.ndarray, *,
              clip: bool = False) -> np.ndarray:
    """``(x - m) / h`` per feature (0 where ``h = 0``); ``clip``: to the bounds first."""
    X = np.asarray(X, dtype=np.float64)
    h, m = halfwidth_and_mid(lower, upper)
    if clip:
        X = np.clip(X, lower, upper)
    safe = np.where(h > 0, h, 1.0)
    return np.where(h > 0, (X - m) / safe, 0.0)


def local_statistics(X: np.ndarray, y: np.ndarray, n_classes: int, lower: np.ndarray,
                     upper: np.ndarray) -> np.ndarray:
    """One owner's packed statistics ``[n (C), S (C*D), Q (C*D)]`` (module docstring).

    Rows are clipped to the public bounds first, so the sensitivity holds
    whatever an owner's rows are.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if X.ndim != 2 or X.shape[1] != len(lower):
        raise ConfigError(f"rows of shape {X.shape} do not match the {len(lower)} bounded "
                          "features")
    Z = normalise(X, lower, upper, clip=True)
    onehot = np.zeros((len(y), n_classes))
    onehot[np.arange(len(y)), y] = 1.0
    counts = onehot.sum(axis=0)
    sums = onehot.T @ Z
    squares = onehot.T @ (Z * Z)
    return np.concatenate([counts, sums.ravel(), squares.ravel()])


def unpack(vector: np.ndarray, n_classes: int, n_features: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(n (C,), S (C, D), Q (C, D))`` from a packed vector."""
    c, d = n_classes, n_features
    v = np.asarray(vector, dtype=np.float64)
    if v.shape != (c + 2 * c * d,):
        raise ProtocolError(f"a packed statistics vector for {c} classes and {d} features has "
                            f"{c + 2 * c * d} values, got shape {v.shape}")
    return v[:c], v[c:c + c * d].reshape(c, d), v[c + c * d:].reshape(c, d)


def encode_signed(values: np.ndarray, bits: int = FRACTION_BITS) -> np.ndarray:
    """Signed floats to Z_(2^64): ``round(values * 2**bits)`` in two's complement."""
    scaled = np.rint(np.asarray(values, dtype=np.float64) * 2.0**bits)
    if not np.isfinite(scaled).all() or (np.abs(scaled) >= LIMIT).any():
        raise ProtocolError(f"fixed-point encoding out of range (|value| < 2^{62 - bits})")
    return scaled.astype(np.int64).view(np.uint64)


def decode_signed(total: np.ndarray, bits: int = FRACTION_BITS) -> np.ndarray:
    """A Z_(2^64) total back to floats (totals stay below 2^63 in magnitude)."""
    return np.asarray(total, dtype=np.uint64).view(np.int64).astype(np.float64) / 2.0**bits


def sensitivities(n_features: int) -> tuple[float, float, float]:
    """L1 global sensitivities of (counts, sums, sums of squares) on ``[-1, 1]^D``."""
    d = float(max(n_features, 1))
    return 1.0, d, d


@dataclass(frozen=True)
class NoisyStatistics:
    """The start node's release: the packed noisy vector and what each group cost."""

    vector: np.ndarray
    epsilons: tuple[float, float, float]
    scales: tuple[float, float, float]


def add_noise(vector: np.ndarray, *, n_classes: int, n_features: int,
              epsilons: tuple[float, float, float], mode: str, rng: Any) -> NoisyStatistics:
    """Laplace noise on each statistic group at its global sensitivity (module docstring).

    ``mode = "secure"`` uses the DP core's grid samplers on OS entropy
    (``rng`` is then ignored).
    """
    counts, sums, squares = unpack(vector, n_classes, n_features)
    out, scales = [], []
    for values, eps, sens in zip((counts, sums, squares), epsilons,
                                 sensitivities(n_features), strict=True):
        mech = Laplace(epsilon=eps, sensitivity=sens, mode=RandomnessMode(mode))
        released = mech.randomise(values, rng)
        out.append(np.asarray(released.value, dtype=np.float64).ravel())
        scales.append(mech.scale)
    return NoisyStatistics(np.concatenate(out), tuple(epsilons),  # type: ignore[arg-type]
                           tuple(scales))


@dataclass(frozen=True)
class GaussianModel:
    """Gaussian Naive Bayes on the normalised domain ``[-1, 1]^D``."""

    counts: np.ndarray  # (C,) the counts used (>= 1)
    theta: np.ndarray  # (C, D) means
    var: np.ndarray  # (C, D) variances

    @property
    def log_prior(self) -> np.ndarray:
        """Log class priors from the counts."""
        return np.log(self.counts / self.counts.sum())

    def payload(self) -> dict[str, np.ndarray]:
        """The released parameters as message payload."""
        return {"counts": self.counts, "theta": self.theta, "var": self.var}

    @classmethod
    def from_payload(cls, payload: Any) -> GaussianModel:
        """Read a released model."""
        try:
            return cls(np.asarray(payload["counts"], dtype=np.float64),
                       np.asarray(payload["theta"], dtype=np.float64),
                       np.asarray(payload["var"], dtype=np.float64))
        except KeyError as exc:
            raise ProtocolError(f"malformed {MODEL!r} message: missing {exc}") from None


def fit(vector: np.ndarray, *, n_classes: int, n_features: int, var_floor: float,
        var_smoothing: float) -> GaussianModel:
    """The model from (noisy) packed statistics (module docstring)."""
    counts, sums, squares = unpack(vector, n_classes, n_features)
    n = np.maximum(counts, 1.0)
    theta = np.clip(sums / n[:, None], -1.0, 1.0)
    var = np.clip(squares / n[:, None] - theta**2, var_floor, 1.0) + var_smoothing
    return GaussianModel(n, theta, var)


def predict(model: GaussianModel, Z: np.ndarray) -> np.ndarray:
    """Class indices for normalised queries ``Z`` (lowest index on exact ties)."""
    Z = np.asarray(Z, dtype=np.float64)
    log_norm = -0.5 * np.log(2.0 * np.pi * model.var).sum(axis=1)  # (C,)
    # scikit-learn's form, vectorised over the batch (one pass per class)
    quad = np.stack([((Z - model.theta[c]) ** 2 / model.var[c]).sum(axis=1)
                     for c in range(len(model.counts))], axis=1)
    joint = model.log_prior + log_norm - 0.5 * quad
    return np.argmax(joint, axis=1)


def model_message(model: GaussianModel, *, run_id: str, protocol: str, round: int,
                  sender: PartyId, receiver: PartyId) -> Message:
    """The start node's broadcast of the released model."""
    payload = model.payload()
    return Message(run_id, protocol, round, -1, sender, receiver, MODEL, payload,
                   {k: uniform_provenance(MIXED) for k in payload})


__all__ = ["FRACTION_BITS", "MODEL", "GaussianModel", "NoisyStatistics", "add_noise",
           "decode_signed", "encode_signed", "fit", "halfwidth_and_mid", "local_statistics",
           "model_message", "normalise", "predict", "sensitivities", "unpack"]
