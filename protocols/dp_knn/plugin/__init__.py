"""``dp-knn``: a central DP owner answers analysts' ε-DP r-N / k-NN queries (Gursoy et al.).

Scenario table::

    [protocol]
    name = "dp-knn"
    task = "rn"                  # or "knn", or "convert" (ε-DP k-NN radii, no labels)
    algorithm = "proposed"       # rn: proposed, baseline-laplace, baseline-exponential;
                                 # knn: interactive (default), noninteractive, baseline;
                                 # convert: interactive (default), noninteractive
    epsilon = 0.5                # ε of each request batch's classification
    budget = 4.0                 # the owner's total ε (default: what every request costs)
    analyst_budget = 1.0         # optional cap per analyst
    delta = 1e-6                 # the owner's budget δ (default 0: pure ε-DP)
    accountant = "auto"          # how the ledger composes requests: "basic" (ε add up),
                                 # "advanced", "pld" (privacy-loss distributions);
                                 # "auto": "pld" when delta > 0, else "basic"
    radius = 0.1                 # rn: the PUBLIC radius of every test instance, or
                                 # "auto": the owner picks one per request, ε-DP:
    radius_target = 10.0         #   the mean neighbour count aimed at (the paper: 5-20)
    radius_epsilon = 1.0         #   ε_r of the radius, charged on top of epsilon
    k = 5                        # knn / convert: neighbours
    batches = 1                  # requests per analyst
    request_time_limit_s = 600   # the owner refuses a request whose worst-case estimate
    request_memory_limit_bytes = 8589934592  # is over either ("none": no limit); a
                                 # scenario whose largest request would be refused
                                 # stops before it runs

Parties: one ``dp-owner`` holding the union of the training rows (whatever
``[parties].n`` is) with a privacy ledger, serving ``[parties].analysts``
analysts concurrently (``max_concurrency`` = analysts; on Ray a threaded
actor). The query rows (in the run's random order, stratified by class: every
block carries the class mix) are split among the analysts in contiguous blocks;
each analyst sends its block as ``batches`` requests of ε ``epsilon`` each.
A request the ledger cannot pay for is refused (a recorded ``"refused"``
message): its rows get no prediction (-1) and the run goes on. Privacy is
read from the owner's ledger: ε-DP under add/remove-one-record
neighbours, owner-wide and per analyst. Baseline: scikit-learn's
``RadiusNeighborsClassifier`` (same radius, empty regions → the first
class, as the protocol without noise) or ``KNeighborsClassifier`` (same k)
on the union, on one BLAS thread; with ``radius = "auto"`` its radius is the
non-private rule's (the ladder radius nearest ``radius_target`` neighbours on
the query rows), so the gap to it includes the price of a private radius.
``task = "convert"`` releases radii only: its rows stay unanswered (accuracy
0) and its measures are ``avre`` (average relative error of the radii against
the true k-th neighbour distance, %) and ``rmse_k`` (RMSE of the neighbour
counts within the released radii against the true ones).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from ppknn.core.dp.ledger import exact
from ppknn.core.errors import ConfigError, RequestTooLarge
from ppknn.core.runtime import PartySpec
from ppknn.core.transcript import Transcript
from ppknn.protocols.dp_knn.api import AnalystAPI, DPOwnerAPI
from ppknn.protocols.dp_knn.conversion import CONVERSIONS, avre, rmse_k
from ppknn.protocols.dp_knn.cost import (
    DEFAULT_REQUEST_MEMORY_LIMIT_BYTES,
    DEFAULT_REQUEST_TIME_LIMIT_S,
    check_request,
)
from ppknn.protocols.dp_knn.driver import DPKNNRun, DPKNNSetup, drive, request_blocks
from ppknn.protocols.dp_knn.knn import KNN_ALGORITHMS
from ppknn.protocols.dp_knn.parties import analyst_spec, dp_owner_spec
from ppknn.protocols.dp_knn.parties.analyst import Analyst
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner
from ppknn.protocols.dp_knn.plugin import attacks as attacks  # registers its attacks
from ppknn.protocols.dp_knn.plugin import audit as audit_cases
from ppknn.protocols.dp_knn.plugin import deviations as deviating
from ppknn.protocols.dp_knn.rn import DEFAULT_CLIQUE_WORK, RN_ALGORITHMS
from ppknn.simulations.knn import sklearn_knn
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
from ppknn.simulations.scenario import Scenario, epsilon_floor

NAME = "dp-knn"
OWNER = "dp-owner"
ALGORITHMS = {"rn": RN_ALGORITHMS, "knn": KNN_ALGORITHMS, "convert": CONVERSIONS}
DEFAULT_ALGORITHM = {"rn": "proposed", "knn": "interactive", "convert": "interactive"}
GUARANTEE = "ε-DP, add/remove one training record (central owner's ledger)"


def analyst_names(n: int) -> tuple[str, ...]:
    """``analyst-0``, ``analyst-1``, ..."""
    return tuple(f"analyst-{i}" for i in range(n))


MAX_GAMMA = 1e6
"""Largest lattice step ``gamma`` of the converted classifiers (in feature units)."""


class DPKNNConfig(ProtocolConfig):
    """``[protocol]`` of ``dp-knn``.

    ``radius`` (and with ``"auto"``, ``radius_target`` and ``radius_epsilon``) is
    used by ``task = "rn"``; ``k``, ``weight``, ``candidates``, ``gamma`` by
    ``task = "knn"`` and ``"convert"`` (the last three by the converted classifiers
    and the conversions only; ``weight`` by ``"knn"`` only); a task ignores the
    others, so one table can be swept over tasks.
    """

    name: Literal["dp-knn"] = "dp-knn"
    task: Literal["rn", "knn", "convert"] = "rn"
    algorithm: str | None = Field(None, validate_default=True)
    epsilon: float = Field(0.5, gt=0, allow_inf_nan=False, strict=True)
    budget: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    analyst_budget: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    delta: float = Field(0.0, ge=0, lt=1, allow_inf_nan=False, strict=True)
    accountant: Literal["auto", "basic", "advanced", "pld"] = "auto"
    """How the owner's ledger composes requests (:mod:`core.dp.accountant`); ``"advanced"``
    and ``"pld"`` need ``delta > 0``."""
    radius: float | Literal["auto"] = Field(0.1, union_mode="left_to_right")
    radius_target: float = Field(10.0, gt=0, allow_inf_nan=False, strict=True)
    radius_epsilon: float = Field(1.0, gt=0, allow_inf_nan=False, strict=True)
    k: int = Field(5, ge=1, strict=True)
    batches: int = Field(1, ge=1, strict=True)
    weight: float = Field(0.5, gt=0, lt=1, allow_inf_nan=False, strict=True)
    candidates: int = Field(10, ge=1, strict=True)
    gamma: float | None = Field(None, gt=0, le=MAX_GAMMA, allow_inf_nan=False, strict=True)
    clique_work_limit: int = Field(DEFAULT_CLIQUE_WORK, ge=1, strict=True)
    """Deterministic work budget of the clique search per batch (:mod:`protocols.dp_knn.cliques`):
    where it runs out the noise is scaled to a valid upper bound; the answers depend on the
    seed only."""
    clique_time_limit_s: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    """Optional wall-clock cap of the clique search per batch (absent: none); setting it makes
    the answers depend on the machine's speed and load."""
    request_time_limit_s: float | None = Field(DEFAULT_REQUEST_TIME_LIMIT_S, gt=0,
                                               allow_inf_nan=False, strict=True)
    """The owner refuses a request whose worst-case estimated time is over this many seconds
    (:mod:`protocols.dp_knn.cost`; public facts only); ``"none"``: no limit."""
    request_memory_limit_bytes: int | None = Field(DEFAULT_REQUEST_MEMORY_LIMIT_BYTES, ge=1,
                                                   strict=True)
    """The owner refuses a request whose worst-case estimated peak memory is over this many
    bytes; ``"none"``: no limit."""
    count_share: float = Field(0.05, gt=0, lt=1, allow_inf_nan=False, strict=True)

    _epsilon_floor = field_validator("epsilon", "radius_epsilon")(epsilon_floor)

    @field_validator("request_time_limit_s", "request_memory_limit_bytes", mode="before")
    @classmethod
    def _no_limit(cls, v: Any) -> Any:
        return None if v == "none" else v  # TOML has no null

    @field_validator("accountant")
    @classmethod
    def _accountant(cls, v: str, info: ValidationInfo) -> str:
        if v in ("advanced", "pld") and info.data.get("delta") == 0:
            raise ValueError(f"{v!r} needs the owner's budget delta > 0 (delta is 0); a pure "
                             "ε-DP budget composes tightly by \"basic\"; allowed: \"auto\" or "
                             "\"basic\", or set delta")
        return v

    @field_validator("radius", mode="before")
    @classmethod
    def _radius(cls, v: Any) -> Any:
        allowed = ("allowed: a finite number greater than 0 (the public radius) or \"auto\" "
                   "(the owner chooses it, ε-DP at radius_epsilon)")
        if isinstance(v, str):
            if v != "auto":
                raise ValueError(allowed)
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"not a number; {allowed}")
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"must be finite and greater than 0; {allowed}")
        return float(v)

    @property
    def auto_radius(self) -> bool:
        """Whether the owner chooses the r-N radius privately (``radius = "auto"``)."""
        return self.task == "rn" and self.radius == "auto"

    @property
    def request_cost(self) -> float:
        """ε the ledger charges per request: ``epsilon`` (+ ``radius_epsilon`` with "auto")."""
        return self.epsilon + self.radius_epsilon if self.auto_radius else self.epsilon

    @field_validator("algorithm")
    @classmethod
    def _algorithm(cls, v: Any, info: ValidationInfo) -> str:
        task = info.data.get("task")
        if task is None:  # the task itself was refused; its error says why
            return str(v)
        if v is None:
            return DEFAULT_ALGORITHM[task]
        if not isinstance(v, str) or v not in ALGORITHMS[task]:
            raise ValueError(f"not a {task!r} algorithm; allowed: {list(ALGORITHMS[task])}")
        return v


