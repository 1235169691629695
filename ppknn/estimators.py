"""The scikit-learn estimators, one per protocol, with the search tools they share.

Each estimator sits in its protocol's package (``protocols/<name>/plugin/estimator.py``,
:class:`DPNaiveBayes` in ``protocols/dp_nb/estimator.py``); the machinery they share
(parameters, spending, the hyper-parameter search) is :mod:`simulations.estimators`.

>>> from ppknn.estimators import DPKNeighborsClassifier, search_cost
>>> DPKNeighborsClassifier(epsilon=0.5).epsilon
0.5
"""

from ppknn.core.conventions import BelowMajorityWarning
from ppknn.protocols.dp_knn.plugin.estimator import (
    DPKNeighborsClassifier,
    DPRadiusNeighborsClassifier,
)
from ppknn.protocols.dp_nb.estimator import DPNaiveBayes
from ppknn.protocols.dptt.plugin.estimator import DPTTClassifier
from ppknn.protocols.pca_perturbation.plugin.estimator import PCALaplaceSanitizer
from ppknn.protocols.ppknn_ring.plugin.estimator import PPKNNClassifier
from ppknn.simulations.estimators import (
    BudgetRefused,
    DPGridSearchCV,
    ProtocolClassifier,
    SearchCost,
    search_cost,
)

__all__ = ["BelowMajorityWarning", "BudgetRefused", "DPGridSearchCV", "DPKNeighborsClassifier",
           "DPNaiveBayes", "DPRadiusNeighborsClassifier", "DPTTClassifier",
           "PCALaplaceSanitizer", "PPKNNClassifier", "ProtocolClassifier", "SearchCost",
           "search_cost"]
