"""Differentially private Naive Bayes with smooth sensitivity (Zafarani & Clifton).

A data owner trains Naive Bayes on its private rows and publishes an ε-DP
model: noisy class counts and category tables (Laplace), and per class and
numeric feature a trimmed mean and variance with noise calibrated to their
**smooth sensitivity**, computed in ``O(n)`` selection plus a pruned search
instead of the paper's ``O(n²)``. Baselines: Vaidya et al.'s global
sensitivity, Bun-Steinke's trimmed mean, non-private Naive Bayes.

Neighbouring datasets differ by **adding or removing one record** (the
framework's convention). The paper counts differing rows (replace-one); a
replacement is one removal and one addition, so a model that is ε-DP here is
2ε-DP under replace-one.

Modules
-------
sensitivity
    Trimmed statistics and their smooth sensitivity (fast and direct).
noise
    Calibration: the proven polynomial-tail default, Cauchy, the paper's
    constant (reproduction option), Laplace / Gaussian (ε, δ) variants.
schema, model, train
    Public schema and input checks; the released parameters and prediction;
    Algorithm 1 and the baselines.
estimator
    :class:`DPNaiveBayes`, a scikit-learn classifier.
protocol, driver
    The owner's model-release service as messages and a runtime driver
    (the party lives in :mod:`protocols.dp_nb.parties.nb_owner`).
datasets, audit, external
    The paper's datasets, the exact loss and the empirical auditor of one
    release, and IBM diffprivlib side by side (cross-validation and timing:
    :mod:`simulations.experiments.dp_nb`).

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dp_nb import DPNaiveBayes
>>> X = np.array([[1.0], [2.0], [8.0], [9.0]] * 50); y = np.array([0, 0, 1, 1] * 50)
>>> clf = DPNaiveBayes(epsilon=2.0, bounds=(0.0, 10.0), classes=[0, 1], random_state=0)
>>> clf.fit(X, y).predict([[1.5], [8.5]]).tolist()
[0, 1]
"""

from ppknn.protocols.dp_nb.model import NBParams
from ppknn.protocols.dp_nb.noise import SmoothCalibration
from ppknn.protocols.dp_nb.schema import BoundsWarning, FeatureSchema
from ppknn.protocols.dp_nb.sensitivity import (
    SmoothSensitivity,
    TrimmedStatistics,
    smooth_sensitivity,
    smooth_sensitivity_direct,
    trimmed_statistics,
)
from ppknn.protocols.dp_nb.training import METHODS, NBConfig, budget_split, train

__all__ = [
    "METHODS",
    "BoundsWarning",
    "DPNaiveBayes",
    "FeatureSchema",
    "NBConfig",
    "NBParams",
    "SmoothCalibration",
    "SmoothSensitivity",
    "TrimmedStatistics",
    "budget_split",
    "smooth_sensitivity",
    "smooth_sensitivity_direct",
    "train",
    "trimmed_statistics",
]


def __getattr__(name: str) -> object:
    """``DPNaiveBayes``, imported on first use.

    Its module imports scikit-learn (~0.45 s), which a party, a driver or a command
    that only reads a results folder never needs.
    """
    if name == "DPNaiveBayes":
        from ppknn.protocols.dp_nb.estimator import DPNaiveBayes

        return DPNaiveBayes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
