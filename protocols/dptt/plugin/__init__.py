"""``dptt``: private nearest-neighbour queries by DP kd-tree traversal (Lepert, DP-TT).

Scenario table::

    [protocol]
    name = "dptt"
    variant = "E8"             # basic, P<s>, E<s>, GS, N<B>, GS-N<B> (thesis §5.4)
    utility = "cmp"            # or "dis" (needs radius, the DIS sensitivity bound)
    final_epsilon = 10.0       # target ε per query; or epsilon = ... (ε per decision)
    delta = 1e-7               # δ of the bounded-range composition bound
    predict = "nearest"        # label of the nearest released point; or "majority"
    # client_budget = 20.0     # the client's per-user ledger cap (ε)
    # geo_radius = 1e5         # also measure the GEO baseline at this privacy radius
    # geo_epsilon = 1.0        # GEO's ε* (default: the variant's final ε, the thesis's rule)
    # calibration = "proven"   # exp(εu/2Δ); "thesis-reading": exp(εu/Δ) (reproduction only)

Parties: one ``client`` holding the query rows privately (each query slot
is one user) and one ``server`` holding the union of the training rows
(points and labels) in the modified kd-tree, whatever ``[parties].n`` and
``[parties].analysts`` are. Level by level the client answers one
exponential-mechanism bit per pending decision; the server releases the
points the walk reached, with their labels (a deviation from the thesis,
which releases points only, for classification).

Predictions: ``predict = "nearest"`` (default) labels a query with the
label of the released point nearest to it (the client's local 1-NN over
its release; for basic and E/N/GS variants alike); ``"majority"`` with the
most frequent label among the query's released points. Baseline:
scikit-learn's brute-force kNN on the union -- k = 1 for ``"nearest"``,
k = the variant's nominal release size (:func:`nominal_release`) for
``"majority"``.

Privacy: ``epsilon`` is the ε of each decision; ``final_epsilon`` asks for
the per-query ε instead, and the plan solves for the per-decision ε whose
bounded-range composition over the variant's worst-case number of
decisions equals it (the tree's height ``ceil(log2 N)`` is public and
fixed by the N training rows). The run reports the final ε it charges by
bounded-range composition (with δ, when it beats summation) and by
summation. CMP's guarantee holds for any two queries; DIS's only for
queries within ``radius`` of each other (two queries d apart get
ε·d/radius per decision). A CMP decision of Algorithm 12 is randomised
response with log-odds ε/2, i.e. ε/2-DP: it is charged ε, as the thesis
states, up to twice what it spends (safe); ``spent_final_epsilon`` is the
smaller final ε the mechanism really spends (bounded range over its
decisions' bounded-range ε, or the sum of their pure ε), equal to the
charge except for CMP under ``calibration = "proven"``.

GEO baseline (``geo_radius``): the thesis's geo-indistinguishability
baseline (perturb the query, answer the noisy point in the clear,
:mod:`protocols.dptt.geo`) is measured beside the run on the same split:
privacy level ε* = ``geo_epsilon`` (default: the variant's final ε by
bounded range, the thesis's rule) within ``geo_radius``, released as fairly
as the thesis prescribes against this run's release (repeated for P and
GS, neighbours of the answer for E and N). It is a simulated baseline with
no message form (the server would see the noisy point in the clear), drawn
from its own stream of ``[run].seed``; its metrics are the ``geo_*``
columns. 1-D and 2-D data only (Laplace, planar Laplace).

Calibration: ``calibration = "thesis-reading"`` runs the mechanism as
``exp(ε u / Δ)`` instead of Algorithm 12's ``exp(ε u / (2Δ))`` -- the
reading under which the thesis's reported accuracies follow (see the
Lepert reproduction). The run then charges what it really spends
(``final_epsilon_br`` = ``spent_final_epsilon``) and reports what the
thesis would state (``stated_final_epsilon_br``).

Set-up work that cannot change a result (the server's tree, the exact
neighbour index of the measurement, the non-private baseline) is cached by
the value of the training rows and queries inside a process, so a grid of
runs over one dataset builds them once.
"""

