"""PP-kNN classification over a ring of data owners (Xiong, Chitti & Liu).

Modules
-------
config
    The public :class:`PPKNNConfig` and the :class:`RingSetup` every owner learns.
pp_topk
    PP-TopK: the steps of the randomised top-k selection around the ring.
secure_sum
    Ring and secret-shared secure sum of the vote vectors.
driver
    :func:`run_ppknn` over a runtime hosting
    :class:`~protocols.ppknn_ring.parties.ring_owner.RingDataOwner` parties; ring helpers.
pp_topk_attacks, secure_sum_attacks
    What an adversary learns from its view of PP-TopK and of the secure sum.
"""

from ppknn.protocols.ppknn_ring.config import MIN_PARTIES, PPKNNConfig, RingSetup
from ppknn.protocols.ppknn_ring.driver import (
    PPKNNResult,
    drive,
    random_ring,
    ring_from_start,
    run_ppknn,
    ties_at_kth,
)

__all__ = [
    "MIN_PARTIES",
    "PPKNNConfig",
    "PPKNNResult",
    "RingSetup",
    "drive",
    "random_ring",
    "ring_from_start",
    "run_ppknn",
    "ties_at_kth",
]
