"""Run any scenario end to end: one driver loop for every registered protocol.

:func:`prepare` turns a validated :class:`~simulations.scenario.Scenario`
into the shared data (:mod:`simulations.prepare`) and one
:class:`~simulations.registry.Plan` per protocol; :func:`execute` starts
every party of every plan on one runtime (one transcript, one seed
policy), runs each protocol's driver in turn, closes the transcript, and
measures each protocol against its non-private baseline on the same split.
It returns a :class:`RunResult`; :mod:`simulations.results` writes it.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.protocol import ProtocolResult
from ppknn.core.runtime import FaultPlan, PartySpec, RunContext, Runtime, make_runtime
from ppknn.core.transcript import RECORDER_NAME, Transcript, check_fresh, recover_transcript
from ppknn.simulations import registry
from ppknn.simulations.output import FAILURE, failure_record, write_file
from ppknn.simulations.prepare import PreparedData, prepare_data
from ppknn.simulations.registry import Baseline, Measured, Plan, ProtocolPlugin
from ppknn.simulations.scenario import ProtocolConfig, Scenario

PhaseProgress = Callable[[str, int, int], None]
"""Called with (phase, done, total)."""


@dataclass(frozen=True)
class PlannedProtocol:
    """One protocol of a scenario, planned."""

    plugin: ProtocolPlugin
    config: ProtocolConfig
    plan: Plan

    @property
    def name(self) -> str:
        """The registered protocol name."""
        return self.plugin.name


@dataclass(frozen=True)
class PreparedRun:
    """Everything a run needs, before any party exists."""

    data: PreparedData
    protocols: tuple[PlannedProtocol, ...]

    @property
    def scenario(self) -> Scenario:
        """The scenario."""
        return self.data.scenario

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.data.run_id

    @property
    def plan(self) -> Plan:
        """The plan of a one-protocol scenario."""
        return _only(self.protocols, "plan").plan

    def specs(self) -> list[PartySpec]:
        """Every party of every protocol, once, in start order.

        A party shared by several protocols (e.g. the ring owners of PP-kNN
        and of the ring Naive Bayes) must be built the same way by each.
        """
        out: dict[str, PartySpec] = {}
        for p in self.protocols:
            for spec in p.plan.specs:
                seen = out.get(spec.party_id)
                if seen is None:
                    out[spec.party_id] = spec
                elif seen.factory is not spec.factory or set(seen.kwargs) != set(spec.kwargs):
                    raise ConfigError(f"party {spec.party_id!r} is built differently by two "
                                      f"protocols of the scenario ({seen.factory!r} vs "
                                      f"{spec.factory!r})")
        return list(out.values())

    def public(self) -> dict[str, Any]:
        """Public facts of the run, per protocol (``public.json``)."""
        return {"run_id": self.run_id,
                "protocols": {p.name: dict(p.plan.public) for p in self.protocols}}


def _only(items: tuple, what: str) -> Any:
    if len(items) != 1:
        raise ConfigError(f"the run has {len(items)} protocols; {what} is defined for one "
                          "(use outcome_of(name))")
    return items[0]


def prepare(scenario: Scenario) -> PreparedRun:
    """Load and split the data and plan every protocol (no party starts)."""
    data = prepare_data(scenario)
    planned = []
    for config in scenario.protocols:
        plugin = registry.get(config.name)
        planned.append(PlannedProtocol(plugin, config, plugin.plan(config, data)))
    from ppknn.simulations.leakage.checks import check_parties

    check_parties([a.model_dump() for a in scenario.adversary],  # observers, deviants: parties
                  [d.model_dump() for d in scenario.deviation],
                  {p.name: [s.party_id for s in p.plan.specs] for p in planned})
    return PreparedRun(data=data, protocols=tuple(planned))


@dataclass(frozen=True)
class ProtocolOutcome:
    """What one protocol of a run produced and measured."""

    name: str
    config: ProtocolConfig
    plan: Plan
    result: ProtocolResult
    baseline: Baseline
    measured: Measured | None  # None only in the run handed to ``execute(recorded=...)``
    seconds: float

    @property
    def predictions(self) -> np.ndarray:
        """``(Q,)`` class indices (-1: no answer)."""
        return self.result.predictions

    @property
    def labels(self) -> np.ndarray:
        """The queries' true labels."""
        return self.plan.query_labels

    @property
    def accuracy(self) -> float:
        """Accuracy over every query (an unanswered query counts as wrong)."""
        return float(np.mean(self.result.predictions == self.labels))

    @property
    def baseline_accuracy(self) -> float:
        """The non-private baseline's accuracy on the same queries."""
        return float(np.mean(self.baseline.predictions == self.labels))

    @property
    def leakage(self) -> Any:
        """The protocol's default leakage report (``None`` if it scores none)."""
        return None if self.measured is None else self.measured.leakage

    def summary(self) -> dict[str, Any]:
        """The common figures, then the protocol's own metrics."""
        r = self.result
        return {
            "protocol": self.name,
            "accuracy": self.accuracy,
            "baseline": {"name": self.baseline.name, "accuracy": self.baseline_accuracy},
            "agreement_with_baseline": float(np.mean(r.predictions
                                                     == self.baseline.predictions)),
            "answered_fraction": float(np.mean(r.answered)),
            "privacy": r.privacy.as_dict(),
            "hops": r.hops,
            **dict(r.metrics),
            **(dict(self.measured.metrics) if self.measured is not None else {}),
        }