from __future__ import annotations

import hashlib
import math
import weakref
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from ppknn.core.errors import ConfigError
from ppknn.core.protocol import ProtocolResult
from ppknn.core.transcript import Transcript
from ppknn.protocols.dptt.api import ClientAPI, ServerAPI
from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.driver import GUARANTEE, DPTTResult, DPTTRun, drive
from ppknn.protocols.dptt.geo import Geo, geo_fairness
from ppknn.protocols.dptt.metrics import Truth, hits
from ppknn.protocols.dptt.neighbours import NeighbourIndex, counts_per_slot
from ppknn.protocols.dptt.parties import dptt_specs
from ppknn.protocols.dptt.parties.dptt_client import DPTTClient
from ppknn.protocols.dptt.parties.dptt_server import DPTTServer
from ppknn.protocols.dptt.plugin import attacks as attacks  # registers its attacks
from ppknn.protocols.dptt.plugin import audit as audit_cases
from ppknn.protocols.dptt.plugin import deviations as deviating
from ppknn.protocols.dptt.tree import tree_height
from ppknn.protocols.dptt.utility import Utility
from ppknn.protocols.dptt.variants import DEFAULT_DELTA, Variant
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

NAME = "dptt"
CLIENT, SERVER = "client", "server"

_CACHE: dict[tuple, Any] = {}
_CACHE_SIZE = 8


def _cached(kind: tuple, arrays: tuple[np.ndarray, ...], compute: Any) -> Any:
    """``compute()`` memoised by the *value* of ``arrays`` (a few entries, this process only).

    Only for results that are a pure function of the arrays (an exact
    neighbour index, a deterministic baseline): a grid of runs over one
    dataset computes them once.
    """
    digest = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        digest.update(f"{a.dtype.str}{a.shape}".encode())
        digest.update(a.data)
    key = (*kind, digest.hexdigest())
    if key not in _CACHE:
        while len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = compute()
    return _CACHE[key]


def _truth(data: PreparedData) -> tuple[NeighbourIndex, Truth]:
    index = NeighbourIndex(data.train_X)
    return index, Truth.of(index, data.queries)


class DPTTConfig(ProtocolConfig):
    """``[protocol]`` of ``dptt`` (module docstring).

    Give exactly one of ``epsilon`` (per decision) and ``final_epsilon``
    (per query). ``radius`` is used by ``utility = "dis"`` only (``"cmp"``
    ignores it, so one table can be swept over utilities).
    """

    name: Literal["dptt"] = "dptt"
    variant: str = "E8"
    utility: Literal["cmp", "dis"] = "cmp"
    radius: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    epsilon: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    final_epsilon: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    delta: float = Field(DEFAULT_DELTA, ge=0, lt=1, allow_inf_nan=False, strict=True)
    client_budget: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    predict: Literal["nearest", "majority"] = "nearest"
    geo_radius: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    geo_epsilon: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    calibration: Literal["proven", "thesis-reading"] = "proven"

    _epsilon_floor = field_validator("epsilon", "final_epsilon", "geo_epsilon")(epsilon_floor)

    @field_validator("variant")
    @classmethod
    def _variant(cls, v: str) -> str:
        try:
            return Variant.parse(v).label
        except ConfigError as exc:
            raise ValueError(str(exc)) from None


_GEO_DRAWS: dict[int, tuple[Geo, tuple[np.ndarray, np.ndarray]]] = {}
"""The GEO baseline's draws of each live result (by ``id``; dropped with the result)."""


