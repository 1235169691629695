"""``pca-perturbation``: PCA + Laplace data release and the modified kNN (Mukherjee et al.).

Scenario table::

    [protocol]
    name = "pca-perturbation"
    scheme = "pca-laplace"     # or pca-no-noise, laplace, rand-p, rand-u, rand-n
    components = 3             # s kept components (rand-p: the projection's dimension)
    b = 0.2                    # Laplace scale factor: b_i = b * range_i (amplification e^(1/b))
    method = "radius"          # or "best-k", "fixed-k"
    compare = ["best-k"]       # further methods classified too (accuracy_<method> metrics)
    k = 5                      # fixed-k's k, and the baseline's

Parties: one ``sanitizer`` holding the union of the training rows (whatever
``[parties].n`` is) and one ``miner`` holding the query rows as its
instances. The sanitizer normalises with the scenario's public bounds
(``[data.bounds]``, or ``scale = "minmax"``), releases once; the miner
classifies locally. Baseline: scikit-learn's brute-force kNN with the same
k and the miner's weights (``1/d²``, zero-distance points take all the
weight) on the clean union. Leakage: the transform and correlation attacks
over the miner's view, scored against the sanitizer's normalised rows; the
sanitizer's view (it receives nothing) against the miner's instances.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator

from ppknn.core.errors import ConfigError
from ppknn.core.runtime import PartySpec
from ppknn.core.transcript import Transcript
from ppknn.protocols.pca_perturbation.api import MinerAPI, SanitizerAPI
from ppknn.protocols.pca_perturbation.attacks import (
    AttackOutcome,
    attack,
    measured_distortion,
    release_message,
)
from ppknn.protocols.pca_perturbation.driver import (
    LAPLACE_SCHEMES,
    PCAPerturbationResult,
    ReleaseSetup,
    drive,
    safe_exp,
)
from ppknn.protocols.pca_perturbation.knn import DEFAULT_KS
from ppknn.protocols.pca_perturbation.parties.miner import Miner
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer
from ppknn.protocols.pca_perturbation.plugin import attacks as attacks  # registers its attacks
from ppknn.protocols.pca_perturbation.plugin import audit as audit_cases
from ppknn.protocols.pca_perturbation.plugin import deviations as deviating
from ppknn.protocols.pca_perturbation.protocol import PROTOCOL, MiningPlan
from ppknn.protocols.pca_perturbation.sanitize import normalise
from ppknn.protocols.pca_perturbation.schemes import ReleaseRequest
from ppknn.simulations.prepare import PreparedData
from ppknn.simulations.registry import (
    Baseline,
    Measured,
    Plan,
    ProtocolConfig,
    ProtocolPlugin,
    Role,
    register,
)
from ppknn.simulations.scenario import Scenario

NAME = "pca-perturbation"
SANITIZER, MINER = "sanitizer", "miner"
PCA_SCHEMES = ("pca-laplace", "pca-no-noise")
STATS_SCHEMES = ("pca-laplace", "pca-no-noise", "laplace")
"""Schemes that publish the distortion statistics the radius method needs."""

PositiveInt = Annotated[int, Field(ge=1, strict=True)]


class PCAPerturbationConfig(ProtocolConfig):
    """``[protocol]`` of ``pca-perturbation``.

    ``b`` is used by the Laplace schemes (``pca-laplace``, ``laplace``),
    ``sd`` by ``rand-u`` and ``rand-n``, ``components`` by the PCA schemes
    (``s``) and ``rand-p`` (the projection's dimension); a scheme ignores the
    others, so one table can be swept over schemes.
    """

    name: Literal["pca-perturbation"] = "pca-perturbation"
    scheme: Literal["pca-laplace", "pca-no-noise", "laplace", "rand-p", "rand-u",
                    "rand-n"] = "pca-laplace"
    components: int = Field(3, ge=1, strict=True)
    b: float = Field(0.2, allow_inf_nan=False, strict=True)
    sd: float = Field(0.1, allow_inf_nan=False, strict=True)
    n_sd: float = Field(2.0, ge=0, allow_inf_nan=False, strict=True)
    method: Literal["radius", "best-k", "fixed-k"] = "radius"
    compare: tuple[Literal["radius", "best-k", "fixed-k"], ...] = ()
    """Further classification methods the miner runs on the same release; each one's
    accuracy is a metric (``accuracy_radius``, ``accuracy_best_k``, ``accuracy_fixed_k``),
    the run's predictions stay ``method``'s."""
    k: int = Field(5, ge=1, strict=True)
    fallback_k: int = Field(5, ge=1, strict=True)
    ks: tuple[PositiveInt, ...] = Field(DEFAULT_KS, min_length=1)
    folds: int = Field(5, ge=2, strict=True)
    max_validation: int = Field(1000, ge=2, strict=True)
    rho1: float = Field(0.001, gt=0, lt=1, allow_inf_nan=False, strict=True)
    attacks: bool = Field(True, strict=True)

    @field_validator("b", "sd")
    @classmethod
    def _positive(cls, v: float, info: Any) -> float:
        if not v > 0:
            hint = (" (a release without noise is scheme = \"pca-no-noise\")"
                    if info.field_name == "b" else "")
            raise ValueError(f"must be a finite number > 0{hint}")
        return v


def _refuse(key: str, value: Any, why: str, source: str | None = None) -> ConfigError:
    head = f"invalid scenario {source}:\n  " if source else ""
    return ConfigError(f"{head}protocol.{key} = {value!r}: {why}")


def released_columns(config: PCAPerturbationConfig, m: int) -> int:
    """Columns the release carries: ``s``, the projection's dimension, or every attribute."""
    return config.components if config.scheme in (*PCA_SCHEMES, "rand-p") else m


def release_request(config: PCAPerturbationConfig) -> ReleaseRequest:
    """The sanitizer's request (round 1) for the configured scheme."""
    by_scheme: dict[str, dict[str, Any]] = {
        "pca-laplace": {"b": config.b, "s": config.components},
        "pca-no-noise": {"s": config.components},
        "laplace": {"b": config.b},
        "rand-p": {"k": config.components},
        "rand-u": {"sd": config.sd},
        "rand-n": {"sd": config.sd},
    }
    return ReleaseRequest(scheme=config.scheme, round=1, n_sd=config.n_sd,
                          **by_scheme[config.scheme])


def check_against_data(config: PCAPerturbationConfig, data: PreparedData) -> None:
    """Plan-time checks that need the data (feature and row counts, bounds)."""
    n, m = data.train_X.shape
    ds = data.dataset.name
    limit = m - 1 if config.scheme == "rand-p" else m
    if config.scheme in (*PCA_SCHEMES, "rand-p") and config.components > limit:
        what = ("fewer than the" if config.scheme == "rand-p" else "at most the")
        raise _refuse("components", config.components,
                      f"scheme {config.scheme!r} needs components in [1, {limit}] ({what} "
                      f"{m} features of dataset {ds!r})")
    for key in ("k", "fallback_k", "folds"):
        value = getattr(config, key)
        if value > n:
            raise _refuse(key, value, f"larger than the {n} training rows the sanitizer holds; "
                          f"choose {key} <= {n}")
    if "best-k" in (config.method, *config.compare):
        smallest_fold = n - math.ceil(n / config.folds)
        if not any(k <= smallest_fold for k in config.ks):
            raise _refuse("ks", list(config.ks),
                          f"no k fits a cross-validation training fold of {smallest_fold} rows "
                          f"({n} rows, {config.folds} folds)")
    flat = np.flatnonzero(data.bounds.upper <= data.bounds.lower)
    if flat.size:
        j = int(flat[0])
        raise ConfigError(f"data.bounds: attribute {j} of dataset {ds!r} has zero width "
                          f"([{data.bounds.lower[j]}, {data.bounds.upper[j]}]); the sanitizer "
                          "normalises every attribute to [0, 1] and needs upper > lower")
    span = data.train_X.max(axis=0) - data.train_X.min(axis=0)
    constant = np.flatnonzero(span == 0)
    if constant.size:
        raise ConfigError(f"dataset {ds!r}: training column(s) {constant.tolist()[:10]} are "
                          "constant; the sanitizer refuses constant columns (drop them)")


def _inverse_square(dist: np.ndarray) -> np.ndarray:
    """The miner's weights for scikit-learn: ``1/d²``; a row with a zero distance: its zeros."""
    dist = np.asarray(dist, dtype=np.float64)
    zero = dist == 0
    w = np.zeros_like(dist)
    np.divide(1.0, dist**2, out=w, where=~zero)
    rows = zero.any(axis=1)
    w[rows] = zero[rows]
    return w


def _digest(*arrays: np.ndarray) -> str:
    """A content digest of arrays (shape, dtype and bytes)."""
    import hashlib

    h = hashlib.blake2b(digest_size=20)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


_BASELINE_CACHE: dict[tuple[str, int], np.ndarray] = {}
_BASELINE_CACHE_SIZE = 8


def baseline_knn(X: np.ndarray, y: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """scikit-learn's brute-force kNN with the miner's weights, on one BLAS thread.

    Cached by value within the process (a digest of ``X``, ``y``, ``queries`` and ``k``):
    the releases of one grid repetition share the split, so the baseline is computed once.
    The answer is a pure function of its inputs, so the cache cannot change a result.
    """
    key = (_digest(np.asarray(X, dtype=np.float64), np.asarray(y),
                   np.asarray(queries, dtype=np.float64)), int(k))
    hit = _BASELINE_CACHE.get(key)
    if hit is None:
        hit = _baseline_knn(X, y, queries, k)
        hit.flags.writeable = False
        if len(_BASELINE_CACHE) >= _BASELINE_CACHE_SIZE:
            _BASELINE_CACHE.pop(next(iter(_BASELINE_CACHE)))
        _BASELINE_CACHE[key] = hit
    return hit.copy()


def _baseline_knn(X: np.ndarray, y: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    knn = KNeighborsClassifier(n_neighbors=k, algorithm="brute", weights=_inverse_square)
    knn.fit(X, y)
    with threadpool_limits(limits=1):
        return knn.predict(queries)


@register
class PCAPerturbation(ProtocolPlugin):
    """PCA + Laplace perturbation and the modified kNN (Mukherjee, Banerjee, Chen & Gangopadhyay).

    A sanitizer releases PCA + Laplace perturbed data; a miner classifies with it.
    """

    name = NAME
    config_model = PCAPerturbationConfig
    roles = (
        Role("sanitizer", Sanitizer, "1",
             "holds the union of the training rows; publishes one sanitised release",
             api=SanitizerAPI),
        Role("miner", Miner, "1", "holds the query rows as its instances; classifies locally",
             api=MinerAPI),
    )
    guarantee = ("no ε-DP: per-column amplification e^(1/b) of the Laplace release (ρ1→ρ2 "
                 "bound) and average privacy under the transform and correlation attacks")
    adversaries = ("correlation-attack", "sanitizer-sees-instances", "transform-attack")
    driver = staticmethod(drive)

    def check_scenario(self, config: ProtocolConfig, scenario: Scenario, *, source: str
                       ) -> None:
        """Cross-checks between keys (those needing the data wait for :meth:`plan`)."""
        assert isinstance(config, PCAPerturbationConfig)
        if "radius" in config.compare and config.scheme not in STATS_SCHEMES:
            raise _refuse("compare", list(config.compare),
                          f"the radius method needs the distortion statistics, which scheme "
                          f"{config.scheme!r} does not publish; compare \"best-k\" or "
                          f"\"fixed-k\", or use a scheme in {list(STATS_SCHEMES)}", source)
        if config.method == "radius" and config.scheme not in STATS_SCHEMES:
            raise _refuse("method", config.method,
                          f"the radius method needs the distortion statistics, which scheme "
                          f"{config.scheme!r} does not publish; use method = \"best-k\" or "
                          f"\"fixed-k\", or a scheme in {list(STATS_SCHEMES)}", source)
        if config.max_validation < config.folds:
            raise _refuse("max_validation", config.max_validation,
                          f"must be >= folds ({config.folds})", source)

    def plan(self, config: ProtocolConfig, data: PreparedData) -> Plan:
        """The sanitizer (union of the training rows) and the miner (the query rows)."""
        assert isinstance(config, PCAPerturbationConfig)
        check_against_data(config, data)
        s = data.scenario
        methods = tuple(dict.fromkeys((config.method, *config.compare)))
        mining = MiningPlan(methods=methods, k=config.k, ks=tuple(config.ks),
                            folds=config.folds, max_validation=config.max_validation,
                            fallback_k=config.fallback_k)
        setup = ReleaseSetup(request=release_request(config), mining=mining,
                             method=config.method, rho1=config.rho1)
        common = {"run_id": data.run_id, "seed": s.run.seed, "mode": s.run.mode,
                  "n_classes": data.n_classes}
        specs = (
            PartySpec(SANITIZER, Sanitizer, {
                "party_id": SANITIZER, "index": 0, "X": data.train_X, "y": data.train_y,
                "bounds": data.bounds, "miner": MINER, **common}),
            PartySpec(MINER, Miner, {"party_id": MINER, "index": 1, "X": data.queries,
                                     **common}),
        )
        n, m = data.train_X.shape
        public = {
            "run_id": data.run_id, "scheme": config.scheme, "method": config.method,
            "features": m, "released_columns": released_columns(config, m),
            "training_rows": n, "n_queries": int(len(data.queries)),
            "bounds": {"lower": data.bounds.lower.tolist(), "upper": data.bounds.upper.tolist()},
            "classes": [str(c) for c in data.dataset.classes],
        }
        return Plan(specs=specs, roles={"sanitizer": (SANITIZER,), "miner": (MINER,)},
                    config=setup, queries=data.queries, query_labels=data.query_labels,
                    public=public)

    def baseline(self, config: ProtocolConfig, data: PreparedData) -> Baseline:
        """scikit-learn kNN, k = ``protocol.k``, the miner's ``1/d²`` weights, clean union."""
        assert isinstance(config, PCAPerturbationConfig)
        Z = normalise(data.train_X, data.bounds.lower, data.bounds.upper)
        # the miner's view of its rows: clipped to the public bounds
        Zq = np.clip(normalise(data.queries, data.bounds.lower, data.bounds.upper), 0, 1)
        return Baseline(f"kNN k={config.k}, 1/d² weights (union, non-private)",
                        baseline_knn(Z, data.train_y, Zq, config.k))

    def measure(self, config: ProtocolConfig, data: PreparedData, plan: Plan,
                result: Any, baseline: Baseline, transcript: Transcript | None) -> Measured:
        """The configuration's figures and the attacks over the miner's view."""
        assert isinstance(config, PCAPerturbationConfig)
        detail: PCAPerturbationResult = result.detail
        m = data.train_X.shape[1]
        metrics: dict[str, Any] = {
            "scheme": config.scheme, "components": released_columns(config, m),
            "b": config.b if config.scheme in LAPLACE_SCHEMES else None,
            "sd": config.sd if config.scheme in ("rand-u", "rand-n") else None,
            "method": config.method,
            "k": config.k,
            "amplification_bound": (safe_exp(1.0 / config.b) if config.scheme in
                                    LAPLACE_SCHEMES else None),
            "privacy_transform_attack": None, "privacy_correlation_attack": None,
            "correlation_attack_s2": None,
        }
        for method in ("radius", "best-k", "fixed-k"):
            pred = detail.miner.predictions.get(method)
            metrics[f"accuracy_{method.replace('-', '_')}"] = (
                None if pred is None else float(np.mean(np.asarray(pred) == data.query_labels)))
        metrics.update(distortion_mean=None, distortion_var=None,
                       distortion_mean_measured=None, distortion_var_measured=None)
        outcome: AttackOutcome | None = None
        if transcript is None:
            return Measured(metrics=metrics, leakage=outcome)
        view = transcript.view(MINER, protocol=PROTOCOL)
        release = release_message(view, detail.request.round)
        truth = normalise(data.train_X, data.bounds.lower, data.bounds.upper)
        if "stats" in release.payload:
            stats = np.asarray(release.payload["stats"], dtype=np.float64)
            metrics.update(distortion_mean=float(stats[0]), distortion_var=float(stats[1]))
        if config.scheme == "pca-laplace":
            # ground truth: |noisy x - q|^2 - |x - q|^2 over (training row, query) pairs,
            # to set beside the published E(D), Var(D) (eqs. 12-13)
            Zq = np.clip(normalise(data.queries, data.bounds.lower, data.bounds.upper), 0, 1)
            mean, var = measured_distortion(release, truth, Zq,
                                            rng=data.policy.generator("measure", "distortion"))
            metrics.update(distortion_mean_measured=mean, distortion_var_measured=var)
        if config.attacks:
            outcome = attack(release, truth)
            metrics["privacy_transform_attack"] = outcome.no_filter
            if outcome.best_s2:
                metrics["privacy_correlation_attack"] = outcome.filtered
                metrics["correlation_attack_s2"] = outcome.best_s2
            metrics["attack_definition"] = (
                "average privacy: mean over attributes of the width of the central 95% of "
                "(estimate - truth) on the normalised rows; transform attack = reverse the "
                "released transform, correlation attack = PCA filtering with the attacker's "
                "best s2 (oracle)")
        return Measured(metrics=metrics, leakage=outcome)

    def ground_truth(self, outcome: Any, data: PreparedData) -> dict[str, np.ndarray]:
        """``records`` (the sanitizer's rows in [0, 1] by the public bounds), ``instances``.

        ``instances`` are the miner's instances (the query rows, as it holds them).
        """
        from ppknn.protocols.pca_perturbation.sanitize import normalise

        return {"records": normalise(data.train_X, data.bounds.lower, data.bounds.upper),
                "instances": np.asarray(outcome.plan.queries, dtype=np.float64)}

    def worst_case(self, scenario: Scenario, protocol: Any, *, n_test: int,
                   confidence: float, deviation: str) -> Any:
        """One released score of the Laplace schemes moved across its column's range."""
        return audit_cases.worst_case(protocol, deviation)

    def worst_case_references(self, epsilon: float, deviation: str) -> list[Any]:
        """One column's Laplace score at b = 1/ε."""
        return [audit_cases.pca_laplace(1.0 / epsilon, deviation=deviation)]

    def compare_defaults(self) -> Mapping[str, Any]:
        """``ppknn compare --quick``: the privacy key, its two levels (most private first)."""
        return {"privacy_key": "b", "quick_levels": [0.5, 0.05], "settings": {"components": 2}}

    def deviations(self) -> Mapping[str, Any]:
        """Its deviating parties (:mod:`.deviations`)."""
        return deviating.KINDS

    def headline(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Amplification and the attacks' average privacy."""
        lines = []
        if summary.get("amplification") is not None:
            lines.append(("amplification e^(1/b) per column / over the domain",
                          f"{summary['amplification']:.4g} / "
                          f"{summary['domain_amplification']:.4g}"))
            lines.append((f"largest ρ2 from ρ1 = {summary['rho1']:g}",
                          f"{summary['rho2_bound']:.4f}"))
        if summary.get("radius2") is not None:
            lines.append(("radius² / mean points inside / empty-radius fallback",
                          f"{summary['radius2']:.4f} / {summary['mean_in_radius']:.1f} / "
                          f"{summary['fallback_fraction']:.3f}"))
        if summary.get("best_k") is not None:
            lines.append(("k chosen by cross-validation", str(summary["best_k"])))
        if summary.get("privacy_transform_attack") is not None:
            filtered = summary.get("privacy_correlation_attack")
            lines.append(("average privacy: transform / correlation attack",
                          f"{summary['privacy_transform_attack']:.3f} / "
                          + ("n/a" if filtered is None else
                             f"{filtered:.3f} (s2 = {summary['correlation_attack_s2']})")))
        return lines

    def plot(self, ax: Any, outcome: Any) -> bool:
        """Average privacy under the two attacks (higher: more private)."""
        attacked: AttackOutcome | None = outcome.leakage
        if attacked is None:
            return False
        names = ["transform attack"]
        values = [attacked.no_filter]
        if attacked.best_s2:
            names.append(f"correlation attack\n(s2 = {attacked.best_s2})")
            values.append(attacked.filtered)
        bars = ax.bar(np.arange(len(values)), values, color="tab:purple")
        ax.bar_label(bars, fmt="%.3f")
        finite = [v for v in values if np.isfinite(v)]
        ax.set_ylim(0, max(finite + [1e-9]) * 1.15)
        ax.set_xticks(np.arange(len(values)), names, fontsize=8)
        ax.set_ylabel("average privacy (95% interval width / range)")
        amp = outcome.result.metrics.get("amplification")
        ax.set_title(f"{outcome.config.scheme}: attacks on the miner's view"
                     + ("" if amp is None else f"\namplification {amp:.4g} per column"),
                     fontsize=10)
        return True


__all__ = ["NAME", "PCAPerturbation", "PCAPerturbationConfig", "baseline_knn",
           "check_against_data", "release_request", "released_columns"]
