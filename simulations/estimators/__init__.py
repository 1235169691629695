"""The machinery of the scikit-learn estimators; each protocol's estimator sits in its package.

The estimators are gathered in :mod:`ppknn.estimators` (and ``ppknn.<Name>``):

- :class:`PPKNNClassifier` -- the PP-kNN ring (Xiong, Chitti & Liu).
- :class:`DPRadiusNeighborsClassifier`, :class:`DPKNeighborsClassifier` -- a central DP
  owner answering r-N / k-NN requests under its ledger (Gursoy et al.).
- :class:`PCALaplaceSanitizer` -- the PCA + Laplace release as a transformer
  (Mukherjee et al.).
- :class:`DPTTClassifier` -- DP kd-tree traversal, a nearest-neighbour classifier (Lepert).
- :class:`DPNaiveBayes` -- DP Naive Bayes with smooth
  sensitivity (Zafarani & Clifton); it trains in one process, no parties.

Every parameter is checked at ``fit`` (numpy numbers accepted). Each ``predict``
(``transform``) of a DP estimator is a release: ``privacy_`` adds up the calls since
``fit``, and an optional ``budget`` (ε) and ``budget_delta`` (δ) refuse, with
:class:`~ppknn.simulations.estimators.spending.BudgetRefused`, a call that would take
the total above either before anything runs. ``random_state=None`` (the default) draws
fresh randomness per call; an int makes the noise reproducible by anyone who knows the
seed (a simulation, not a release).

One convention for all: ``bounds="data"`` by default (a ``PrivacyLeakWarning``
once per estimator and its clones; declare public bounds to silence it), the
utility check's ``BelowMajorityWarning`` once per estimator and its clones, with
the expected accuracy (before the first release), and ``privacy_unit_`` says
what one ε protects:

- ``PPKNNClassifier``: none: no DP; per-node disclosure probability per run;
- ``DPRadiusNeighborsClassifier``, ``DPKNeighborsClassifier``: per predict batch
  against the training data (add/remove one training row);
- ``DPTTClassifier``: per query, protecting the querier from the server;
- ``PCALaplaceSanitizer``: per transform call, per transformed row (not ε-DP);
- ``DPNaiveBayes``: per model: the training set, add/remove one row.

A hyper-parameter search spends on every candidate and fold: :func:`search_cost`
states it, :class:`DPGridSearchCV` caps it (``budget``), and a DP estimator
cloned into a search without a budget warns once (``UnchargedSearchWarning``).
"""

from ppknn.simulations.estimators.base import ProtocolClassifier
from ppknn.simulations.estimators.search import DPGridSearchCV, SearchCost, search_cost
from ppknn.simulations.estimators.spending import BudgetRefused

__all__ = ["BudgetRefused", "DPGridSearchCV", "ProtocolClassifier", "SearchCost", "search_cost"]