def geo_draws(config: DPTTConfig, detail: DPTTResult, data: PreparedData
              ) -> tuple[Geo, tuple[np.ndarray, np.ndarray]]:
    """The GEO baseline's mechanism and its draws for one run: ``(slots, noisy queries)``.

    Drawn once per result, so the measurement and the ground truth the attacks are
    scored against see the same points: in ``secure`` mode the draws come from the
    CSPRNG (nothing can replay them), in ``reproducible`` mode from the stream
    ``("geo", "dptt")`` of ``[run].seed``. Each query slot ``q`` is perturbed
    ``repeats[q]`` times, in slot order.
    """
    key = id(detail)
    if key not in _GEO_DRAWS:
        given = config.geo_epsilon
        mech = Geo(epsilon=given if given is not None else detail.account.epsilon_br,
                   radius=float(config.geo_radius or 0), mode=data.policy.mode)
        repeats, _ = geo_fairness(detail.setup.variant, detail.outcome.found)
        queries = np.asarray(data.queries, dtype=np.float64)
        slots = np.repeat(np.arange(len(queries), dtype=np.int64),
                          np.broadcast_to(np.asarray(repeats, dtype=np.int64), len(queries)))
        points = mech.perturb(queries[slots], data.policy.generator("geo", NAME))
        _GEO_DRAWS[key] = (mech, (slots, points))
        weakref.finalize(detail, _GEO_DRAWS.pop, key, None)
    return _GEO_DRAWS[key]


def _refuse(key: str, value: Any, why: str, source: str | None = None) -> ConfigError:
    head = f"invalid scenario {source}:\n  " if source else ""
    return ConfigError(f"{head}protocol.{key} = {value!r}: {why}")


def check_keys(config: DPTTConfig, source: str | None = None) -> None:
    """Cross-checks between keys (those needing the data wait for the plan)."""
    if config.epsilon is not None and config.final_epsilon is not None:
        raise _refuse("final_epsilon", config.final_epsilon,
                      f"give exactly one of protocol.epsilon (ε per decision, here "
                      f"{config.epsilon!r}) and protocol.final_epsilon (ε per query)", source)
    if config.epsilon is None and config.final_epsilon is None:
        raise _refuse("epsilon", None, "give exactly one of protocol.epsilon (ε per decision) "
                      "and protocol.final_epsilon (ε per query, solved over the tree height)",
                      source)
    if config.geo_epsilon is not None and config.geo_radius is None:
        raise _refuse("geo_epsilon", config.geo_epsilon, "the GEO baseline runs only with "
                      "protocol.geo_radius > 0 (its privacy radius); give it too", source)
    if config.utility == "dis" and config.radius is None:
        raise _refuse("radius", None, "utility = \"dis\" needs the DIS sensitivity bound "
                      "radius > 0 (how far apart two queries may be for each decision's ε "
                      "to hold)", source)


def utility_of(config: DPTTConfig) -> Utility:
    """The configured utility."""
    return Utility.cmp() if config.utility == "cmp" else Utility.dis(float(config.radius or 0))


def nominal_release(variant: Variant, height: int, n_points: int) -> int:
    """Points a query of ``variant`` nominally gets (the ``"majority"`` baseline's k).

    basic 1; N(B) B; E(s) the size of a subtree s levels above the bottom
    (about ``N / 2^(H-s)``); P(s) ``2^s``; GS ``H + 1``; GS-N(B) ``(H + 1) B``;
    capped at N. (P, GS and GS-N may release fewer when threads meet.)

    >>> [nominal_release(Variant.parse(v), 14, 13333) for v in ("E8", "GS", "GS-N20", "N20")]
    [208, 15, 300, 20]
    """
    h = variant.check_height(height)
    if variant.kind == "E":
        k = int(round(n_points / 2 ** (h - variant.s)))
    elif variant.kind == "P":
        k = 2**variant.s
    elif variant.greedy:
        k = (h + 1) * variant.b
    else:
        k = variant.b
    return max(1, min(k, n_points))


