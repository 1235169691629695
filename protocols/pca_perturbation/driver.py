"""PCA + Laplace perturbation (Mukherjee et al. 2008): the registry's driver.

:func:`drive` runs one release through the two parties the runtime hosts
(:func:`run_releases` does the calls):

1. the sanitizer sends the miner one release (round 1): for ``pca-laplace``
   the noisy scores of ``s`` principal components, the labels, the
   projection and the distortion statistics ``E(D)``, ``Var(D)``;
2. the miner projects its own instances (never noised) and classifies them
   by the :class:`~protocols.pca_perturbation.protocol.MiningPlan`; the
   predictions of :attr:`ReleaseSetup.method` are the run's.

Privacy is read from the sanitizer's own record of the release (the
released columns' ranges and the Laplace scales it drew with), not
re-derived: per released column the amplification ``exp(range_i / b_i)``
(``e^(1/b)``, eq. 8) and the ``rho1 -> rho2`` bound it gives (eq. 2), and
the amplification over the whole normalised domain ``[0, 1]^m``, which a
record outside the training rows' score range can reach.

Deviations from the paper (also in the plugin's README section):

- The amplification is a per-column worst-case measure, as in the paper.
  No epsilon-DP is claimed for the release: the noise scale uses the
  training scores' range (data-derived), the PCA basis, mean and the
  distortion statistics are published without noise, and a record's ``s``
  columns jointly give ``e^(s/b)``.
- The paper leaves two cases of the modified kNN open; the miner defines
  them (:mod:`protocols.pca_perturbation.knn`): an empty radius falls back
  to the ``fallback_k`` nearest points, and zero-distance points take all
  the weight.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import PartyId
from ppknn.core.protocol import PrivacySpent, ProtocolResult, Roles
from ppknn.core.runtime.base import Runtime
from ppknn.core.runtime.typed import typed
from ppknn.protocols.pca_perturbation.api import MinerAPI, SanitizerAPI
from ppknn.protocols.pca_perturbation.privacy import rho2_bound
from ppknn.protocols.pca_perturbation.protocol import PROTOCOL, MinerOutput, MiningPlan
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest

LAPLACE_SCHEMES = ("pca-laplace", "laplace")
"""Schemes with Laplace noise scaled to the range: they have an amplification bound."""

GUARANTEE_LAPLACE = ("no ε-DP claim: per-column amplification e^(1/b) over the training rows' "
                     "range (eq. 8) and the ρ1→ρ2 bound it gives (eq. 2)")
GUARANTEE_NONE = {
    "pca-no-noise": "none: the exact principal-component scores are released (no noise)",
    "rand-p": "no worst-case bound: random projection (average-case privacy only)",
    "rand-u": "no worst-case bound: uniform noise has unbounded amplification",
    "rand-n": "no worst-case bound: normal noise has unbounded amplification",
}


def run_releases(runtime: Runtime, jobs: Sequence[tuple[object, MiningPlan | None]], *,
                 sanitizer: PartyId = "sanitizer", miner: PartyId = "miner"
                 ) -> list[MinerOutput | None]:
    """Run each ``(ReleaseRequest, MiningPlan)`` job: release, receive, classify.

    The release travels sanitizer -> miner as a message (an ``ObjectRef`` on
    Ray, never through the driver); the driver only fetches the miner's
    outputs, one job at a time so that at most one release is in flight. A
    job whose plan is ``None`` is released and received but not classified
    (its output is ``None``).
    """
    outputs: list[MinerOutput | None] = []
    rounds = [getattr(request, "round", None) for request, _ in jobs]
    if len(set(rounds)) != len(rounds):
        raise ConfigError(f"every release needs its own round, got rounds {rounds}")
    sanitizers = typed(runtime, SanitizerAPI, [sanitizer])
    miners = typed(runtime, MinerAPI, [miner])
    for request, plan in jobs:
        r = request.round  # type: ignore[attr-defined]
        msg = sanitizers.call(sanitizer, protocol=PROTOCOL, round=r).release(request)
        got = miners.call(miner, protocol=PROTOCOL, round=r).receive(msg)
        if plan is None:
            runtime.fetch(got)
            outputs.append(None)
            continue
        out = miners.call(miner, protocol=PROTOCOL, round=r).classify(plan)
        outputs.append(runtime.fetch(out))
    return outputs


def safe_exp(x: float) -> float:
    """``e^x``, ``inf`` instead of an overflow (a tiny ``b`` amplifies without bound)."""
    return math.exp(x) if x < 709.0 else math.inf


@dataclass(frozen=True, kw_only=True)
class ReleaseSetup:
    """The driver's configuration: one release and how the miner classifies it.

    Parameters
    ----------
    request:
        What the sanitizer releases (scheme and its parameters; round 1).
    mining:
        How the miner classifies; must include ``method``.
    method:
        Whose predictions are the run's: ``"radius"``, ``"best-k"`` or ``"fixed-k"``.
    rho1:
        The prior probability of the ``rho1 -> rho2`` bound reported.
    """

    request: ReleaseRequest
    mining: MiningPlan
    method: str
    rho1: float = 0.001

    def __post_init__(self) -> None:
        if self.method not in self.mining.methods:
            raise ConfigError(f"method {self.method!r} is not among the mining plan's methods "
                              f"{list(self.mining.methods)}")
        if not 0.0 < self.rho1 < 1.0:
            raise ConfigError(f"rho1 must be a probability in (0, 1), got {self.rho1!r}")


@dataclass(frozen=True)
class ReleaseAccount:
    """The privacy of one release, from the sanitizer's record of it.

    Attributes
    ----------
    log_amplification:
        ``(c,)`` per released column ``range_i / b_i`` (``1/b``); empty without Laplace noise.
    log_domain_amplification:
        ``(c,)`` the same over the normalised domain ``[0, 1]^m``.
    """

    log_amplification: np.ndarray
    log_domain_amplification: np.ndarray

    @property
    def amplification(self) -> float | None:
        """The largest per-column amplification (``None`` without Laplace noise)."""
        if self.log_amplification.size == 0:
            return None
        return safe_exp(float(self.log_amplification.max()))

    @property
    def amplification_min(self) -> float | None:
        """The smallest per-column amplification (``None`` without Laplace noise)."""
        if self.log_amplification.size == 0:
            return None
        return safe_exp(float(self.log_amplification.min()))

    @property
    def domain_amplification(self) -> float | None:
        """The largest per-column amplification over the normalised domain."""
        if self.log_domain_amplification.size == 0:
            return None
        return safe_exp(float(self.log_domain_amplification.max()))

    def rho2(self, rho1: float) -> float | None:
        """The largest posterior a prior ``rho1`` can reach (eq. 2; 1 when unbounded)."""
        gamma = self.amplification
        if gamma is None:
            return None
        return 1.0 if math.isinf(gamma) else rho2_bound(gamma, rho1)


@dataclass(frozen=True)
class PCAPerturbationResult:
    """The protocol's own output (``ProtocolResult.detail``)."""

    miner: MinerOutput
    account: ReleaseAccount
    request: ReleaseRequest