def _refuse(key: str, value: Any, why: str, source: str | None = None) -> ConfigError:
    head = f"invalid scenario {source}:\n  " if source else ""
    return ConfigError(f"{head}protocol.{key} = {value!r}: {why}")


def total_cost(config: DPKNNConfig, analysts: int) -> Fraction:
    """ε of every request of the scenario, exactly (as the ledger adds it)."""
    return analysts * config.batches * exact(config.request_cost)


def owner_budget(config: DPKNNConfig, analysts: int) -> float:
    """``budget``, or by default the float that pays every request exactly."""
    if config.budget is not None:
        return config.budget
    need = total_cost(config, analysts)
    b = float(need)
    return b if exact(b) >= need else math.nextafter(b, math.inf)


def baseline_rn(X: np.ndarray, y: np.ndarray, queries: np.ndarray, *, radius: float,
                outlier: int) -> np.ndarray:
    """scikit-learn's non-private r-N classifier (empty region: ``outlier``), one BLAS thread."""
    from sklearn.neighbors import RadiusNeighborsClassifier
    from threadpoolctl import threadpool_limits

    rnc = RadiusNeighborsClassifier(radius=radius, algorithm="brute", outlier_label=outlier)
    rnc.fit(X, y)
    with threadpool_limits(limits=1):
        return np.asarray(rnc.predict(queries))


