"""Public configuration of a PP-kNN run, shared by the owners and the driver.

Examples
--------
>>> from ppknn.protocols.ppknn_ring.pp_topk import TopKParams
>>> params = TopKParams(k=3, rounds=2, max_distance=10.0)
>>> PPKNNConfig(params=params, weighting="distance").secure_sum
'ring'
>>> PPKNNConfig(params=params, secure_sum="none")
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: secure_sum must be one of ['ring', 'shared'], got 'none'
"""

from __future__ import annotations

from dataclasses import dataclass

from ppknn.core.errors import ConfigError
from ppknn.core.messages import PartyId
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams
from ppknn.protocols.ppknn_ring.secure_sum import SUM_KINDS
from ppknn.protocols.ppknn_ring.votes import VOTE_RULES

MIN_PARTIES = 3
"""PP-kNN needs at least this many owners on the ring."""


@dataclass(frozen=True, kw_only=True)
class PPKNNConfig:
    """Public configuration of one PP-kNN run.

    ``vote``: ``"paper"`` (every point within the final vector's k-th value votes),
    ``"exact-k"`` (only points whose distance occurs in the final vector) or
    ``"k-weighted"`` (those, and the other points within Delta sharing the remaining
    ``k - matched`` votes); see :mod:`~ppknn.protocols.ppknn_ring.votes`.
    """

    params: TopKParams
    weighting: str = "uniform"
    secure_sum: str = "ring"
    vote: str = "paper"

    def __post_init__(self) -> None:
        if self.weighting not in ("uniform", "distance"):
            raise ConfigError(f"weighting must be 'uniform' or 'distance', got {self.weighting!r}")
        if self.secure_sum not in SUM_KINDS:
            raise ConfigError(f"secure_sum must be one of {list(SUM_KINDS)}, "
                              f"got {self.secure_sum!r}")
        if self.vote not in VOTE_RULES:
            raise ConfigError(f"vote must be one of {list(VOTE_RULES)}, got {self.vote!r}")


@dataclass(frozen=True)
class RingSetup:
    """Public set-up every owner learns: the ring, its start node, parameters."""

    ring: tuple[PartyId, ...]
    start: PartyId
    params: TopKParams
    weighting: str = "uniform"
    vote: str = "paper"


__all__ = ["MIN_PARTIES", "PPKNNConfig", "RingSetup"]
