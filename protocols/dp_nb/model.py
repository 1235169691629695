"""The released Naive Bayes model and its predictions.

:class:`NBParams` is exactly what a private Naive Bayes publishes: (noisy)
class counts, per class and numeric feature a mean and a variance, per class
and categorical feature a table of (noisy) counts -- plus the public schema
facts needed to use them (bounds, the variance floor, the density). It is
built by :mod:`protocols.dp_nb.training`, travels as a message payload
(:meth:`NBParams.to_payload`), and predicts without the training data.

Conventions (post-processing, so free of privacy cost):

* class prior ∝ ``max(count, 1)`` -- a class is never impossible;
* ``P(X_q = a | c) = (max(count, 0) + 1) / Σ_a (max(count, 0) + 1)``
  (Laplace smoothing, Algorithm 1 line 9; ``CategoricalNB(alpha=1)`` without noise);
* numeric densities: Gaussian ``N(theta, var)`` (as ``GaussianNB``) or, with
  ``density="truncated"``, the normal truncated to the declared bounds (§2.1).

Examples
--------
>>> import numpy as np
>>> p = NBParams(class_count=np.array([3.0, 1.0]), theta=np.array([[0.0], [2.0]]),
...              var=np.array([[1.0], [1.0]]), category_count=(), lower=np.array([-5.0]),
...              upper=np.array([5.0]))
>>> np.round(p.predict_proba(np.array([[0.0], [2.0]]), np.empty((2, 0), int)), 3).tolist()
[[0.957, 0.043], [0.289, 0.711]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from ppknn.core.errors import ConfigError

DENSITIES = ("gaussian", "truncated")
_LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True)
class NBParams:
    """The parameters of a (private) Naive Bayes model.

    Attributes
    ----------
    class_count:
        ``(C,)`` class counts (noisy for a private model).
    theta, var:
        ``(C, p)`` means and variances of the numeric features (variance floor included).
    category_count:
        One ``(C, J_q)`` table of counts per categorical feature.
    lower, upper:
        ``(p,)`` declared bounds of the numeric features.
    density:
        ``"gaussian"`` or ``"truncated"``.
    """

    class_count: np.ndarray
    theta: np.ndarray
    var: np.ndarray
    category_count: tuple[np.ndarray, ...]
    lower: np.ndarray
    upper: np.ndarray
    density: str = "gaussian"

    def __post_init__(self) -> None:
        if self.density not in DENSITIES:
            raise ConfigError(f"density must be one of {list(DENSITIES)}, got {self.density!r}")
        c = len(self.class_count)
        if self.theta.shape != self.var.shape or self.theta.shape[0] != c:
            raise ConfigError(f"theta {self.theta.shape} and var {self.var.shape} must be (C, p) "
                              f"with C = {c}")
        if np.any(self.var <= 0):
            raise ConfigError("variances must be > 0 (add the variance floor)")

    @property
    def n_classes(self) -> int:
        """C."""
        return len(self.class_count)

    @property
    def class_log_prior(self) -> np.ndarray:
        """``log P(c)`` with the counts floored at 1."""
        counts = np.maximum(self.class_count, 1.0)
        return np.log(counts) - np.log(counts.sum())

    @property
    def feature_log_prob(self) -> tuple[np.ndarray, ...]:
        """``log P(X_q = a | c)`` per categorical feature, Laplace-smoothed."""
        out = []
        for table in self.category_count:
            smoothed = np.maximum(table, 0.0) + 1.0
            out.append(np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True)))
        return tuple(out)

    def joint_log_likelihood(self, numeric: np.ndarray, categorical: np.ndarray) -> np.ndarray:
        """``log P(c) + Σ log P(x_j | c)`` for each row and class: ``(n, C)``."""
        num = np.asarray(numeric, dtype=np.float64)
        jll = np.broadcast_to(self.class_log_prior, (len(num), self.n_classes)).copy()
        if num.shape[1]:
            x = num[:, None, :]
            mu, var = self.theta[None], self.var[None]
            if self.density == "truncated":
                x = np.clip(x, self.lower, self.upper)
            jll -= 0.5 * np.sum(_LOG_2PI + np.log(var) + (x - mu) ** 2 / var, axis=2)
            if self.density == "truncated":
                sd = np.sqrt(self.var)
                a = (self.lower[None, :] - self.theta) / sd
                b = (self.upper[None, :] - self.theta) / sd
                jll -= np.sum(_log_mass(a, b), axis=1)[None, :]
        for q, logp in enumerate(self.feature_log_prob):
            jll += logp[:, categorical[:, q]].T
        return jll

    def predict_proba(self, numeric: np.ndarray, categorical: np.ndarray) -> np.ndarray:
        """Posterior class probabilities ``(n, C)``."""
        jll = self.joint_log_likelihood(numeric, categorical)
        return np.exp(jll - special.logsumexp(jll, axis=1, keepdims=True))

    def predict(self, numeric: np.ndarray, categorical: np.ndarray) -> np.ndarray:
        """Class indices ``(n,)`` of the largest posterior."""
        return np.argmax(self.joint_log_likelihood(numeric, categorical), axis=1)

    def to_payload(self) -> dict[str, np.ndarray]:
        """Named numeric arrays (a message payload; the schema is public)."""
        out = {"class_count": self.class_count, "theta": self.theta, "var": self.var,
               "lower": self.lower, "upper": self.upper,
               "density": np.asarray(DENSITIES.index(self.density))}
        for q, table in enumerate(self.category_count):
            out[f"category_count_{q}"] = table
        return out

    @classmethod
    def from_payload(cls, payload) -> NBParams:
        """Inverse of :meth:`to_payload`."""
        tables = tuple(np.asarray(payload[f"category_count_{q}"], dtype=np.float64)
                       for q in range(sum(k.startswith("category_count_") for k in payload)))
        return cls(np.asarray(payload["class_count"], dtype=np.float64),
                   np.asarray(payload["theta"], dtype=np.float64),
                   np.asarray(payload["var"], dtype=np.float64), tables,
                   np.asarray(payload["lower"], dtype=np.float64),
                   np.asarray(payload["upper"], dtype=np.float64),
                   DENSITIES[int(payload["density"])])


def _log_mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``log(Φ(b) - Φ(a))`` for ``a < b``, stable in both tails."""
    upper_tail = a > 0  # use the symmetry Φ(b) - Φ(a) = Φ(-a) - Φ(-b)
    hi = np.where(upper_tail, -a, b)
    lo = np.where(upper_tail, -b, a)
    log_hi, log_lo = special.log_ndtr(hi), special.log_ndtr(lo)
    return log_hi + np.log1p(-np.exp(np.minimum(log_lo - log_hi, 0.0)) + 1e-300)


__all__ = ["DENSITIES", "NBParams"]