def nonprivate_radius(config: DPKNNConfig, data: PreparedData) -> float:
    """The public radius, or for ``"auto"`` the non-private rule's on all query rows."""
    if not config.auto_radius:
        return float(config.radius)
    from ppknn.protocols.dp_knn.index import LabelIndex
    from ppknn.protocols.dp_knn.radius import choose_radius

    index = LabelIndex(data.train_X, data.train_y, n_classes=data.n_classes)
    x = np.clip(data.queries, data.bounds.lower, data.bounds.upper)
    return choose_radius(index, x, target=config.radius_target, epsilon=math.inf,
                         bounds=data.bounds, rng=None)


def conversion_errors(X: np.ndarray, queries: np.ndarray, k: int, radii: np.ndarray
                      ) -> tuple[float, float]:
    """AvRE (%) and RMSE in k of released radii against the true k-th neighbour distances."""
    from scipy.spatial import cKDTree

    tree = cKDTree(X)
    dist = np.asarray(tree.query(queries, k=k)[0]).reshape(len(queries), -1)[:, -1]
    true_counts = tree.query_ball_point(queries, dist, return_length=True)
    counts = tree.query_ball_point(queries, radii, return_length=True)
    return avre(dist, radii), rmse_k(true_counts, counts)


def region_counts(X: np.ndarray, queries: np.ndarray, radius: Any) -> np.ndarray:
    """Training rows within ``radius`` (one or one per query) of each query (for the measures)."""
    from scipy.spatial import cKDTree

    return np.asarray(cKDTree(X).query_ball_point(queries, radius, return_length=True))


