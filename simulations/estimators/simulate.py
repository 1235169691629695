"""Run one registered protocol on arrays: the engine inside every protocol estimator.

An estimator's ``fit`` keeps its training rows; its ``predict`` calls
:func:`simulate`, which builds the same :class:`~ppknn.simulations.prepare.PreparedData`
a scenario would (the rows split among the data owners, the query batch, the
public bounds), asks the protocol's registered plugin for its plan, starts every
party on a runtime (in-process by default), runs the driver and returns its
result with the transcript. So an estimator runs exactly the parties, messages
and privacy accounting of ``ppknn run``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.data import Dataset, DomainBounds, partition
from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.core.protocol import ProtocolResult
from ppknn.core.rng import RandomnessMode, SeedPolicy
from ppknn.core.transcript import Transcript
from ppknn.simulations import registry
from ppknn.simulations.prepare import PreparedData, owner_names
from ppknn.simulations.runner import context_for, runtime_for
from ppknn.simulations.scenario import Scenario, parse_scenario

RUNTIMES = ("inprocess", "ray")
"""The runtimes an estimator accepts."""


def resolve_bounds(bounds: Any, X: np.ndarray, *, who: str) -> DomainBounds:
    """Public domain bounds: ``(lower, upper)`` (scalars or per feature) or ``"data"``.

    ``"data"`` derives them from ``X`` with a :class:`PrivacyLeakWarning`
    (they reveal the training rows' extremes).

    >>> b = resolve_bounds((0.0, [1.0, 2.0]), np.zeros((3, 2)), who="x")
    >>> b.lower.tolist(), b.upper.tolist()
    ([0.0, 0.0], [1.0, 2.0])
    """
    m = X.shape[1]
    if isinstance(bounds, str) and bounds == "data":
        warnings.warn(f"{who}: bounds derived from the training rows reveal their extremes; "
                      "pass bounds=(lower, upper) (public)", PrivacyLeakWarning, stacklevel=3)
        return DomainBounds.from_data(X, warn=False)
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ConfigError(f"{who}: bounds = {bounds!r}; allowed: 'data' or (lower, upper), "
                          "each a number or one per feature")
    try:
        lower = np.broadcast_to(np.asarray(bounds[0], dtype=np.float64), (m,)).copy()
        upper = np.broadcast_to(np.asarray(bounds[1], dtype=np.float64), (m,)).copy()
    except (ValueError, TypeError):
        raise ConfigError(f"{who}: bounds = {bounds!r} do not fit {m} feature(s); allowed: "
                          "numbers or one per feature") from None
    out = DomainBounds(lower, upper)
    outside = (X < out.lower) | (X > out.upper)
    if outside.any():
        row, col = (int(v[0]) for v in np.nonzero(outside))
        raise ConfigError(f"{who}: X[{row}, {col}] = {X[row, col]!r} is outside the declared "
                          f"bounds [{out.lower[col]}, {out.upper[col]}]")
    return out


@dataclass(frozen=True)
class Simulated:
    """One protocol run on arrays: the driver's result and what was recorded."""

    result: ProtocolResult
    transcript: Transcript
    communication: dict[str, Any]
    public: dict[str, Any]
    leakage: Any
    plan: Any


@dataclass(frozen=True)
class Planned:
    """A run set up but not started: the scenario, the prepared data and the plugin's plan.

    Building it validates every parameter (the protocol's strict model, its
    cross-checks and its plan), touches no party and releases nothing.
    """

    scenario: Scenario
    data: PreparedData
    config: Any
    plugin: Any
    plan: Any


def plan_run(protocol: dict[str, Any], *, X: np.ndarray, y: np.ndarray, n_classes: int,
             queries: np.ndarray, bounds: DomainBounds, n_parties: int = 1, analysts: int = 1,
             runtime: str = "inprocess", channels: bool = False, seed: int | None = 0,
             mode: str = "reproducible", address: str | None = None,
             name: str = "estimator") -> Planned:
    """Set up one run of ``protocol["name"]`` (parameters as :func:`simulate`); run nothing."""
    if runtime not in RUNTIMES:
        raise ConfigError(f"runtime = {runtime!r}; allowed: {list(RUNTIMES)}")
    if len(y) < n_parties:
        raise ValueError(f"{n_parties} parties need at least one training row each; got "
                         f"n_samples = {len(y)}")
    seed_value = 0 if seed is None else int(seed)
    rt: dict[str, Any] = {"kind": runtime, "channels": bool(channels)}
    if address is not None:
        rt["address"] = address
    scenario: Scenario = parse_scenario({
        "run": {"name": name, "seed": seed_value, "mode": mode},
        "data": {"bounds": {"lower": bounds.lower.tolist(), "upper": bounds.upper.tolist()}},
        "parties": {"n": n_parties, "analysts": analysts},
        "protocol": protocol,
        "runtime": rt}, source=f"estimator {protocol.get('name')!r}")
    policy = SeedPolicy(root=seed_value, mode=RandomnessMode(mode))
    parts = partition(y, n_parties, scheme="iid", rng=policy.generator("partition"))
    data = PreparedData(
        scenario=scenario, run_id=f"{name}-{seed_value}", policy=policy,
        dataset=Dataset(name, X, y, np.arange(n_classes)), bounds=bounds,
        train_X=X, train_y=y, queries=queries,
        query_labels=np.zeros(len(queries), dtype=np.int64),  # unknown: never used here
        owner_names=owner_names(n_parties), owner_rows=tuple(np.asarray(p) for p in parts))
    config = scenario.protocols[0]
    plugin = registry.get(config.name)
    return Planned(scenario=scenario, data=data, config=config, plugin=plugin,
                   plan=plugin.plan(config, data))


def run_planned(planned: Planned) -> Simulated:
    """Start every party of ``planned`` on its runtime, run the driver, shut down."""
    scenario, data, plugin, plan = planned.scenario, planned.data, planned.plugin, planned.plan
    specs = list(plan.specs)
    rt_obj = runtime_for(scenario, [s.party_id for s in specs])
    try:
        rt_obj.start(specs, context_for(scenario, data.run_id, None))
        result = plugin.driver_result(rt_obj, plan)
        communication = rt_obj.close_transcript()
        table = rt_obj.transcript_table()
    finally:
        rt_obj.shutdown()
    transcript = Transcript(table)
    public = dict(plan.public)
    return Simulated(result=result, transcript=transcript, communication=communication,
                     public=public, leakage=plugin.leakage(transcript, public), plan=plan)


def simulate(protocol: dict[str, Any], *, X: np.ndarray, y: np.ndarray, n_classes: int,
             queries: np.ndarray, bounds: DomainBounds, n_parties: int = 1, analysts: int = 1,
             runtime: str = "inprocess", channels: bool = False, seed: int | None = 0,
             mode: str = "reproducible", address: str | None = None,
             name: str = "estimator") -> Simulated:
    """Run protocol ``protocol["name"]`` with training rows ``(X, y)`` on ``queries``.

    Parameters
    ----------
    protocol:
        The ``[protocol]`` table (validated by the protocol's strict model).
    X, y:
        Training rows and integer labels ``0..n_classes-1``.
    queries:
        The query batch.
    bounds:
        The public domain bounds.
    n_parties, analysts:
        ``[parties].n`` and ``[parties].analysts``.
    runtime:
        ``"inprocess"`` (fast, deterministic) or ``"ray"``.
    seed, mode:
        The root seed and randomness mode (``"secure"``: OS entropy).
    """
    return run_planned(plan_run(protocol, X=X, y=y, n_classes=n_classes, queries=queries,
                                bounds=bounds, n_parties=n_parties, analysts=analysts,
                                runtime=runtime, channels=channels, seed=seed, mode=mode,
                                address=address, name=name))


__all__ = ["Planned", "RUNTIMES", "Simulated", "plan_run", "resolve_bounds", "run_planned",
           "simulate"]