def setup_for(config: DPTTConfig, n_points: int) -> tuple[DPTTSetup, int]:
    """The public set-up for a server holding ``n_points`` rows, and the tree's height.

    Raises a ``ConfigError`` naming the key when the variant does not fit
    the tree, the final ε cannot be solved for, or the client's budget is
    below one batch's cost.
    """
    check_keys(config)
    height = tree_height(n_points)
    variant = Variant.parse(config.variant)
    try:
        variant.check_height(height)
    except ConfigError as exc:
        raise _refuse("variant", config.variant,
                      f"{exc}: the server's tree over {n_points} training rows has height "
                      f"{height} = ceil(log2 {n_points})") from None
    epsilon = config.epsilon
    if epsilon is None:
        assert config.final_epsilon is not None
        try:
            epsilon = variant.epsilon_for(height, config.final_epsilon, delta=config.delta)
        except ConfigError as exc:
            raise _refuse("final_epsilon", config.final_epsilon, str(exc)) from None
    setup = DPTTSetup(variant=variant, utility=utility_of(config), epsilon=epsilon,
                      delta=config.delta, calibration=config.calibration)
    cost = setup.account(height).cost
    if config.client_budget is not None and config.client_budget < cost.epsilon:
        raise _refuse("client_budget", config.client_budget,
                      f"below the cost of one query batch: every user of the batch pays the "
                      f"variant's final ε = {cost.epsilon:.6g} (δ = {cost.delta:g}) for "
                      f"{variant.label} over a tree of height {height}; allow at least that")
    return setup, height


GEO_METRICS = ("geo_epsilon", "geo_radius", "geo_per_unit", "geo_nn_accuracy",
               "geo_top5_accuracy", "geo_released_mean")
"""The GEO baseline's metrics (NaN when no ``geo_radius`` asks for it)."""