def account_of(runtime: Runtime, sanitizer: str, request: ReleaseRequest) -> ReleaseAccount:
    """The release's privacy from the sanitizer's private record (simulation-side read)."""
    if request.scheme not in LAPLACE_SCHEMES:
        return ReleaseAccount(np.zeros(0), np.zeros(0))
    record = runtime.state(sanitizer, "private")[request.round]
    ranges = np.asarray(record["ranges"], dtype=np.float64)
    scales = np.asarray(record["scales"], dtype=np.float64)
    if request.scheme == "pca-laplace":
        comps = runtime.state(sanitizer, "fit").components[: len(scales)]
    else:  # No-PCA Laplace: each attribute is its own column, of width 1 on the domain
        comps = np.eye(len(scales))
    # the logarithm of privacy.domain_amplification, without its overflow for a tiny b
    log_domain = np.abs(comps).sum(axis=1) / scales
    return ReleaseAccount(ranges / scales, log_domain)


def noise_to_signal_of(runtime: Runtime, sanitizer: str, request: ReleaseRequest
                       ) -> tuple[float, float] | None:
    """Noise over signal per released column: ``(min, median)`` of ``2 b_i^2 / var_i``.

    ``var_i`` is the column's own variance (simulation-side read of the sanitizer's state).
    Where the ratio exceeds 1, dropping the column lowers an attacker's squared error, so a
    filtering attack keeps few components. ``None`` for schemes without Laplace noise.
    """
    if request.scheme not in LAPLACE_SCHEMES:
        return None
    scales = np.asarray(runtime.state(sanitizer, "private")[request.round]["scales"],
                        dtype=np.float64)
    if request.scheme == "pca-laplace":
        signal = np.asarray(runtime.state(sanitizer, "fit").variances[: len(scales)])
    else:
        signal = np.asarray(runtime.state(sanitizer, "Z")).var(axis=0)
    ratio = 2.0 * scales**2 / np.maximum(signal, np.finfo(float).tiny)
    return float(ratio.min()), float(np.median(ratio))


