"""Release schemes: the paper's method and the baselines it is compared with.

Every scheme turns the sanitizer's normalised training rows ``Z`` (in
``[0, 1]`` by the declared bounds) into a payload for the miner. The
payload always holds ``labels`` and the normalisation bounds ``lower`` and
``upper`` (the miner normalises its own instances with them); the rest
depends on the scheme (the message ``kind`` is ``"release:<scheme>"``):

``pca-laplace`` (PCA-radius, §5)
    ``scores`` ``(n, s)`` noisy principal-component scores, the projection
    ``mean`` ``(m,)`` and ``components`` ``(s, m)``, ``stats`` = ``[E(D),
    Var(D), n_sd]``, ``b`` and the per-column ``amplification``.
``pca-no-noise``
    The same without noise (the paper's ``b = 0`` reference; no privacy).
``laplace`` (No-PCA, §6.3)
    ``data`` ``(n, m)``: Laplace noise of scale ``b * range_j`` added to
    each normalised attribute; ``stats``, ``b``, ``amplification``.
``rand-p`` (Liu, Kargupta & Ryan)
    ``data`` = ``Z R`` with ``R`` ``(m, k)`` i.i.d. ``N(0, 1/k)`` and the
    matrix itself as ``projection`` (the miner must project its instances).
``rand-u``, ``rand-n``
    ``data`` = ``Z`` + uniform or normal noise of standard deviation ``sd``
    (uniform on ``[-sd sqrt 3, sd sqrt 3]``).

Test instances are never noised: the miner projects them (PCA schemes,
Rand-P) or only normalises them.

Examples
--------
>>> ReleaseRequest(scheme="pca-laplace", b=0.3, s=2).label
'PCA-radius b=0.3'
>>> ReleaseRequest(scheme="rand-p", k=3).label
'Rand-P k=3'
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.rng import RandomnessMode
from ppknn.protocols.pca_perturbation.sanitize import (
    PCAFit,
    amplification,
    check_components,
    check_noise_parameter,
    distortion_statistics,
    laplace_mechanisms,
    perturb,
)

SCHEMES = ("pca-laplace", "pca-no-noise", "laplace", "rand-p", "rand-u", "rand-n")
_LABELS = {"pca-laplace": "PCA-radius", "pca-no-noise": "PCA no noise", "laplace": "No-PCA Laplace",
           "rand-p": "Rand-P", "rand-u": "Rand-U", "rand-n": "Rand-N"}


@dataclass(frozen=True, kw_only=True)
class ReleaseRequest:
    """What the sanitizer is asked to release.

    Parameters
    ----------
    scheme:
        One of :data:`SCHEMES`.
    round:
        The protocol round of this release (>= 1); also selects its random stream.
    b:
        Laplace parameter (``pca-laplace``, ``laplace``), > 0.
    s:
        Kept components (``pca-laplace``, ``pca-no-noise``), in ``[1, m]``.
    k:
        Projection dimension (``rand-p``), in ``[1, m - 1]``.
    sd:
        Noise standard deviation (``rand-u``, ``rand-n``), > 0.
    n_sd:
        Standard deviations in the modified kNN's radius (published with the statistics).
    """

    scheme: str
    round: int = 1
    b: float | None = None
    s: int | None = None
    k: int | None = None
    sd: float | None = None
    n_sd: float = 2.0

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ConfigError(f"unknown release scheme {self.scheme!r}; allowed: {list(SCHEMES)}")
        if isinstance(self.round, bool) or not isinstance(self.round, numbers.Integral) \
                or self.round < 1:
            raise ConfigError(f"round must be an integer >= 1, got {self.round!r}")
        needs = {"pca-laplace": ("b", "s"), "pca-no-noise": ("s",), "laplace": ("b",),
                 "rand-p": ("k",), "rand-u": ("sd",), "rand-n": ("sd",)}[self.scheme]
        for name in ("b", "s", "k", "sd"):
            given = getattr(self, name) is not None
            if given != (name in needs):
                what = "needs" if name in needs else "does not take"
                raise ConfigError(f"scheme {self.scheme!r} {what} parameter {name!r}")
        if self.b is not None:
            object.__setattr__(self, "b", check_noise_parameter(self.b))
        if self.sd is not None:
            object.__setattr__(self, "sd", check_noise_parameter(self.sd, name="sd"))
        if not (isinstance(self.n_sd, numbers.Real) and math.isfinite(self.n_sd)
                and self.n_sd >= 0):
            raise ConfigError(f"n_sd must be a finite number >= 0, got {self.n_sd!r}")

    @property
    def label(self) -> str:
        """Short name for tables and plots."""
        value = {"b": self.b, "k": self.k, "sd": self.sd}
        params = " ".join(f"{n}={v:g}" for n, v in value.items() if v is not None)
        return f"{_LABELS[self.scheme]} {params}".strip()


def _common(Z: np.ndarray, y: np.ndarray, lower: np.ndarray, upper: np.ndarray
            ) -> dict[str, np.ndarray]:
    return {"labels": np.asarray(y, dtype=np.int64), "lower": lower, "upper": upper}


def _stats_array(stats) -> np.ndarray:
    return np.array([stats.mean, stats.variance, stats.n_sd])


def release_payload(request: ReleaseRequest, *, Z: np.ndarray, y: np.ndarray, fit: PCAFit,
                    lower: np.ndarray, upper: np.ndarray, rng: np.random.Generator,
                    mode: RandomnessMode | str = RandomnessMode.REPRODUCIBLE
                    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The payload of ``request`` and the sanitizer's private record of it.

    Returns
    -------
    payload:
        What the miner receives (see module docstring).
    private:
        What the sanitizer keeps about the release: for the PCA and Laplace
        schemes the released columns' ``ranges`` and noise ``scales``.
    """
    n, m = Z.shape
    out = _common(Z, y, lower, upper)
    scheme = request.scheme
    if scheme in ("pca-laplace", "pca-no-noise"):
        s = check_components(request.s, m)
        clean = fit.scores(Z, s)
        ranges = clean.max(axis=0) - clean.min(axis=0)
        if scheme == "pca-laplace":
            assert request.b is not None
            mechs = laplace_mechanisms(ranges, request.b, mode)
            scales = np.array([mech.scale for mech in mechs])
            noisy = perturb(clean, mechs, rng)
            out.update(b=np.array([request.b]), amplification=amplification(ranges, scales))
        else:
            scales, noisy = np.zeros(s), clean.copy()
        stats = distortion_statistics(kept_variances=fit.variances[:s], scales=scales,
                                      dropped_variances=fit.variances[s:], n_sd=request.n_sd)
        out.update(scores=noisy, mean=fit.mean, components=fit.components[:s],
                   stats=_stats_array(stats))
        return out, {"ranges": ranges, "scales": scales}
    if scheme == "laplace":
        assert request.b is not None
        ranges = Z.max(axis=0) - Z.min(axis=0)
        mechs = laplace_mechanisms(ranges, request.b, mode)
        scales = np.array([mech.scale for mech in mechs])
        stats = distortion_statistics(kept_variances=Z.var(axis=0), scales=scales,
                                      dropped_variances=np.zeros(0), n_sd=request.n_sd)
        out.update(data=perturb(Z, mechs, rng), b=np.array([request.b]),
                   amplification=amplification(ranges, scales), stats=_stats_array(stats))
        return out, {"ranges": ranges, "scales": scales}
    if scheme == "rand-p":
        k = request.k
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= m - 1:
            raise ConfigError(f"Rand-P needs k in [1, {m - 1}] (fewer columns than the {m} "
                              f"attributes), got {k!r}")
        R = rng.normal(0.0, 1.0, size=(m, int(k))) / math.sqrt(int(k))
        out.update(data=Z @ R, projection=R)
        return out, {}
    assert request.sd is not None
    if scheme == "rand-u":
        half = request.sd * math.sqrt(3.0)
        noise = rng.uniform(-half, half, size=Z.shape)
    else:
        noise = rng.normal(0.0, request.sd, size=Z.shape)
    out.update(data=Z + noise, sd=np.array([request.sd]))
    return out, {}


def miner_features(kind: str, payload: dict[str, np.ndarray], Zq: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Released training features and the miner's (normalised) instances in the same space."""
    scheme = kind.removeprefix("release:")
    if scheme in ("pca-laplace", "pca-no-noise"):
        return payload["scores"], (Zq - payload["mean"]) @ payload["components"].T
    if scheme == "rand-p":
        return payload["data"], Zq @ payload["projection"]
    if scheme in ("laplace", "rand-u", "rand-n"):
        return payload["data"], Zq
    raise ConfigError(f"unknown release kind {kind!r}")


__all__ = ["SCHEMES", "ReleaseRequest", "miner_features", "release_payload"]
