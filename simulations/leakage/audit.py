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

Neighbours and features (the promise compared with, in brackets):

``dp-nb`` [ε of a model]
    the owner's training rows without row ``[audit] record``; feature: the
    first analyst's released noisy count of that row's class.
``ring-nb`` [ε of the model]
    the start node's successor's rows without its row ``record``; feature:
    the noisy count of that row's class in the model a non-start owner received.
``dp-knn`` [ε of a request]
    the owner's rows without row ``record``. In each trial the first analyst
    asks about one worst-case instance ``repeats`` times (default
    :data:`DP_KNN_REPEATS`), one single-instance request each: every request is
    a fresh ε-DP release (its own request id, so its own noise stream) that the
    ledger charges, so a trial yields ``repeats`` independent draws of the same
    release and the owner's budget is set to cover them. The instance: with a
    public r-N radius, the point among the record and the owner's rows within
    the radius of it whose region (holding the record) is closest to a tie
    between the record's class and the best other class, where one record
    moves the label most; otherwise the record itself. Feature: 1 when a
    released label is the record's class, else 0, from the analyst's view.
    An aggregate label is a lossy view of the noisy counts, so the bound is
    below the ε spent even for the worst instance (for the Laplace release of
    a region tied with the record, ε - ln(1 + ε/2) is the most this event can
    show; with the noise halved, 2ε - ln(1 + ε), above ε by ε - ln(1 + ε), a
    margin the auditor resolves from ε = 2 with a few thousand draws).