def drive(runtime: Runtime, parties: Roles, config: ReleaseSetup,
          queries: np.ndarray) -> ProtocolResult:
    """The registry's driver interface (:class:`core.protocol.Driver`).

    ``parties["sanitizer"]`` and ``parties["miner"]`` name one party each.
    ``queries`` are the miner's own instances, which it already holds (it
    was built with them); here they only check the output's length. One
    hop on the critical path: the release; the miner classifies locally.
    """
    (sanitizer,) = parties["sanitizer"]
    (miner,) = parties["miner"]
    request = config.request
    (out,) = run_releases(runtime, [(request, config.mining)], sanitizer=sanitizer, miner=miner)
    assert out is not None
    preds = np.asarray(out.predictions[config.method])
    if len(preds) != len(queries):
        raise ProtocolError(f"{PROTOCOL}: the miner classified {len(preds)} instances, the "
                            f"query batch has {len(queries)}")
    account = account_of(runtime, sanitizer, request)
    noise_to_signal = noise_to_signal_of(runtime, sanitizer, request)
    scheme = request.scheme
    guarantee = GUARANTEE_LAPLACE if scheme in LAPLACE_SCHEMES else GUARANTEE_NONE[scheme]
    radius = "radius" in config.mining.methods
    metrics = {
        "log_amplification": (None if account.log_amplification.size == 0
                              else float(account.log_amplification.max())),
        "amplification": account.amplification,
        "amplification_min": account.amplification_min,
        "domain_amplification": account.domain_amplification,
        "rho1": config.rho1,
        "rho2_bound": account.rho2(config.rho1),
        "radius2": out.radius2 if radius else None,
        "mean_in_radius": out.mean_in_radius if radius else None,
        "fallback_fraction": out.fallback_fraction if radius else None,
        "best_k": out.best_k if "best-k" in config.mining.methods else None,
        "cv_accuracy": [list(t) for t in out.cv_accuracy] or None,
        "noise_to_signal_min": None if noise_to_signal is None else noise_to_signal[0],
        "noise_to_signal_median": None if noise_to_signal is None else noise_to_signal[1],
    }
    per_party: dict[str, dict[str, Any]] = {
        sanitizer: {"released_columns": int(account.log_amplification.size) or None,
                    "amplification": account.amplification},
        miner: {"instances": int(len(preds))},
    }
    return ProtocolResult(
        protocol=PROTOCOL, predictions=preds, hops=1,
        privacy=PrivacySpent(guarantee=guarantee),
        metrics=metrics, per_party=per_party,
        public={"scheme": scheme, "release_round": request.round},
        detail=PCAPerturbationResult(miner=out, account=account, request=request))


__all__ = ["GUARANTEE_LAPLACE", "LAPLACE_SCHEMES", "PCAPerturbationResult", "ReleaseAccount",
           "ReleaseSetup", "account_of", "drive", "noise_to_signal_of", "safe_exp"]
