"""Audit mode: rerun a release on neighbouring inputs and lower-bound the ε it spends.

A plain run scores each attack on one transcript; an empirical ε needs many
runs on neighbouring inputs. :func:`audit_scenario` prepares the scenario
once and, for each protocol with a DP promise, reruns its parties and driver
``trials`` times on the original input and ``trials`` times on a neighbour
(the same parties, fresh noise seeds), through the same runtime code
(an in-process runtime per trial, the trials fanned out with
:func:`core.runtime.pool.fan_out`, on Ray when the scenario's runtime is
Ray). Each trial reduces the **observer's view** in its transcript to one
number (the feature below); the project's auditor :func:`core.dp.audit.audit`
turns the two samples into a lower confidence bound on ε: an event is
selected on one half of the trials and tested on the other with one-sided
Clopper-Pearson bounds (95% by default; ``[audit] confidence``).

Each protocol's plugin sets up its neighbours and feature (its
``audit_setup`` hook, :class:`Setup`; documented in
``protocols/<name>/plugin/audit.py``): a protocol without the hook is not
replay-audited. :func:`drop_row`, :func:`class_index` and
:func:`count_feature` are the helpers those set-ups share.

Deviations in the scenario apply to every trial, so a broken party is
audited the same way (e.g. ``weak-noise-nb``).

The above is the **replay** audit (``method="replay"``): faithful to the
transcript, but one protocol run per draw. The default is the **worst-case**
audit (:func:`audit_worst_case`, :mod:`simulations.leakage.worstcase`): each
protocol's release drawn for all trials as one array through the protocol's
own mechanism on the neighbouring pair that moves it most (its plugin's
``worst_case`` hook), with the trial count chosen for the power to certify
``certify`` (default ε = 5) and the ceiling those trials could certify
reported beside the bound. :func:`audited` lists the protocols either audit
covers.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.dp.audit import audit, certifiable_epsilon
from ppknn.core.errors import ConfigError
from ppknn.core.runtime import RunContext, make_runtime
from ppknn.core.runtime.pool import fan_out
from ppknn.core.transcript import Transcript
from ppknn.simulations import registry
from ppknn.simulations.leakage.table import LeakageRow, write_table
from ppknn.simulations.reporting.jsonio import dumps

REPEATS = 25
"""Repeated requests per audit trial where a protocol's trial asks the same question again
(each one draw of the release: :meth:`~simulations.registry.ProtocolPlugin.audit_setup`)."""


def audited() -> list[str]:
    """The registered protocols the audit covers (their plugins have an audit hook)."""
    return [p.name for p in registry.plugins() if p.audited()]


@dataclass(frozen=True)
class Setup:
    """One protocol's audit: both inputs' parties and queries, the observer, the feature."""

    protocol: str
    specs_a: tuple[Any, ...]
    specs_b: tuple[Any, ...]
    queries_a: np.ndarray
    queries_b: np.ndarray
    roles: Mapping[str, tuple[str, ...]]
    config: Any
    observer: tuple[str, ...]
    feature: Callable[[Transcript], Any]
    """The observer's view reduced to one number, or to an array of independent draws."""
    target: str
    bound: float
    bound_name: str
    run_id: str
    deviations: tuple[dict[str, Any], ...] = ()
    delta: float = 0.0
    """The δ the release promises beside ``bound``: the auditor subtracts it (an (ε, δ)
    promise allows the event's probability ratio to exceed e^ε by δ)."""


def drop_row(spec: Any, record: int) -> Any:
    """``spec`` with its training row ``record`` removed (the add/remove neighbour)."""
    X, y = np.asarray(spec.kwargs["X"]), np.asarray(spec.kwargs["y"])
    if not 0 <= record < len(X):
        raise ConfigError(f"[audit] record = {record}: party {spec.party_id!r} holds "
                          f"{len(X)} rows; allowed: 0 <= record < {len(X)}")
    keep = np.arange(len(X)) != record
    return dataclasses.replace(spec, kwargs={**spec.kwargs, "X": X[keep], "y": y[keep]})


def class_index(spec: Any, record: int, classes: list[str]) -> int:
    """The class index of ``spec``'s training row ``record`` (``classes``: the public names)."""
    value = np.asarray(spec.kwargs["y"])[record]
    if np.issubdtype(np.asarray(value).dtype, np.integer) and 0 <= int(value) < len(classes):
        return int(value)
    return classes.index(str(value))


def count_feature(transcript: Transcript, *, protocol: str, observer: str, kind: str,
                  key: str, cls: int) -> float:
    """The ``cls`` entry of ``key`` in the first ``kind`` message ``observer`` received."""
    for m in transcript.messages(protocol=protocol):
        if m.receiver == observer and m.kind == kind:
            return float(np.asarray(m.payload[key]).reshape(-1)[cls])
    raise ConfigError(f"audit: {observer!r} received no {kind!r} message")










