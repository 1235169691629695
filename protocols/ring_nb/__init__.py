"""Ring Naive Bayes: the ring data owners train one Gaussian Naive Bayes model together.

**A building block of this framework, not a protocol of the five papers.**
The PP-kNN ring owners (:class:`~protocols.ppknn_ring.parties.ring_owner.RingDataOwner`) each
compute their Naive Bayes sufficient statistics -- per-class counts, sums and
sums of squares of their rows, normalised to ``[-1, 1]`` by the public
bounds -- and add them with the ring secure sum of Xiong et al. or the
additive secret-shared sum (:mod:`protocols.ppknn_ring.secure_sum`: fixed point
in Z_(2^64), uniform masks). The start node adds Laplace noise **once**, at
the statistics' global sensitivity, and broadcasts the model; every owner
predicts the public query batch with it.

Trust: **the start node sees the exact summed statistics before it adds the
noise** -- it is trusted for the noise step. The secure sum hides each
owner's statistics from the other owners (the shared variant also from
coalitions that miss an honest node), not the total from the start node.
Privacy unit: ε-DP of the released model under add/remove one record of
any owner; the ε is split over the three statistic groups (``split``) and
charged once on the start node's ledger.

Modules
-------
config
    :class:`RingNBConfig` (ε, budget split, secure sum, variance floor) and
    the :class:`RingNBSetup` every owner learns.
steps
    Statistics, signed fixed-point encoding, noise, model and prediction.
driver
    :func:`run_ring_nb` and the registry's :func:`drive`.
"""

from ppknn.protocols.ring_nb.config import GROUPS, MIN_PARTIES, PROTOCOL, RingNBConfig, RingNBSetup
from ppknn.protocols.ring_nb.driver import GUARANTEE, RingNBPlan, RingNBResult, drive, run_ring_nb

__all__ = ["GROUPS", "GUARANTEE", "MIN_PARTIES", "PROTOCOL", "RingNBConfig", "RingNBPlan",
           "RingNBResult", "RingNBSetup", "drive", "run_ring_nb"]