@dataclass(frozen=True)
class RunResult:
    """What a run measured: one outcome per protocol, communication and timings."""

    prepared: PreparedRun
    runtime: str
    outcomes: tuple[ProtocolOutcome, ...]
    communication: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    transcript_dir: Path | None = None
    transcript: Transcript | None = None

    @property
    def outcome(self) -> ProtocolOutcome:
        """The outcome of a one-protocol run."""
        return _only(self.outcomes, "outcome")

    def outcome_of(self, name: str) -> ProtocolOutcome:
        """The outcome of protocol ``name``."""
        for o in self.outcomes:
            if o.name == name:
                return o
        raise ConfigError(f"no protocol {name!r} in this run; it ran "
                          f"{[o.name for o in self.outcomes]}")

    @property
    def predictions(self) -> np.ndarray:
        """Predictions of a one-protocol run."""
        return self.outcome.predictions

    @property
    def accuracy(self) -> float:
        """Accuracy of a one-protocol run."""
        return self.outcome.accuracy


def _placement(s: Scenario, names: list[str]) -> dict[str, dict[str, float]]:
    """Custom resources per party from ``[runtime.placement]`` (``"*"``: every party)."""
    out = {}
    for name in names:
        spec = s.runtime.placement.get(name, s.runtime.placement.get("*"))
        if spec:
            out[name] = dict(spec)
    if RECORDER_NAME in s.runtime.placement:  # the recorder is placed by name only
        out[RECORDER_NAME] = dict(s.runtime.placement[RECORDER_NAME])
    unknown = set(s.runtime.placement) - set(names) - {"*", RECORDER_NAME}
    if unknown:
        shown = names if len(names) <= 20 else names[:20] + ["..."]
        raise ConfigError(f"[runtime.placement] names unknown parties {sorted(unknown)}; "
                          f"parties are {shown} (and {RECORDER_NAME!r}, the recorder)")
    return out


def runtime_for(scenario: Scenario, party_names: list[str]) -> Runtime:
    """The runtime a scenario asks for (``[runtime]``)."""
    s = scenario
    options: dict[str, Any] = {}
    if s.runtime.kind == "ray":
        options = {"layout": s.runtime.layout, "hosts": s.runtime.hosts,
                   "placement": _placement(s, party_names)}
    return make_runtime(s.runtime.kind, address=s.runtime.address,
                        num_cpus=s.runtime.num_cpus, **options)


def context_for(scenario: Scenario, run_id: str, transcript_dir: Path | None) -> RunContext:
    """The run context a scenario asks for (``[runtime]``)."""
    r = scenario.runtime
    f = scenario.faults
    fault = None if f is None else FaultPlan(f.party, f.method, f.occurrence, f.kind, f.delay_s,
                                             f.mark)
    return RunContext(run_id=run_id, transcript_dir=transcript_dir,
                      secure_channels=r.channels, record_batch=r.record_batch,
                      flush_every=r.flush_every, record_batch_bytes=r.record_batch_bytes,
                      flush_bytes=r.flush_bytes, party_timeout_s=r.party_timeout_s,
                      fault=fault)