def check_batches(config: DPKNNConfig, blocks: list[Any], *, n_features: int,
                  analysts: int) -> None:
    """Refuse (``ConfigError``) a run whose largest request the owner would refuse as too big.

    The owner's own estimate (:func:`~protocols.dp_knn.cost.check_request`,
    one source of truth), on the largest request of ``blocks``.
    """
    size = max(b.stop - b.start for b in blocks)
    try:
        check_request(size, n_features, task=config.task, algorithm=str(config.algorithm),
                      clique_work_limit=config.clique_work_limit,
                      time_limit_s=config.request_time_limit_s,
                      memory_limit_bytes=config.request_memory_limit_bytes,
                      what="the largest request")
    except RequestTooLarge as exc:
        per_analyst = max(b.stop - b.start for b in blocks) * config.batches
        key = ("request_time_limit_s" if "request_time_limit_s =" in str(exc)
               else "request_memory_limit_bytes")
        raise _refuse(key, getattr(config, key), f"the DP owner would refuse every request "
                      f"this large: {exc} (protocol.batches = {config.batches} with "
                      f"{analysts} analyst(s): about {per_analyst:,} queries per analyst; "
                      "raise protocol.batches or parties.analysts, or lower "
                      "data.max_queries)") from None


@register
class DPKNN(ProtocolPlugin):
    """DP r-N and k-NN classification by a central owner (Gursoy, Inan, Nergiz & Saygin).

    Analysts ask a central DP owner for ε-DP r-N / k-NN labels, under its ledger.
    """

    name = NAME
    config_model = DPKNNConfig
    roles = (
        Role("owner", DPOwner, "1",
             "holds the union of the training rows and the privacy ledger; serves the "
             "analysts concurrently", api=DPOwnerAPI),
        Role("analyst", Analyst, "[parties].analysts",
             "holds a contiguous block of the query rows; sends it as request batches",
             api=AnalystAPI),
    )
    guarantee = GUARANTEE
    adversaries = ("analyst-label-inference", "owner-sees-queries")
    driver = staticmethod(drive)

    def check_scenario(self, config: ProtocolConfig, scenario: Scenario, *, source: str
                       ) -> None:
        """Budgets below one request's cost (no request could ever be answered)."""
        assert isinstance(config, DPKNNConfig)
        for key in ("budget", "analyst_budget"):
            cap = getattr(config, key)
            if cap is not None and exact(cap) < exact(config.request_cost):
                who = "the owner's" if key == "budget" else "each analyst's"
                what = (f"protocol.epsilon + protocol.radius_epsilon = {config.request_cost!r}"
                        if config.auto_radius else f"protocol.epsilon = {config.epsilon!r}")
                raise _refuse(key, cap, f"{who} cap is below the cost of one request "
                              f"({what}), so every request would be refused; allowed: "
                              f">= {config.request_cost!r}", source)

    def plan(self, config: ProtocolConfig, data: PreparedData) -> Plan:
        """The DP owner (union of the training rows) and the analysts (query blocks)."""
        assert isinstance(config, DPKNNConfig)
        s = data.scenario
        n_analysts, n_queries, n_train = s.parties.analysts, len(data.queries), len(data.train_y)
        if n_analysts > n_queries:
            raise ConfigError(f"parties.analysts = {n_analysts}: more analysts than the "
                              f"{n_queries} query rows; allowed: <= {n_queries}")
        try:
            blocks = request_blocks(n_queries, n_analysts, config.batches)
        except ConfigError as exc:
            raise _refuse("batches", config.batches, f"{exc}; allowed: <= "
                          f"{n_queries // n_analysts}") from None
        check_batches(config, blocks, n_features=data.queries.shape[1], analysts=n_analysts)
        if config.task != "rn" and config.k > n_train:
            raise _refuse("k", config.k, f"larger than the {n_train} training rows the DP "
                          f"owner holds; allowed: <= {n_train}")
        analysts = analyst_names(n_analysts)
        budget = owner_budget(config, n_analysts)
        owner = dp_owner_spec(
            party_id=OWNER, X=data.train_X, y=data.train_y, classes=list(range(data.n_classes)),
            lower=data.bounds.lower, upper=data.bounds.upper, epsilon=budget,
            delta=config.delta, analyst_epsilon=config.analyst_budget, run_id=data.run_id,
            index=0, seed=s.run.seed, mode=s.run.mode,
            clique_work_limit=config.clique_work_limit,
            clique_time_limit_s=config.clique_time_limit_s, count_share=config.count_share,
            accountant=config.accountant, request_time_limit_s=config.request_time_limit_s,
            request_memory_limit_bytes=config.request_memory_limit_bytes)
        # one call per analyst at a time: serving all of them concurrently needs no more
        owner = PartySpec(owner.party_id, owner.factory, owner.kwargs,
                          max_concurrency=n_analysts)
        specs = (owner, *(analyst_spec(party_id=a, owner=OWNER, run_id=data.run_id, index=i + 1)
                          for i, a in enumerate(analysts)))
        public_radius = (float(config.radius) if config.task == "rn" and not config.auto_radius
                         else None)
        setup = DPKNNSetup(task=config.task, algorithm=str(config.algorithm),
                           epsilon=config.epsilon, batches=config.batches, radius=public_radius,
                           k=config.k if config.task != "rn" else None, weight=config.weight,
                           candidates=config.candidates, gamma=config.gamma,
                           radius_target=config.radius_target if config.auto_radius else None,
                           radius_epsilon=config.radius_epsilon if config.auto_radius else None,
                           lower=tuple(float(v) for v in data.bounds.lower),
                           upper=tuple(float(v) for v in data.bounds.upper))
        public = {
            "run_id": data.run_id, "owner": OWNER, "analysts": list(analysts),
            "task": config.task, "algorithm": config.algorithm,
            "epsilon_per_request": config.request_cost, "epsilon_budget": budget,
            "analyst_budget": config.analyst_budget,
            "radius": setup.radius if not config.auto_radius else "auto",
            "radius_target": setup.radius_target, "radius_epsilon": setup.radius_epsilon,
            "k": setup.k, "batches": config.batches,
            "requests": [[analysts[b.analyst], b.batch, b.start, b.stop] for b in blocks],
            "n_queries": n_queries, "training_rows": n_train,
            "bounds": {"lower": data.bounds.lower.tolist(), "upper": data.bounds.upper.tolist()},
            "classes": [str(c) for c in data.dataset.classes],
        }
        return Plan(specs=specs, roles={"owner": (OWNER,), "analyst": analysts}, config=setup,
                    queries=data.queries, query_labels=data.query_labels, public=public)

    def baseline(self, config: ProtocolConfig, data: PreparedData) -> Baseline:
        """scikit-learn's non-private counterpart on the union (one BLAS thread)."""
        assert isinstance(config, DPKNNConfig)
        if config.task == "rn":
            radius = nonprivate_radius(config, data)
            how = "the non-private rule's " if config.auto_radius else ""
            return Baseline(f"r-N {how}radius {radius:.4g}, empty → class 0 (non-private)",
                            baseline_rn(data.train_X, data.train_y, data.queries,
                                        radius=radius, outlier=0))
        return Baseline(f"kNN k={config.k} (union, non-private)",
                        sklearn_knn(data.train_X, data.train_y, data.queries, k=config.k))

    def measure(self, config: ProtocolConfig, data: PreparedData, plan: Plan,
                result: Any, baseline: Baseline, transcript: Transcript | None) -> Measured:
        """The ledger's figures, refusals, noise sensitivities and per-analyst accuracy."""
        assert isinstance(config, DPKNNConfig)
        detail: DPKNNRun = result.detail
        pred, labels = result.predictions, data.query_labels
        answered = result.answered
        sens = np.asarray(result.per_query["sensitivity"], dtype=np.float64)
        methods = np.asarray(result.per_query["clique_method"], dtype=object)
        upper = np.array([str(m).startswith("bound:") for m in methods])
        metrics: dict[str, Any] = {
            "task": config.task, "algorithm": config.algorithm,
            "epsilon_per_request": config.request_cost, "batches": config.batches,
            "radius": config.radius if config.task == "rn" else None,
            "radius_epsilon": config.radius_epsilon if config.auto_radius else None,
            "baseline_radius": None,
            "k": config.k if config.task != "rn" else None,
            "analyst_budget": config.analyst_budget, "delta_budget": config.delta,
            "answered_fraction": float(np.mean(answered)),
            "accuracy_answered": (float(np.mean(pred[answered] == labels[answered]))
                                  if answered.any() else None),
            "mean_sensitivity": (float(np.nanmean(sens[answered])) if answered.any()
                                 else None),
            "clique_upper_bounds": int(upper.sum()),
            "empty_regions": None, "avre": None, "rmse_k": None,
        }
        radii = np.asarray(result.per_query["radius"], dtype=np.float64)
        got = ~np.asarray(result.per_query["refused"], dtype=bool)
        if config.task == "rn":
            if config.auto_radius:  # the radii the owner released (one per request)
                metrics["radius"] = float(np.mean(radii[got])) if got.any() else None
                metrics["baseline_radius"] = nonprivate_radius(config, data)
            used = np.where(got, radii, metrics["baseline_radius"] or config.radius)
            metrics["empty_regions"] = int(np.sum(region_counts(data.train_X, data.queries,
                                                                used) == 0))
        if config.task == "convert" and got.any():
            x = np.clip(data.queries, data.bounds.lower, data.bounds.upper)[got]
            metrics["avre"], metrics["rmse_k"] = conversion_errors(
                data.train_X, x, config.k, radii[got])
        per_party: dict[str, dict[str, Any]] = {}
        analysts = plan.roles["analyst"]
        for i, a in enumerate(analysts):
            rows = np.flatnonzero(np.asarray(result.per_query["analyst"]) == i)
            per_party[a] = {"queries": int(len(rows)),
                            "accuracy": float(np.mean(pred[rows] == labels[rows]))}
        per_party[OWNER] = {"epsilon_budget": detail.ledger.budget.epsilon,
                            "ledger_entries": len(detail.ledger.entries)}
        return Measured(metrics=metrics, per_party=per_party)

    def ground_truth(self, outcome: Any, data: PreparedData) -> dict[str, np.ndarray]:
        """``queries`` and ``nonprivate`` (the labels the union gives them without noise).

        Also ``train_class_counts``, the union's class counts.
        """
        return {"queries": np.asarray(outcome.plan.queries, dtype=np.float64),
                "nonprivate": np.asarray(outcome.baseline.predictions, dtype=np.int64),
                "train_class_counts": np.bincount(np.asarray(data.train_y, dtype=np.int64),
                                                  minlength=int(data.n_classes))}

    def audit_setup(self, prepared: Any, protocol: Any, common: Mapping[str, Any], *,
                    record: int, repeats: int) -> Any:
        """One analyst asks about one worst-case instance ``repeats`` times (its audit module)."""
        return audit_cases.replay_setup(dict(common), protocol, record, repeats)

    def worst_case(self, scenario: Scenario, protocol: Any, *, n_test: int,
                   confidence: float, deviation: str) -> Any:
        """The r-N release on a searched region, or the k-NN baseline's (its audit module)."""
        return audit_cases.worst_case(scenario, protocol, n_test=n_test, confidence=confidence,
                                      deviation=deviation)

    def worst_case_references(self, epsilon: float, deviation: str) -> list[Any]:
        """The r-N and k-NN cases on hand-built pairs."""
        return audit_cases.references(epsilon, deviation)

    def compare_defaults(self) -> Mapping[str, Any]:
        """``ppknn compare --quick``: the privacy key, its two levels (most private first)."""
        return {"privacy_key": "epsilon", "quick_levels": [0.5, 10.0],
                "settings": {"task": "knn", "k": 5}}

    def deviations(self) -> Mapping[str, Any]:
        """Its deviating parties (:mod:`.deviations`)."""
        return deviating.KINDS

    def headline(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        """ε spent against the budget; requests answered and refused."""
        lines = [(f"{summary['task']}:{summary['algorithm']} ε per request",
                  f"{summary['epsilon_per_request']:g}"),
                 ("ε spent / owner's budget (ledger)",
                  f"{summary['epsilon_spent']:g} / {summary['epsilon_budget']:g}"),
                 ("requests answered / refused",
                  f"{summary['answered_requests']} / {summary['refused_requests']}")]
        if summary.get("mean_sensitivity") is not None:
            lines.append(("mean count sensitivity (noise scale × ε)",
                          f"{summary['mean_sensitivity']:.2f}"))
        return lines

    def plot(self, ax: Any, outcome: Any) -> bool:
        """ε spent per analyst (ledger), refused requests marked, the owner's total."""
        r = outcome.result
        analysts = list(outcome.plan.roles["analyst"])
        spent = [r.privacy.per_party[a][0] for a in analysts]
        refused = [r.per_party[a]["refused_requests"] for a in analysts]
        x = np.arange(len(analysts))
        bars = ax.bar(x, spent, color=["tab:red" if n else "tab:blue" for n in refused])
        if len(analysts) <= 40:
            ax.bar_label(bars, labels=[str(n) if n else "" for n in refused], fontsize=8)
            ax.set_xticks(x, analysts, rotation=60, fontsize=7)
        cap = outcome.config.analyst_budget
        if cap is not None:
            ax.axhline(cap, color="tab:gray", ls="--", label=f"analyst cap ε {cap:g}")
            ax.legend(fontsize=8)
        ax.set_ylabel("ε spent (owner's ledger)")
        ax.set_title(f"{r.metrics['epsilon_spent']:g} of ε {r.metrics['epsilon_budget']:g} "
                     f"spent; {r.metrics['refused_requests']} of {r.metrics['requests']} "
                     "requests refused\n(red: the analyst's count of refused requests)",
                     fontsize=10)
        ax.set_ylim(0, 1.15 * max([*spent, cap or 0.0, 1e-9]))
        return True


__all__ = ["NAME", "OWNER", "DPKNN", "DPKNNConfig", "analyst_names", "baseline_rn", "check_batches",
           "conversion_errors", "nonprivate_radius", "owner_budget", "total_cost"]