def setups(scenario: Any, *, record: int, repeats: int = REPEATS) -> list[Setup]:
    """The audit of every protocol of ``scenario`` that promises ε (module docstring)."""
    from ppknn.simulations.runner import prepare

    prepared = prepare(scenario)
    out = []
    deviations = tuple(d.model_dump() for d in scenario.deviation)
    for p in prepared.protocols:
        plan = p.plan
        specs = tuple(plan.specs)
        unknown = sorted({d["party"] for d in deviations} - {s.party_id for s in specs})
        if unknown and len(prepared.protocols) == 1:
            raise ConfigError(f"[[deviation]] party = {unknown[0]!r}: no such party in "
                              f"{p.name}; allowed: {[s.party_id for s in specs]}")
        common: dict[str, Any] = dict(protocol=p.name, specs_a=specs, queries_a=plan.queries,
                                      roles=plan.roles, config=plan.config,
                                      run_id=prepared.run_id, deviations=deviations)
        setup = registry.get(p.name).audit_setup(prepared, p, common, record=record,
                                                 repeats=repeats)
        if setup is not None:
            out.append(setup)
    return out


def trial(setup: Setup, item: tuple[str, int]) -> np.ndarray:
    """One run of ``setup`` on input ``"a"`` or ``"b"`` with noise seed ``seed``: its draws."""
    from ppknn.parties.deviations import deviant_spec

    which, seed = item
    specs = setup.specs_a if which == "a" else setup.specs_b
    queries = setup.queries_a if which == "a" else setup.queries_b
    dev = {d["party"]: d for d in setup.deviations}
    kinds = registry.deviation_kinds()
    specs = tuple(
        deviant_spec(s, dev[s.party_id]["kind"], dev[s.party_id]["params"], kinds)
        if s.party_id in dev else s for s in specs)
    specs = tuple(dataclasses.replace(s, kwargs={**s.kwargs, "seed": seed})
                  if "seed" in s.kwargs else s for s in specs)
    rt = make_runtime("inprocess")
    try:
        rt.start(list(specs), RunContext(run_id=setup.run_id, secure_channels=False))
        driver = registry.get(setup.protocol).driver
        driver(rt, setup.roles, setup.config, queries)
        rt.close_transcript()
        table = rt.transcript_table()
    finally:
        rt.shutdown()
    return np.atleast_1d(np.asarray(setup.feature(Transcript(table)), dtype=np.float64))


@dataclass(frozen=True)
class AuditRun:
    """One protocol's audit: the row and the auditor's details."""

    row: LeakageRow
    event: str
    hits: tuple[int, int]
    samples: tuple[np.ndarray, np.ndarray]