def _keep_what_was_recorded(rt: Runtime, exc: BaseException,
                            transcript_dir: Path | None) -> None:
    """Close the transcript of a failed run and say why it ends (``failure.json``).

    When the recorder cannot close it (its process died, its node was lost, it does not
    answer), what it had received is on disk in its parts and journal:
    :func:`~core.transcript.recover_transcript` writes the totals from there.
    """
    try:
        rt.close_transcript()
    except Exception:  # noqa: BLE001 - the original error is the one to report
        pass
    if transcript_dir is not None and transcript_dir.is_dir():  # (refused before it existed:
        try:  # bad input, no cluster -- nothing is written)
            recover_transcript(transcript_dir)
        except Exception as problem:  # noqa: BLE001 - said beside the run's own error
            if hasattr(exc, "add_note"):
                exc.add_note(f"the transcript's totals could not be written "
                             f"({type(problem).__name__}: {problem})")
        try:
            write_file(transcript_dir / FAILURE,
                       json.dumps(failure_record(exc), indent=1).encode())
        except OSError:  # the folder itself is gone, or the disk full: the error propagates
            pass


def execute(scenario: Scenario, *, transcript_dir: Path | None = None,
            runtime: Runtime | None = None, progress: PhaseProgress | None = None,
            wait_for_shutdown: bool = True,
            recorded: Callable[[RunResult], None] | None = None) -> RunResult:
    """Run every protocol of ``scenario`` and measure it.

    Parameters
    ----------
    scenario:
        A validated scenario.
    transcript_dir:
        Where the transcript's Parquet parts go; ``None`` keeps it in memory
        (nothing is written).
    runtime:
        A runtime to use (not shut down here); ``None``: the scenario's.
    progress:
        Called with (phase, done, total).
    wait_for_shutdown:
        ``False``: a Ray instance the run started is stopped in the background
        while the run is measured (``ppknn run``, which exits once its results
        are written; the interpreter waits for the shutdown, as does the next
        start of Ray in the process).
    recorded:
        Called once every protocol has completed and the transcript is closed,
        before anything is measured, with the run as recorded: each outcome
        with its result and baseline but ``measured=None``. ``ppknn run``
        writes there what scoring needs (public facts, ground truth), so a
        failure while measuring or scoring keeps a folder ``ppknn leakage``
        scores. Its time is ``timings["recorded_s"]``.

    Notes
    -----
    On any failure (a :class:`~core.errors.PartyFailure`, an
    :class:`~core.errors.IntegrityError`, an interrupt) the transcript
    recorded so far is flushed to ``transcript_dir`` and closed (in bounded
    time, with ``totals.json``), ``failure.json`` beside it says who failed,
    where and why (with the cause's traceback), and the error propagates.
    """
    t0 = time.perf_counter()
    prepared = prepare(scenario)
    specs = prepared.specs()
    if scenario.faults is not None and scenario.faults.party not in {s.party_id for s in specs}:
        shown = [s.party_id for s in specs][:20]
        raise ConfigError(f"faults.party = {scenario.faults.party!r} is not a party of the run; "
                          f"parties: {shown}")
    if transcript_dir is not None:
        check_fresh(transcript_dir)
    context = context_for(scenario, prepared.run_id, transcript_dir)
    timings: dict[str, float] = {"prepare_s": time.perf_counter() - t0}
    own_runtime = runtime is None
    rt = runtime if runtime is not None else runtime_for(scenario, [s.party_id for s in specs])
    # on Ray the driver mostly waits (for the instance's processes to come up, then on the
    # parties): the baselines, which depend on the data and configs only, are computed then
    ahead = _Ahead(lambda: _baselines(prepared)) if rt.name != "inprocess" else None
    from ppknn.simulations.firing import FiringWatch

    watch = FiringWatch(context, remote=scenario.runtime.address not in (None, "local"))
    try:
        results, communication, table = _drive(rt, prepared, specs, watch.context, timings,
                                                progress)
    except BaseException as exc:
        _failed(exc, rt, watch, ahead, transcript_dir, own_runtime)
        raise
    if own_runtime:
        rt.shutdown(wait=wait_for_shutdown)
    watch.report()  # a [faults] run that completed: warn when its fault never fired
    transcript = Transcript(transcript_dir) if transcript_dir is not None else Transcript(table)
    t0 = time.perf_counter()
    baselines = ahead.result() if ahead is not None else _baselines(prepared)
    baseline_s = time.perf_counter() - t0  # part of measuring (the wait, when computed ahead)
    run = RunResult(prepared=prepared, runtime=rt.name, communication=communication,
                    timings=timings, transcript_dir=transcript_dir, transcript=transcript,
                    outcomes=tuple(ProtocolOutcome(p.name, p.config, p.plan, result, baseline,
                                                   None, seconds)
                                   for (p, result, seconds), baseline in zip(results,
                                                                             baselines)))
    if recorded is not None:
        _call_recorded(recorded, run, progress)
    return _measure(run, baseline_s, progress)