@register
class DPTT(ProtocolPlugin):
    """DP-TT: private nearest neighbours by DP kd-tree traversal (Lepert).

    A client walks the server's kd-tree with one exponential-mechanism bit per level.
    """

    name = NAME
    config_model = DPTTConfig
    roles = (
        Role("client", DPTTClient, "1",
             "holds the query rows privately (one user per query slot); answers bits",
             api=ClientAPI),
        Role("server", DPTTServer, "1",
             "holds the union of the training rows in the modified kd-tree; releases points",
             api=ServerAPI),
    )
    guarantee = GUARANTEE
    adversaries = ("client-sees-training-points",
                   "geo-server-location-inference",
                   "server-location-inference",
                   "server-side-inference")
    driver = staticmethod(drive)

    def check_scenario(self, config: ProtocolConfig, scenario: Scenario, *, source: str
                       ) -> None:
        """Exactly one ε; DIS needs its radius."""
        assert isinstance(config, DPTTConfig)
        check_keys(config, source)

    def plan(self, config: ProtocolConfig, data: PreparedData) -> Plan:
        """The client (the query rows) and the server (the union of the training rows)."""
        assert isinstance(config, DPTTConfig)
        n = len(data.train_y)
        dims = int(data.train_X.shape[1])
        if config.geo_radius is not None and dims not in (1, 2):
            raise _refuse("geo_radius", config.geo_radius, f"the GEO baseline perturbs 1-D "
                          f"(Laplace) or 2-D (planar Laplace) queries; the data has {dims} "
                          "features")
        setup, height = setup_for(config, n)
        account = setup.account(height)
        s = data.scenario
        budget = config.client_budget
        specs = dptt_specs(run_id=data.run_id, points=data.train_X, labels=data.train_y,
                           seed=s.run.seed, mode=s.run.mode, budget=budget,
                           budget_delta=config.delta if budget is not None else 0.0,
                           client=CLIENT, server=SERVER)
        run = DPTTRun(setup=setup, n_classes=data.n_classes, predict=config.predict,
                      height=height)
        public = {
            "run_id": data.run_id, "variant": setup.variant.label,
            "utility": setup.utility.name, "training_rows": n,
            "features": int(data.train_X.shape[1]), "tree_height": height,
            "rounds": setup.rounds(height), "compositions": account.compositions,
            "per_decision_epsilon": setup.epsilon, "final_epsilon_br": account.epsilon_br,
            "final_epsilon_sum": account.epsilon_sum, "br_delta": setup.delta,
            "calibration": setup.calibration,
            "stated_final_epsilon_br": setup.stated_account(height).epsilon_br,
            "n_queries": int(len(data.queries)),
            "classes": [str(c) for c in data.dataset.classes],
        }
        return Plan(specs=tuple(specs), roles={"client": (CLIENT,), "server": (SERVER,)},
                    config=run, queries=data.queries, query_labels=data.query_labels,
                    public=public)

    def baseline(self, config: ProtocolConfig, data: PreparedData) -> Baseline:
        """scikit-learn's brute-force kNN on the union: k = 1, or the nominal release size."""
        assert isinstance(config, DPTTConfig)
        k = 1
        if config.predict == "majority":
            n = len(data.train_y)
            k = nominal_release(Variant.parse(config.variant), tree_height(n), n)
        return Baseline(f"{k}-NN (union, non-private)",
                        _cached(("knn", k), (data.train_X, data.train_y, data.queries),
                                lambda: sklearn_knn(data.train_X, data.train_y, data.queries,
                                                    k=k)))

    def measure(self, config: ProtocolConfig, data: PreparedData, plan: Plan,
                result: ProtocolResult, baseline: Baseline, transcript: Transcript | None
                ) -> Measured:
        """NN and top-5 accuracy of the release against the server's exact neighbours."""
        detail: DPTTResult = result.detail
        o = detail.outcome
        index, truth = _cached(("truth",), (data.train_X, data.queries), lambda: _truth(data))
        nn, top5 = hits(index.points, data.queries, truth, o.slots, o.ids)
        metrics: dict[str, Any] = {
            "nn_accuracy": float(nn.mean()), "top5_accuracy": float(top5.mean()),
            "stated_final_epsilon_br": detail.setup.stated_account(
                detail.info.height).epsilon_br,
            "spent_final_epsilon": detail.setup.spent_account(detail.info.height).epsilon_br,
            "calibration": detail.setup.calibration,
            "accuracy_definition": "nn: the true nearest training point (by distance, ties "
            "count) is among the query's released points; top5: one of the five nearest is"}
        per_query = {"nn_hit": nn.astype(int), "top5_hit": top5.astype(int)}
        if config.geo_radius is not None:
            mech, (_, points) = geo_draws(config, detail, data)
            repeats, nbh = geo_fairness(detail.setup.variant, o.found)
            slots, ids = mech.release(index, data.queries, None, repeats=repeats,
                                      neighbourhood=nbh, perturbed=points)
            g_nn, g_top5 = hits(index.points, data.queries, truth, slots, ids)
            metrics.update(geo_epsilon=mech.epsilon, geo_radius=mech.radius,
                           geo_per_unit=mech.per_unit, geo_nn_accuracy=float(g_nn.mean()),
                           geo_top5_accuracy=float(g_top5.mean()),
                           geo_released_mean=float(counts_per_slot(
                               slots, len(data.queries)).mean()))
            per_query.update(geo_nn_hit=g_nn.astype(int), geo_top5_hit=g_top5.astype(int))
        else:  # no GEO baseline asked for: its columns exist (every sweep row has them), NaN
            metrics.update(dict.fromkeys(GEO_METRICS, math.nan))
        return Measured(metrics=metrics, per_query=per_query)

    def ground_truth(self, outcome: Any, data: PreparedData) -> dict[str, np.ndarray]:
        """``queries``: the client's private queries; with GEO, the GEO server's view.

        GEO runs beside the protocol (in :meth:`measure`, not through the
        runtime), so its noisy points are in no transcript: ``geo/slot`` and
        ``geo/point`` are the perturbed copies of the queries the GEO server
        answered (the same stream of ``[run].seed`` the measurement draws
        from, so the very points it used), ``geo/epsilon``, ``geo/radius``:
        its ε* and privacy radius.
        """
        truth = {"queries": np.asarray(outcome.plan.queries, dtype=np.float64)}
        radius = getattr(outcome.config, "geo_radius", None)
        if radius is None:
            return truth
        # the measurement's draws (once per run: in secure mode nothing can replay them)
        mech, (slots, points) = geo_draws(outcome.config, outcome.result.detail, data)
        truth.update({"geo/slot": slots, "geo/point": points,
                      "geo/epsilon": np.asarray(mech.epsilon), "geo/radius": np.asarray(radius)})
        return truth

    def audit_setup(self, prepared: Any, protocol: Any, common: Mapping[str, Any], *,
                    record: int, repeats: int) -> Any:
        """Query 0 reflected through the domain's centre (its audit module)."""
        return audit_cases.replay_setup(dict(common), protocol, prepared)

    def worst_case(self, scenario: Scenario, protocol: Any, *, n_test: int,
                   confidence: float, deviation: str) -> Any:
        """One decision with the query on either side of the split."""
        return audit_cases.worst_case(protocol, deviation)

    def worst_case_references(self, epsilon: float, deviation: str) -> list[Any]:
        """One decision whose ε is ``epsilon``."""
        return [audit_cases.dptt(epsilon, deviation=deviation)]

    def compare_defaults(self) -> Mapping[str, Any]:
        """``ppknn compare --quick``: the privacy key, its two levels (most private first)."""
        return {"privacy_key": "final_epsilon", "quick_levels": [5.0, 50.0],
                "settings": {"variant": "E2"}, "quick_audit": True}

    def deviations(self) -> Mapping[str, Any]:
        """Its deviating parties (:mod:`.deviations`)."""
        return deviating.KINDS

    def headline(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Release accuracy, the final ε both ways, what the client received."""
        return [
            ("NN / top-5 accuracy of the release",
             f"{summary['nn_accuracy']:.3f} / {summary['top5_accuracy']:.3f}"),
            ("final ε per query: bounded range / sum",
             f"{summary['final_epsilon_br']:.4g} (δ = {summary['privacy']['delta']:g}) / "
             f"{summary['final_epsilon_sum']:.4g}"),
            ("ε per decision × decisions (worst case)",
             f"{summary['per_decision_epsilon']:.4g} × {summary['compositions']} "
             f"({summary['variant']}, {summary['utility']}, height {summary['tree_height']})"),
            ("points released per query / data seen",
             f"{summary['released_mean']:.1f} / {summary['seen_fraction']:.2%}"),
        ]

    def plot(self, ax: Any, outcome: Any) -> bool:
        """What the release holds: NN and top-5 accuracy, and the fraction of the data seen."""
        s = outcome.summary()
        names = ["NN accuracy", "top-5 accuracy", "data seen\n(per query)"]
        values = [s["nn_accuracy"], s["top5_accuracy"], s["seen_fraction"]]
        bars = ax.bar(np.arange(3), values, color=["tab:orange", "tab:green", "tab:purple"])
        ax.bar_label(bars, fmt="%.3f")
        ax.set_xticks(np.arange(3), names, fontsize=8)
        ax.set_ylim(0, 1.1)
        ax.set_ylabel("fraction of queries / of the server's points")
        ax.set_title(f"DP-TT {s['variant']} ({s['utility']}): final ε per query "
                     f"{s['final_epsilon_br']:.3g} (sum {s['final_epsilon_sum']:.3g}), "
                     f"{s['per_decision_epsilon']:.3g} per decision", fontsize=9)
        return True

__all__ = ["NAME", "DPTT", "DPTTConfig", "check_keys", "nominal_release", "setup_for",
           "utility_of"]
