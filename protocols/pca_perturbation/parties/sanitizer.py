"""The sanitizer: holds a private labelled table and publishes sanitised releases.

A :class:`Sanitizer` normalises its rows to ``[0, 1]`` with declared
(public) bounds, fits a PCA once, and answers each :class:`ReleaseRequest`
with one :class:`~core.messages.Message` to the miner per request (scheme
payloads in :mod:`protocols.pca_perturbation.schemes`). Each release draws
its noise from its own stream (party, protocol, round), so releases do not
depend on each other's order.

Bounds derived from the data leak its extremes: without declared ``bounds``
the sanitizer derives them and warns (:class:`~core.errors.PrivacyLeakWarning`).

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest
>>> X = np.random.default_rng(0).random((50, 4)); y = np.arange(50) % 2
>>> bounds = DomainBounds(np.zeros(4), np.ones(4))
>>> san = Sanitizer(party_id="sanitizer", index=0, X=X, y=y, n_classes=2, run_id="r",
...                 bounds=bounds)
>>> msg = san.release(ReleaseRequest(scheme="pca-laplace", b=0.3, s=2))
>>> msg.kind, msg.payload["scores"].shape, msg.receiver
('release:pca-laplace', (50, 2), 'miner')
>>> round(float(msg.payload["amplification"][0]), 3)
28.032
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.core.data import DomainBounds
from ppknn.core.errors import ConfigError, DataError
from ppknn.core.messages import PUBLIC, Message, PartyId, uniform_provenance
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.protocols.pca_perturbation.api import SanitizerAPI
from ppknn.protocols.pca_perturbation.privacy import domain_amplification
from ppknn.protocols.pca_perturbation.protocol import PROTOCOL
from ppknn.protocols.pca_perturbation.sanitize import (
    amplification,
    check_components,
    check_noise_parameter,
    check_training_data,
    fit_pca,
    laplace_mechanisms,
    normalise,
)
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest, release_payload

_PUBLIC_KEYS = ("b", "sd", "lower", "upper")


@dataclass(frozen=True, kw_only=True)
class Guarantee:
    """The worst-case guarantee of a PCA + Laplace release with parameters ``b``, ``s``.

    Attributes
    ----------
    b, s:
        The release parameters.
    amplification:
        ``(s,)`` per column ``exp(range_i / b_i)`` over the training scores (eq. 8).
    domain_amplification:
        ``(s,)`` the same over the whole normalised domain ``[0, 1]^m``.
    """

    b: float
    s: int
    amplification: np.ndarray
    domain_amplification: np.ndarray


class Sanitizer(SanitizerAPI):
    """The data owner who publishes sanitised releases.

    Parameters
    ----------
    party_id, index:
        Name and provenance code.
    X, y:
        Private training rows ``(n, m)`` (finite, no constant column) and
        integer labels in ``[0, n_classes)``.
    n_classes:
        Number of classes (public schema).
    run_id:
        The run's id.
    bounds:
        Declared public per-attribute bounds for the ``[0, 1]`` normalisation;
        ``None`` derives them from ``X`` (warns: it leaks the extremes).
    miner:
        The party releases go to.
    seed, mode:
        Root seed and randomness mode.
    """

    def __init__(self, *, party_id: PartyId, index: int, X: np.ndarray, y: np.ndarray,
                 n_classes: int, run_id: str, bounds: DomainBounds | None = None,
                 miner: PartyId = "miner", seed: int = 0,
                 mode: str = RandomnessMode.REPRODUCIBLE.value) -> None:
        X, y = check_training_data(X, y, what=f"party {party_id!r}")
        if y.min() < 0 or y.max() >= n_classes:
            raise DataError(f"party {party_id!r}: labels must be in [0, {n_classes}), got "
                            f"[{y.min()}, {y.max()}]")
        if bounds is None:
            bounds = DomainBounds.from_data(X)
        if bounds.lower.shape != (X.shape[1],):
            raise ConfigError(f"party {party_id!r}: bounds for {bounds.lower.size} attributes, "
                              f"data has {X.shape[1]}")
        flat = np.flatnonzero(bounds.upper <= bounds.lower)
        if flat.size:
            raise ConfigError(f"party {party_id!r}: declared bounds of attribute {int(flat[0])} "
                              f"have zero width ({bounds.lower[flat[0]]}); every attribute "
                              f"needs upper > lower")
        bounds.check(X, f"party {party_id!r}")
        self.party_id, self.index, self.run_id = party_id, int(index), run_id
        self.miner, self.n_classes = miner, int(n_classes)
        self.policy = SeedPolicy(root=seed, mode=RandomnessMode(mode))
        self.lower, self.upper = bounds.lower, bounds.upper
        self.y = y
        self.Z = normalise(X, self.lower, self.upper)  # ground truth for the scorers
        self.fit = fit_pca(self.Z)
        self.private: dict[int, dict[str, np.ndarray]] = {}

    @property
    def m(self) -> int:
        """Number of attributes."""
        return int(self.Z.shape[1])

    def release(self, request: ReleaseRequest) -> Message:
        """Sanitise the table as ``request`` says; one message to the miner."""
        if not isinstance(request, ReleaseRequest):
            raise ConfigError(f"expected a ReleaseRequest, got {type(request).__name__}")
        rng = self.policy.generator("party", self.index, PROTOCOL, request.round)
        payload, private = release_payload(request, Z=self.Z, y=self.y, fit=self.fit,
                                           lower=self.lower, upper=self.upper, rng=rng,
                                           mode=self.policy.mode)
        self.private[request.round] = private
        provenance = {key: uniform_provenance(PUBLIC if key in _PUBLIC_KEYS else self.index)
                      for key in payload}
        return Message(self.run_id, PROTOCOL, request.round, -1, self.party_id, self.miner,
                       f"release:{request.scheme}", payload, provenance)

    def guarantee(self, b: float, s: int) -> Guarantee:
        """The amplification a ``pca-laplace`` release with ``b``, ``s`` would have."""
        b = check_noise_parameter(b)
        s = check_components(s, self.m)
        scores = self.fit.scores(self.Z, s)
        ranges = scores.max(axis=0) - scores.min(axis=0)
        scales = np.array([mech.scale for mech in laplace_mechanisms(ranges, b)])
        return Guarantee(b=b, s=s, amplification=amplification(ranges, scales),
                         domain_amplification=domain_amplification(self.fit.components[:s],
                                                                   scales))


__all__ = ["Guarantee", "Sanitizer"]
