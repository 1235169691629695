"""Empirical privacy audit of the r-N classifiers on neighbouring training sets.

:func:`overlap_scenario` builds a hard case for the proposed classifier:
``clique`` test regions (2-D discs of radius 1 centred on a regular polygon
of circumradius 0.5) all contain the origin, and ``far`` more regions lie
far apart. Training set D holds pairs of records with labels 0 and 1 at the
same places, so every region's vote is a tie; D' = D plus one label-1
record at the origin, which sits in all ``clique`` overlapping regions --
the sensitivity the proposed classifier must pay for (the batch's clique
number is ``clique``).

:func:`audit_rn` runs a classifier many times on D and D' through the real
code (:meth:`~protocols.dp_knn.index.LabelIndex.radius_counts` and
:func:`~protocols.dp_knn.rn.release_rn`), encodes each run's label vector
as one integer, and hands both samples to :func:`core.dp.audit`, which
returns a lower confidence bound on the ε actually spent. A correct
classifier stays below its claimed ε; ``calibration="ignore-overlaps"``
(noise for sensitivity 1, as if no two regions could share a record) is
the deliberately broken control that the auditor should catch.

Examples
--------
>>> import numpy as np
>>> s = overlap_scenario(clique=3, far=2)
>>> s.plan.sensitivity.tolist()
[3, 3, 3, 1, 1]
>>> res = audit_rn(s, algorithm="proposed", epsilon=1.0, n_samples=2_000,
...                rng=np.random.default_rng(0))
>>> res.eps_lower < 1.0
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ppknn.core.dp import AuditResult, audit
from ppknn.core.errors import ConfigError
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.rn import RNPlan, laplace_labels, plan_rn, release_rn

CALIBRATIONS = ("claimed", "ignore-overlaps")


@dataclass(frozen=True)
class AuditScenario:
    """Two neighbouring training sets and a batch of r-N test instances.

    Attributes
    ----------
    without, with_record:
        D and D' = D plus one record (label 1 at the origin).
    x, r:
        The test batch ``(Q, 2)`` and radii ``(Q,)``.
    plan:
        The proposed classifier's plan of the batch.
    """

    without: LabelIndex
    with_record: LabelIndex
    x: np.ndarray
    r: np.ndarray
    plan: RNPlan


def overlap_scenario(*, clique: int = 3, far: int = 3) -> AuditScenario:
    """The scenario of the module docstring (``clique >= 1`` overlapping, ``far >= 0`` apart)."""
    if clique < 1 or far < 0:
        raise ConfigError(f"need clique >= 1 and far >= 0, got clique={clique}, far={far}")
    angles = 2.0 * math.pi * np.arange(clique) / clique
    near = 0.5 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    away = np.stack([10.0 + 5.0 * np.arange(far), np.zeros(far)], axis=1)
    x = np.concatenate([near, away])
    r = np.ones(len(x))
    places = np.concatenate([x, 0.6 * near, x + [0.3, 0.0]])  # each place holds a 0 and a 1
    X = np.repeat(places, 2, axis=0)
    y = np.tile([0, 1], len(places))
    without = LabelIndex(X, y, n_classes=2)
    with_record = LabelIndex(np.vstack([X, [[0.0, 0.0]]]), np.append(y, 1), n_classes=2)
    return AuditScenario(without=without, with_record=with_record, x=x, r=r,
                         plan=plan_rn(x, r))


def audit_rn(scenario: AuditScenario, *, algorithm: str, epsilon: float, n_samples: int,
             rng: np.random.Generator, confidence: float = 0.95,
             calibration: str = "claimed") -> AuditResult:
    """Lower-bound the ε an r-N classifier spends on the scenario's D vs D'."""
    if calibration not in CALIBRATIONS:
        raise ConfigError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    q = len(scenario.x)
    weights = 2 ** np.arange(q)

    def run(index: LabelIndex, gen: np.random.Generator, n: int) -> np.ndarray:
        counts = index.radius_counts(scenario.x, scenario.r)
        many = np.broadcast_to(counts, (n, *counts.shape))
        if calibration == "ignore-overlaps":
            labels = laplace_labels(many, np.ones(q), epsilon, gen)
        else:
            labels = release_rn(many, algorithm=algorithm, epsilon=epsilon, rng=gen,
                                plan=scenario.plan)
        return labels @ weights

    return audit(run, scenario.without, scenario.with_record, n_samples=n_samples, rng=rng,
                 confidence=confidence, vectorized=True)


__all__ = ["CALIBRATIONS", "AuditScenario", "audit_rn", "overlap_scenario"]
