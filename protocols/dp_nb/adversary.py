"""Membership inference on a released DP Naive Bayes model, from the analyst's view only.

The analyst received the model (``model`` message: per-class counts, means,
variances and the public bounds). Given a candidate record ``(x, y)`` it
scores how well the model fits it: the log-density of ``x`` under the
Gaussian of class ``y`` (the values clipped to the public bounds, as the
owner clips them before training). A higher score suggests the record was
in the training set. The attack's threshold is chosen on one half of the
candidates and tested on the other (so the test half's rates are honest),
and the true/false positive rates convert to an empirical ε lower bound
(``TPR <= e^ε FPR``, ``TNR <= e^ε FNR``; Kairouz et al.'s hypothesis-testing
view of DP).

Examples
--------
>>> import numpy as np
>>> payload = {"theta": np.array([[0.0], [5.0]]), "var": np.array([[1.0], [1.0]]),
...            "lower": np.array([-10.0]), "upper": np.array([10.0])}
>>> s = membership_scores(payload, np.array([[0.1], [4.0]]), np.array([0, 0]))
>>> bool(s[0] > s[1])
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ppknn.core.transcript import View
from ppknn.protocols.dp_nb.protocol import PROTOCOL

MEMBERSHIP = "model-membership-inference"


def released_models(view: View) -> list[Mapping[str, np.ndarray]]:
    """Payloads of every model the viewing party (or coalition) received."""
    return [m.payload for m in view.received if m.protocol == PROTOCOL and m.kind == "model"]


def membership_scores(model: Mapping[str, np.ndarray], X: np.ndarray, y: np.ndarray
                      ) -> np.ndarray:
    """Log-density of each candidate ``x`` under its class's Gaussian (higher: member)."""
    theta = np.asarray(model["theta"], dtype=np.float64)
    var = np.maximum(np.asarray(model["var"], dtype=np.float64), 1e-12)
    x = np.clip(np.asarray(X, dtype=np.float64), np.asarray(model["lower"]),
                np.asarray(model["upper"]))
    mu, v = theta[np.asarray(y, dtype=np.int64)], var[np.asarray(y, dtype=np.int64)]
    return -0.5 * np.sum(np.log(2 * np.pi * v) + (x - mu) ** 2 / v, axis=1)


def pooled_scores(models: Sequence[Mapping[str, np.ndarray]], X: np.ndarray, y: np.ndarray
                  ) -> np.ndarray:
    """A coalition's score: the mean of its members' scores over the models they pooled."""
    return np.mean([membership_scores(m, X, y) for m in models], axis=0)


__all__ = ["MEMBERSHIP", "membership_scores", "pooled_scores", "released_models"]
