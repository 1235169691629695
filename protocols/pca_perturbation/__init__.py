"""PCA + Laplace perturbation for distance-based classification (Mukherjee et al. 2008).

Modules
-------
sanitize
    Normalisation, PCA, Laplace noise per component, distortion statistics.
schemes
    Release schemes: the paper's method and the Rand-P, Rand-U, Rand-N, No-PCA baselines.
knn
    The modified kNN (search radius from the distortion statistics) and weighted kNN.
privacy
    Amplification, the rho1 -> rho2 bound, average privacy (95% interval width).
attacks
    Transform and correlation attacks over the miner's view.
protocol
    The two-party driver (sanitizer -> miner) and the miner's plan.
datasets
    The paper's datasets: waveform-21 and 10-cluster generators, constant-column handling.

The paper's experiments (the scenario grids, one repetition through the parties and
the transcript, and the execution-time study) live beside the library in
:mod:`ppknn_reproductions.experiments.pca`, :mod:`ppknn_reproductions.experiments.pca_evaluation`
and :mod:`ppknn_reproductions.experiments.pca_timing`; the claims in
:mod:`ppknn_reproductions.mukherjee_claims`.
"""

from ppknn.protocols.pca_perturbation.attacks import AttackOutcome, attack, pca_filter, reconstruct
from ppknn.protocols.pca_perturbation.driver import run_releases
from ppknn.protocols.pca_perturbation.knn import knn_predict, radius_knn, select_k
from ppknn.protocols.pca_perturbation.privacy import (
    amplification_bound,
    average_privacy,
    breach_excluded,
    rho2_bound,
)
from ppknn.protocols.pca_perturbation.protocol import PROTOCOL, MinerOutput, MiningPlan
from ppknn.protocols.pca_perturbation.sanitize import (
    DistortionStats,
    distortion_statistics,
    fit_pca,
)
from ppknn.protocols.pca_perturbation.schemes import SCHEMES, ReleaseRequest

__all__ = [
    "PROTOCOL",
    "SCHEMES",
    "AttackOutcome",
    "DistortionStats",
    "MinerOutput",
    "MiningPlan",
    "ReleaseRequest",
    "amplification_bound",
    "attack",
    "average_privacy",
    "breach_excluded",
    "distortion_statistics",
    "fit_pca",
    "knn_predict",
    "pca_filter",
    "radius_knn",
    "reconstruct",
    "rho2_bound",
    "run_releases",
    "select_k",
]
