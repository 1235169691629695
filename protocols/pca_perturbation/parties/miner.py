"""The miner: classifies its own instances against a sanitised release.

A :class:`Miner` holds instances ``(Q, m)`` in the original units. On
:meth:`Miner.receive` it keeps the release (only the latest one) and on
:meth:`Miner.classify` normalises its instances with the released bounds,
projects them into the released space (they are never noised) and runs the
classifiers of :mod:`protocols.pca_perturbation.knn`.

Examples
--------
>>> import numpy as np
>>> from ppknn.core.data import DomainBounds
>>> from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
>>> from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest
>>> rng = np.random.default_rng(1)
>>> X = np.vstack([rng.normal(0, 0.1, (40, 3)), rng.normal(1, 0.1, (40, 3))])
>>> y = np.repeat([0, 1], 40)
>>> bounds = DomainBounds(np.full(3, -1.0), np.full(3, 2.0))
>>> san = Sanitizer(party_id="sanitizer", index=0, X=X, y=y, n_classes=2, run_id="r",
...                 bounds=bounds)
>>> miner = Miner(party_id="miner", index=1, X=np.array([[0.0] * 3, [1.0] * 3]), n_classes=2,
...               run_id="r")
>>> miner.receive(san.release(ReleaseRequest(scheme="pca-laplace", b=0.1, s=2)))
{'scheme': 'pca-laplace', 'rows': 80, 'columns': 2}
>>> miner.classify(MiningPlan(methods=("radius",))).predictions["radius"]
array([0, 1])
"""

from __future__ import annotations

import numpy as np

from ppknn.core.data import check_finite
from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import Message, PartyId
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.protocols.pca_perturbation.api import MinerAPI
from ppknn.protocols.pca_perturbation.knn import nearest, radius_knn, select_k
from ppknn.protocols.pca_perturbation.protocol import MinerOutput, MiningPlan
from ppknn.protocols.pca_perturbation.sanitize import normalise
from ppknn.protocols.pca_perturbation.schemes import miner_features


class Miner(MinerAPI):
    """The party that classifies its instances against sanitised releases.

    Parameters
    ----------
    party_id, index:
        Name and provenance code.
    X:
        The miner's instances ``(Q, m)`` (finite), in the original units.
    n_classes:
        Number of classes (public schema).
    run_id:
        The run's id.
    seed, mode:
        Root seed and randomness mode (cross-validation folds).
    """

    def __init__(self, *, party_id: PartyId, index: int, X: np.ndarray, n_classes: int,
                 run_id: str, seed: int = 0,
                 mode: str = RandomnessMode.REPRODUCIBLE.value) -> None:
        arr = np.asarray(X)
        check_finite(arr, f"party {party_id!r}")
        if arr.ndim != 2 or len(arr) == 0:
            raise ConfigError(f"party {party_id!r}: instances must be a non-empty 2-D array, "
                              f"got shape {arr.shape}")
        if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 1:
            raise ConfigError(f"n_classes must be an integer >= 1, got {n_classes!r}")
        self.party_id, self.index, self.run_id = party_id, int(index), run_id
        self.X = arr.astype(np.float64)
        self.n_classes = n_classes
        self.policy = SeedPolicy(root=seed, mode=RandomnessMode(mode))
        self.release: Message | None = None

    def receive(self, release: Message) -> dict[str, object]:
        """Keep the release; returns what it holds (scheme and shape)."""
        if not release.kind.startswith("release:"):
            raise ProtocolError(f"{self.party_id}: expected a release, got {release.kind!r}")
        m = len(release.payload["lower"])
        if m != self.X.shape[1]:
            raise ProtocolError(f"{self.party_id}: release has {m} attributes, my instances "
                                f"have {self.X.shape[1]}")
        self.release = release
        train, _ = miner_features(release.kind, dict(release.payload), self.X[:1])
        return {"scheme": release.kind.removeprefix("release:"), "rows": int(train.shape[0]),
                "columns": int(train.shape[1])}

    def classify(self, plan: MiningPlan) -> MinerOutput:
        """Classify the instances against the latest release by ``plan``."""
        if self.release is None:
            raise ProtocolError(f"{self.party_id}: no release received yet")
        p = dict(self.release.payload)
        # The public bounds may come from the training rows only, so an instance can lie
        # outside them: it is clipped onto the bounds (client side) before projecting.
        Zq = np.clip(normalise(self.X, p["lower"], p["upper"]), 0.0, 1.0)
        train, queries = miner_features(self.release.kind, p, Zq)
        labels = np.asarray(p["labels"])
        preds: dict[str, np.ndarray] = {}
        extra: dict[str, object] = {}
        if "radius" in plan.methods:
            if "stats" not in p:
                raise ConfigError(f"{self.release.kind!r} publishes no distortion statistics; "
                                  f"the radius method needs them")
            mean, var, n_sd = (float(v) for v in p["stats"])
            radius2 = mean + n_sd * float(np.sqrt(var))
            res = radius_knn(train, labels, queries, radius2=radius2, n_classes=self.n_classes,
                             fallback_k=plan.fallback_k)
            preds["radius"] = res.predictions
            extra.update(radius2=radius2, mean_in_radius=float(res.in_radius.mean()),
                         fallback_fraction=float(res.fallback.mean()))
        ks = []
        if "best-k" in plan.methods:
            rng = self.policy.generator("party", self.index, "cv", self.release.round)
            cv = select_k(train, labels, n_classes=self.n_classes, rng=rng, ks=plan.ks,
                          folds=plan.folds, max_validation=plan.max_validation)
            ks.append(cv.best_k)
            extra.update(best_k=cv.best_k, cv_accuracy=tuple(
                (k, float(a)) for k, a in zip(cv.ks, cv.accuracy)))
        if "fixed-k" in plan.methods:
            ks.append(plan.k)
        if ks:
            nb = nearest(train, labels, queries, max(ks), self.n_classes)
            ks = [min(k, nb.d2.shape[1]) for k in ks]
            all_preds = nb.predict_all(tuple(ks), self.n_classes)
            if "best-k" in plan.methods:
                preds["best-k"] = all_preds[0]
            if "fixed-k" in plan.methods:
                preds["fixed-k"] = all_preds[-1]
        return MinerOutput(round=self.release.round, predictions=preds,
                           **extra)


__all__ = ["Miner"]
