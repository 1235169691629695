"""The PCA + Laplace roles' interfaces: the methods the driver calls, with their types.

:class:`~protocols.pca_perturbation.parties.sanitizer.Sanitizer` implements
:class:`SanitizerAPI` and :class:`~protocols.pca_perturbation.parties.miner.Miner`
:class:`MinerAPI`; the release loop
(:func:`protocols.pca_perturbation.driver.run_releases`) calls them through
``typed(runtime, ...)`` (:mod:`core.runtime.typed`).
"""

from __future__ import annotations

from typing import Protocol

from ppknn.core.messages import Message
from ppknn.protocols.pca_perturbation.protocol import MinerOutput, MiningPlan
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest


class SanitizerAPI(Protocol):
    """The sanitizer: publishes a sanitised release of its table."""

    def release(self, request: ReleaseRequest) -> Message:
        """Sanitise the table as ``request`` says; one message to the miner."""
        ...


class MinerAPI(Protocol):
    """The miner: keeps a release and classifies its instances with it."""

    def receive(self, release: Message) -> dict[str, object]:
        """Keep the release; returns what it holds (scheme and shape)."""
        ...

    def classify(self, plan: MiningPlan) -> MinerOutput:
        """Classify the instances against the latest release by ``plan``."""
        ...


__all__ = ["MinerAPI", "SanitizerAPI"]