def _failed(exc: BaseException, rt: Runtime, watch: Any, ahead: _Ahead | None,
            transcript_dir: Path | None, own_runtime: bool) -> None:
    """Keep what a failed run recorded and stop what it started (its error then propagates)."""
    watch.discard()
    _keep_what_was_recorded(rt, exc, transcript_dir)
    if own_runtime:
        rt.shutdown()
    if ahead is not None:
        ahead.discard()


_Driven = tuple[PlannedProtocol, ProtocolResult, float]


def _drive(rt: Runtime, prepared: PreparedRun, specs: list[PartySpec], context: RunContext,
           timings: dict[str, float], progress: PhaseProgress | None
           ) -> tuple[list[_Driven], dict[str, Any], Any]:
    """Start the parties, run each protocol's driver, close the transcript.

    Returns each protocol with its result and seconds, the communication
    totals, and the in-memory transcript table (``None`` when it is on disk).
    """
    t0 = time.perf_counter()
    rt.start(specs, context)
    timings["startup_s"] = time.perf_counter() - t0
    results: list[_Driven] = []
    for p in prepared.protocols:
        if progress:
            progress(f"protocol {p.name}", 0, 1)
        t0 = time.perf_counter()
        result = p.plugin.driver_result(rt, p.plan)
        results.append((p, result, time.perf_counter() - t0))
        if progress:
            progress(f"protocol {p.name}", 1, 1)
    rt.check_delivery()  # a message lost on its way to a concurrent party
    timings["protocol_s"] = sum(sec for _, _, sec in results)
    communication = rt.close_transcript()
    table = None if context.transcript_dir is not None else rt.transcript_table()
    return results, communication, table


def _call_recorded(recorded: Callable[[RunResult], None], run: RunResult,
                   progress: PhaseProgress | None) -> None:
    """Hand the run as recorded (``measured=None``) to ``recorded``; timed as ``recorded_s``."""
    t0 = time.perf_counter()
    if progress:
        progress("save public facts and ground truth", 0, 1)
    recorded(dataclasses.replace(run, timings=dict(run.timings)))
    if progress:
        progress("save public facts and ground truth", 1, 1)
    run.timings["recorded_s"] = time.perf_counter() - t0


def _measure(run: RunResult, baseline_s: float, progress: PhaseProgress | None) -> RunResult:
    """Each protocol measured against its baseline; ``measure_s`` includes the baselines."""
    prepared = run.prepared
    outcomes = []
    t0 = time.perf_counter()
    for p, o in zip(prepared.protocols, run.outcomes):
        if progress:
            progress(f"measure {o.name}", 0, 1)
        measured = p.plugin.measure(o.config, prepared.data, o.plan, o.result, o.baseline,
                                  run.transcript)
        outcomes.append(dataclasses.replace(o, measured=measured))
        if progress:
            progress(f"measure {o.name}", 1, 1)
    run.timings["measure_s"] = baseline_s + time.perf_counter() - t0
    return dataclasses.replace(run, outcomes=tuple(outcomes))


def _baselines(prepared: PreparedRun) -> list[Baseline]:
    """Every protocol's non-private baseline, in the run's order (data and config only)."""
    return [p.plugin.baseline(p.config, prepared.data) for p in prepared.protocols]


class _Ahead:
    """A computation run on its own thread while the driver waits; its result or error later.

    :meth:`result` joins the thread and returns what it computed, or raises what it
    raised, as if it had been computed there and then; :meth:`discard` joins it and
    drops both (the run failed first: its own error is the one to report).
    """

    def __init__(self, compute: Callable[[], Any]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(compute,),
                                        name="ppknn-baselines")
        self._thread.start()

    def _run(self, compute: Callable[[], Any]) -> None:
        try:
            self._value = compute()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def result(self) -> Any:
        """The computed value (after the thread ends), or its exception raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value

    def discard(self) -> None:
        """Wait for the thread to end and forget what it computed."""
        self._thread.join()
        self._value = self._error = None


__all__ = ["PlannedProtocol", "PreparedRun", "ProtocolOutcome", "RunResult", "context_for",
           "execute", "prepare", "runtime_for"]