def audit_protocol(setup: Setup, *, trials: int, seed: int, confidence: float,
                   use_ray: bool = False, address: str | None = None,
                   progress: Callable[[int, int], None] | None = None) -> AuditRun:
    """Run ``trials`` trials per input and lower-bound ε with the project's auditor."""
    if trials < 100:
        raise ConfigError(f"[audit] trials = {trials}: the auditor needs at least 100 runs per "
                          "input (half select the event, half test it)")
    seeds = [int(s) for s in np.random.SeedSequence([seed, 0xA0D17]).generate_state(trials)]
    items = [("a", s) for s in seeds] + [("b", s) for s in seeds]
    values = fan_out(functools.partial(trial, setup), items, use_ray=use_ray,
                     address=address, progress=progress)
    a = np.concatenate(values[:trials]).astype(np.float64)
    b = np.concatenate(values[trials:]).astype(np.float64)
    n = min(len(a), len(b))
    samples = {"a": a[:n], "b": b[:n]}

    def replay(which: str, rng: Any, count: int) -> np.ndarray:
        return samples[which][:count]

    result = audit(replay, "a", "b", n_samples=n, rng=np.random.default_rng(seed),
                   confidence=confidence, vectorized=True, delta=setup.delta)
    row = LeakageRow(
        protocol=setup.protocol, observer="+".join(setup.observer), target=setup.target,
        attack="audit (neighbouring inputs)",
        quantity=f"empirical ε lower bound (audit, {confidence:.0%}); ci_high: the most "
                 "these draws could certify",
        value=result.eps_lower, ci_low=result.eps_lower,
        ci_high=certifiable_epsilon(n - n // 2, confidence, setup.delta),
        trials=2 * n, bound=setup.bound, bound_name=setup.bound_name,
        note=f"{trials} runs per input ({n} draws); event: {result.event}; hits "
             f"{result.hits[0]} vs {result.hits[1]} of {n - n // 2}; core.dp.audit "
             "(Clopper-Pearson" + (f", δ = {setup.delta:g} subtracted" if setup.delta else "")
             + ")")
    return AuditRun(row=row, event=result.event, hits=result.hits,
                    samples=(samples["a"], samples["b"]))


def audit_scenario(scenario: Any, *, trials: int | None = None, use_ray: bool | None = None,
                   progress: Callable[[str, int, int], None] | None = None
                   ) -> list[AuditRun]:
    """Audit every protocol of ``scenario`` that promises ε (``[audit]`` settings)."""
    n = int(trials if trials is not None else scenario.audit.trials)
    ray = scenario.runtime.kind == "ray" if use_ray is None else use_ray
    out = []
    found = setups(scenario, record=scenario.audit.record)
    if not found:
        names = [c.name for c in scenario.protocols]
        raise ConfigError(f"nothing to audit: protocols {names} promise no ε; audit mode "
                          f"covers {audited()}")
    for s in found:
        def step(done: int, total: int, name: str = s.protocol) -> None:
            if progress:
                progress(f"audit {name}", done, total)

        out.append(audit_protocol(s, trials=n, seed=scenario.run.seed,
                                  confidence=scenario.audit.confidence, use_ray=ray,
                                  address=scenario.runtime.address, progress=step))
    return out


def _worst_deviation(deviations: tuple[dict[str, Any], ...], parties: set[str]) -> str:
    """The planted leak of the scenario's deviations, as a worst-case deviation string."""
    out = "none"
    for d in deviations:
        if d["party"] not in parties:
            continue
        kind = d["kind"]
        if kind.startswith("weak-noise"):
            out = f"noise-scale={float(d.get('params', {}).get('scale', 0.5)):g}"
        elif kind in ("no-randomisation", "never-randomise"):
            out = "no-noise"
        else:
            raise ConfigError(f"deviation {kind!r} is not modelled by the worst-case audit; "
                              "use the replay audit (--replay)")
    return out


def worst_cases(scenario: Any, *, certify: float = 5.0, confidence: float = 0.95
                ) -> list[tuple[Any, str, str]]:
    """Each DP protocol's worst-case :class:`~simulations.leakage.worstcase.Case`.

    Returns ``(case, observer, target)`` per protocol of ``scenario`` that
    promises ε and has a worst-case model (module docstring).
    """
    from ppknn.core.dp.audit import trials_to_certify
    from ppknn.simulations.runner import prepare

    prepared = prepare(scenario)
    deviations = tuple(d.model_dump() for d in scenario.deviation)
    n_test = trials_to_certify(certify, confidence) // 2
    out: list[tuple[Any, str, str]] = []
    for p in prepared.protocols:
        plan = p.plan
        parties = {s.party_id for s in plan.specs}
        dev = _worst_deviation(deviations, parties)
        found = registry.get(p.name).worst_case(scenario, p, n_test=n_test,
                                                confidence=confidence, deviation=dev)
        if found is not None:
            out.append(found)
    return out


def audit_worst_case(scenario: Any, *, certify: float = 5.0, trials: int | None = None,
                     progress: Callable[[str, int, int], None] | None = None
                     ) -> list[AuditRun]:
    """The worst-case audit of every protocol of ``scenario`` (module docstring)."""
    import time

    from ppknn.simulations.leakage.worstcase import planned_trials, run_case

    confidence = scenario.audit.confidence
    found = worst_cases(scenario, certify=certify, confidence=confidence)
    if not found:
        names = [c.name for c in scenario.protocols]
        raise ConfigError(f"nothing to audit: protocols {names} have no worst-case model; "
                          f"audit mode covers {audited()} (some configurations only with "
                          "--replay)")
    runs = []
    for i, (case, observer, target) in enumerate(found):
        n = int(trials) if trials else planned_trials(case, certify, confidence)
        start = time.perf_counter()
        res = run_case(case, n_samples=n, seed=scenario.run.seed, confidence=confidence)
        seconds = time.perf_counter() - start
        if progress:
            progress(f"audit {case.protocol}", i + 1, len(found))
        row = LeakageRow(
            protocol=case.protocol, observer=observer, target=target,
            attack="audit (worst-case neighbours)",
            quantity=f"empirical ε lower bound (audit, {confidence:.0%}); ci_high: the most "
                     "these draws could certify",
            value=res.eps_lower, ci_low=res.eps_lower, ci_high=res.ceiling, trials=2 * n,
            bound=case.claimed, bound_name=f"ε of the release ({case.name})",
            note=f"{case.pair}; event's analytic maximum {case.analytic:.4g} (bound / maximum "
                 f"{res.ratio:.2f}); {n} draws per input, vectorised, planned to certify "
                 f"ε = {certify:g}; {seconds:.2f} s; event: {res.event}"
                 + ("" if case.deviation == "none" else f"; planted: {case.deviation}"))
        runs.append(AuditRun(row=row, event=res.event, hits=res.hits,
                             samples=(np.empty(0), np.empty(0))))
    return runs


def write_audit(runs: list[AuditRun], out: Path) -> dict[str, Any]:
    """``audit.csv`` (leakage rows) and ``audit.json``; returns the summary section."""
    out.mkdir(parents=True, exist_ok=True)
    write_table([r.row for r in runs], out / "audit.csv")
    section = {
        "method": "core.dp.audit: event selected on half the runs, tested on the other half "
                  "with one-sided Clopper-Pearson bounds",
        "rows": [{**r.row.as_dict(), "hits": list(r.hits)} for r in runs],
    }
    (out / "audit.json").write_text(dumps(section, default=float))  # strict: NaN as null
    return section


__all__ = ["REPEATS", "AuditRun", "Setup", "audit_protocol", "audit_scenario",
           "audit_worst_case", "audited", "class_index", "count_feature", "drop_row", "setups",
           "trial", "worst_cases", "write_audit"]
