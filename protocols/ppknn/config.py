"""Public configuration of a PP-kNN run, shared by the owners and the driver.

Examples
--------
>>> from ppknn.protocols.ppknn.pp_topk import TopKParams
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
from ppknn.protocols.ppknn.pp_topk import TopKParams
from ppknn.protocols.ppknn.secure_sum import SUM_KINDS

MIN_PARTIES = 3
"""PP-kNN needs at least this many owners on the ring."""


@dataclass(frozen=True, kw_only=True)
class PPKNNConfig:
    """Public configuration of one PP-kNN run."""

    params: TopKParams
    weighting: str = "uniform"
    secure_sum: str = "ring"

    def __post_init__(self) -> None:
        if self.weighting not in ("uniform", "distance"):
            raise ConfigError(f"weighting must be 'uniform' or 'distance', got {self.weighting!r}")
        if self.secure_sum not in SUM_KINDS:
            raise ConfigError(f"secure_sum must be one of {list(SUM_KINDS)}, "
                              f"got {self.secure_sum!r}")


@dataclass(frozen=True)
class RingSetup:
    """Public set-up every owner learns: the ring, its start node, parameters."""

    ring: tuple[PartyId, ...]
    start: PartyId
    params: TopKParams
    weighting: str = "uniform"


__all__ = ["MIN_PARTIES", "PPKNNConfig", "RingSetup"]