``dptt`` [ε of one decision; the query's composed ε in the note]
    query 0 reflected through the centre of the declared domain; feature: the
    server's view of the first bit answered for it.

Deviations in the scenario apply to every trial, so a broken party is
audited the same way (e.g. ``weak-noise-nb``).

The above is the **replay** audit (``method="replay"``): faithful to the
transcript, but one protocol run per draw. The default is the **worst-case**
audit (:func:`audit_worst_case`, :mod:`simulations.leakage.worstcase`): each
protocol's release drawn for all trials as one array through the protocol's
own mechanism on the neighbouring pair that moves it most (dp-knn r-N: the
scenario's regions and an empty one searched for the record that flips the
label; k-NN baseline: the added record displacing the k-th neighbour;
dp-nb and ring-nb: the class-count release; DP-TT: a decision with the query
on either side; pca-perturbation's Laplace schemes: a score at either end of
its column's range), with the trial count chosen for the power to certify
``certify`` (default ε = 5) and the ceiling those trials could certify
reported beside the bound.
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
from ppknn.simulations.leakage.table import LeakageRow, write_table
from ppknn.simulations.reporting.jsonio import dumps

AUDITED = ("dp-knn", "dp-nb", "dptt", "ring-nb", "pca-perturbation")

DP_KNN_REPEATS = 25
"""Single-instance requests per dp-knn audit trial (each one draw of the release)."""


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


def _drop_row(spec: Any, record: int) -> Any:
    X, y = np.asarray(spec.kwargs["X"]), np.asarray(spec.kwargs["y"])
    if not 0 <= record < len(X):
        raise ConfigError(f"[audit] record = {record}: party {spec.party_id!r} holds "
                          f"{len(X)} rows; allowed: 0 <= record < {len(X)}")
    keep = np.arange(len(X)) != record
    return dataclasses.replace(spec, kwargs={**spec.kwargs, "X": X[keep], "y": y[keep]})


def _class_index(spec: Any, record: int, classes: list[str]) -> int:
    value = np.asarray(spec.kwargs["y"])[record]
    if np.issubdtype(np.asarray(value).dtype, np.integer) and 0 <= int(value) < len(classes):
        return int(value)
    return classes.index(str(value))


def _count_feature(transcript: Transcript, *, protocol: str, observer: str, kind: str,
                   key: str, cls: int) -> float:
    for m in transcript.messages(protocol=protocol):
        if m.receiver == observer and m.kind == kind:
            return float(np.asarray(m.payload[key]).reshape(-1)[cls])
    raise ConfigError(f"audit: {observer!r} received no {kind!r} message")


def _label_feature(transcript: Transcript, *, observer: str, cls: int,
                   repeats: int) -> np.ndarray:
    """1 for each label the observer received that is ``cls``, else 0 (``repeats`` draws)."""
    from ppknn.protocols.dp_knn.adversary import answered_instances

    _, labels = answered_instances(transcript.view(observer, protocol="dp-knn"))
    if len(labels) != repeats:
        raise ConfigError(f"audit: {observer!r} got {len(labels)} labels for its {repeats} "
                          "requests (a refusal or an unanswered request)")
    return (labels == cls).astype(np.float64)


def _worst_instance(X: np.ndarray, y: np.ndarray, record: int, radius: float | None
                    ) -> tuple[np.ndarray, str]:
    """The instance where row ``record`` moves the r-N label most (module docstring)."""
    row = X[record]
    if radius is None:
        return row, "the record's own location"
    dist = np.linalg.norm(X - row, axis=1)
    candidates = np.argsort(dist, kind="stable")[:64]
    candidates = candidates[dist[candidates] <= radius]
    n_classes = int(max(y.max(), y[record]) + 1)
    best: tuple[int, int, np.ndarray] | None = None
    for c in candidates:
        inside = np.linalg.norm(X - X[c], axis=1) <= radius
        counts = np.bincount(y[inside], minlength=n_classes)
        own = int(counts[y[record]])
        counts[y[record]] = -1
        gap = int(counts.max()) - own  # best other class minus the record's (record counted)
        if best is None or abs(2 * gap + 1) < best[0]:
            best = (abs(2 * gap + 1), gap, X[c])
    assert best is not None  # the record itself is a candidate
    return best[2], (f"the point within radius {radius:g} of the record whose region is "
                     f"closest to a tie (best other class minus the record's class: "
                     f"{best[1]} with the record)")


def _dp_knn_setup(common: dict[str, Any], p: Any, record: int, repeats: int) -> Setup:
    """The dp-knn audit (module docstring): one analyst, one instance, ``repeats`` requests."""
    plan, public = p.plan, p.plan.public
    owner, analyst = plan.roles["owner"][0], plan.roles["analyst"][0]
    by_id = {s.party_id: s for s in plan.specs}
    spec = by_id[owner]
    X = np.asarray(spec.kwargs["X"], dtype=np.float64)
    y = np.asarray(spec.kwargs["y"])
    if not 0 <= record < len(X):
        raise ConfigError(f"[audit] record = {record}: party {owner!r} holds {len(X)} rows; "
                          f"allowed: 0 <= record < {len(X)}")
    classes = [str(c) for c in public.get("classes", [])]
    cls = _class_index(spec, record, classes)
    radius = public.get("radius")
    point, how = _worst_instance(X, y.astype(np.int64), record,
                                 float(radius) if public.get("task") == "rn"
                                 and isinstance(radius, (int, float)) else None)
    cost = float(public["epsilon_per_request"])
    funded = dataclasses.replace(spec, kwargs={**spec.kwargs, "epsilon": cost * repeats,
                                               "analyst_epsilon": None})
    specs_a = (funded, by_id[analyst])
    specs_b = (_drop_row(funded, record), by_id[analyst])
    queries = np.repeat(point[None, :], repeats, axis=0)
    feature = functools.partial(_label_feature, observer=analyst, cls=cls, repeats=repeats)
    return Setup(**{**common, "specs_a": specs_a, "queries_a": queries,
                    "roles": {"owner": (owner,), "analyst": (analyst,)},
                    "config": dataclasses.replace(plan.config, batches=repeats)},
                 specs_b=specs_b, queries_b=queries, observer=(analyst,), feature=feature,
                 target=f"{owner} row {record} (add/remove); {repeats} single-instance "
                        f"requests per run at {how}",
                 bound=cost, bound_name="ε of a request")


def _bit_feature(transcript: Transcript) -> float:
    from ppknn.protocols.dptt.adversary import side_claims

    claims = side_claims(transcript.view("server", protocol="dptt"))
    first = np.flatnonzero(claims.slot == 0)
    return float(claims.right[first[0]]) if first.size else -1.0


def setups(scenario: Any, *, record: int, repeats: int = DP_KNN_REPEATS) -> list[Setup]:
    """The audit of every protocol of ``scenario`` that promises ε (module docstring)."""
    from ppknn.simulations.runner import prepare

    prepared = prepare(scenario)
    out = []
    deviations = tuple(d.model_dump() for d in scenario.deviation)
    for p in prepared.protocols:
        plan, public = p.plan, p.plan.public
        specs = tuple(plan.specs)
        unknown = sorted({d["party"] for d in deviations} - {s.party_id for s in specs})
        if unknown and len(prepared.protocols) == 1:
            raise ConfigError(f"[[deviation]] party = {unknown[0]!r}: no such party in "
                              f"{p.name}; allowed: {[s.party_id for s in specs]}")
        by_id = {s.party_id: s for s in specs}
        classes = [str(c) for c in public.get("classes", [])]
        common: dict[str, Any] = dict(protocol=p.name, specs_a=specs, queries_a=plan.queries,
                                      roles=plan.roles, config=plan.config,
                                      run_id=prepared.run_id, deviations=deviations)
        if p.name in ("dp-nb", "dp-knn"):
            owner = plan.roles["owner"][0]
            neighbour = tuple(_drop_row(s, record) if s.party_id == owner else s for s in specs)
            target = f"{owner} row {record} (add/remove)"
            if p.name == "dp-nb":
                analyst = plan.roles["analyst"][0]
                cls = _class_index(by_id[owner], record, classes)
                feature = functools.partial(_count_feature, protocol=p.name, observer=analyst,
                                            kind="model", key="class_count", cls=cls)
                delta = float(public.get("delta_per_model", 0.0))
                out.append(Setup(**common, specs_b=neighbour, queries_b=plan.queries,
                                 observer=(analyst,), feature=feature, target=target,
                                 bound=float(public["epsilon_per_model"]),
                                 bound_name="ε of a model" + (f" (δ = {delta:g})" if delta
                                                               else ""),
                                 delta=delta))
            else:
                out.append(_dp_knn_setup(common, p, record, repeats))
        elif p.name == "ring-nb":
            ring, start = list(public["ring"]), public["start"]
            holder = ring[(ring.index(start) + 1) % len(ring)]
            observer = ring[(ring.index(start) + 2) % len(ring)]
            neighbour = tuple(_drop_row(s, record) if s.party_id == holder else s
                              for s in specs)
            cls = _class_index(by_id[holder], record, classes)
            feature = functools.partial(_count_feature, protocol=p.name, observer=observer,
                                        kind="nb-model", key="counts", cls=cls)
            out.append(Setup(**common, specs_b=neighbour, queries_b=plan.queries,
                             observer=(observer,), feature=feature,
                             target=f"{holder} row {record} (add/remove)",
                             bound=float(public["epsilon"]),
                             bound_name="ε of the released model"))
        elif p.name == "dptt":
            lo, hi = prepared.data.bounds.lower, prepared.data.bounds.upper
            moved = np.array(plan.queries, dtype=np.float64, copy=True)
            moved[0] = lo + hi - moved[0]
            out.append(Setup(**common, specs_b=specs, queries_b=moved, observer=("server",),
                             feature=_bit_feature, target="client query 0 (moved)",
                             bound=float(public["per_decision_epsilon"]),
                             bound_name=f"ε of one decision (a query: "
                                        f"{float(public['final_epsilon_br']):.4g})"))
    return out


def trial(setup: Setup, item: tuple[str, int]) -> np.ndarray:
    """One run of ``setup`` on input ``"a"`` or ``"b"`` with noise seed ``seed``: its draws."""
    from ppknn.parties.deviations import deviant_spec
    from ppknn.simulations import registry

    which, seed = item
    specs = setup.specs_a if which == "a" else setup.specs_b
    queries = setup.queries_a if which == "a" else setup.queries_b
    dev = {d["party"]: d for d in setup.deviations}
    specs = tuple(
        deviant_spec(s, dev[s.party_id]["kind"], dev[s.party_id]["params"])
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
                          f"covers {list(AUDITED)}")
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
    from ppknn.simulations.leakage import worstcase as wc
    from ppknn.simulations.runner import prepare

    prepared = prepare(scenario)
    deviations = tuple(d.model_dump() for d in scenario.deviation)
    n_test = trials_to_certify(certify, confidence) // 2
    out: list[tuple[Any, str, str]] = []
    for p in prepared.protocols:
        plan, public = p.plan, p.plan.public
        parties = {s.party_id for s in plan.specs}
        dev = _worst_deviation(deviations, parties)
        if p.name == "dp-knn":
            owner = plan.roles["owner"][0]
            spec = {s.party_id: s for s in plan.specs}[owner]
            eps = float(public["epsilon_per_request"])
            radius = public.get("radius")
            n_classes = max(2, len(public.get("classes", [])))
            if public.get("task") == "rn" and public.get("algorithm") == "proposed" \
                    and isinstance(radius, (int, float)):
                from ppknn.protocols.dp_knn.index import LabelIndex

                X = np.asarray(spec.kwargs["X"], dtype=np.float64)
                y = np.asarray(spec.kwargs["y"]).astype(np.int64)
                pick = np.random.default_rng(scenario.run.seed).choice(
                    len(X), size=min(256, len(X)), replace=False)
                idx = LabelIndex(X, y, n_classes=n_classes)
                counts = idx.radius_counts(X[pick], np.full(len(pick), float(radius)))
                cands = np.vstack([np.zeros((1, n_classes), np.int64), counts])
                case = wc.dp_knn_rn(eps, candidates=cands, n_test=n_test, deviation=dev,
                                    confidence=confidence)
                target = (f"{owner}: one record added to a region of radius {radius:g} "
                          f"(searched among 256 of its rows' regions and an empty one)")
            elif public.get("task") == "knn" and public.get("algorithm") == "baseline":
                case = wc.dp_knn_knn(eps, int(public["k"]), n_test=n_test, deviation=dev,
                                     confidence=confidence)
                target = f"{owner}: one record added among an instance's k nearest"
            else:
                continue  # the converted k-NN classifiers: the replay audit covers them
            out.append((case, plan.roles["analyst"][0], target))
        elif p.name == "dp-nb":
            owner = plan.roles["owner"][0]
            n_numeric = len(public["bounds"]["lower"]) - len(public.get("categorical", {}))
            case = wc.dp_nb(float(public["epsilon_per_model"]), n_numeric, deviation=dev)
            out.append((case, plan.roles["analyst"][0], f"{owner}: one record added"))
        elif p.name == "ring-nb":
            eps = float(public["epsilon"])
            group = [float(g) for g in public["group_epsilons"]]
            case = wc.ring_nb(eps, (group[0], group[1], group[2]), deviation=dev)
            out.append((case, "every non-start owner", "one owner's record added"))
        elif p.name == "dptt":
            case = wc.dptt(0.0, setup=plan.config.setup, deviation=dev)
            out.append((case, "server", "a client query moved across a split"))
        elif p.name == "pca-perturbation" and public.get("scheme") in ("laplace",
                                                                        "pca-laplace"):
            request = getattr(plan.config, "request", plan.config)
            b = float(getattr(request, "b", 0.0) or 0.0)
            if b <= 0:
                continue
            out.append((wc.pca_laplace(b, deviation=dev), "miner",
                        "one training row's released score moved across its column's range"))
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
                          f"audit mode covers {list(AUDITED)} (the converted dp-knn k-NN "
                          "classifiers with --replay)")
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


__all__ = ["AUDITED", "DP_KNN_REPEATS", "AuditRun", "Setup", "audit_protocol",
           "audit_scenario", "audit_worst_case", "setups", "trial", "worst_cases",
           "write_audit"]
