"""Runs with deviating parties, beside their honest twin: what the deviation changed.

:func:`run_with_deviations` runs a scenario whose ``[[deviation]]`` entries
make parties deviate (built from :mod:`parties.deviations` at party
construction, by wrapping the runtime's ``start``), and the same scenario
with every party honest (same seed, same data). It reports, per deviation
run:

- whether the deviation was **detected**: the run failed with a
  :class:`~core.errors.PpknnError` (``PartyFailure``, ``IntegrityError``,
  ``BudgetExhausted``, a protocol check), or the ledger refused requests the
  honest run had answered -- or it **passed silently**;
- the **accuracy** of each protocol, honest and deviant;
- every **leakage** row that changed (honest value, deviant value).

The results folder of a deviation run holds the deviant run's results (or,
when the deviant run failed, the honest run's, with the deviant run's
transcript up to its failure kept in ``transcript-deviant/``) and
``deviations.json`` / ``deviations.csv`` with the comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppknn.core.errors import ConfigError, PpknnError
from ppknn.parties.deviations import deviant_spec
from ppknn.simulations import registry
from ppknn.simulations.leakage.checks import check_parties
from ppknn.simulations.leakage.measure import run_table
from ppknn.simulations.leakage.table import LeakageRow
from ppknn.simulations.reporting import jsonio
from ppknn.simulations.reporting.csvio import write_rows

DEVIANT_TRANSCRIPT = "transcript-deviant"
"""Where a results folder keeps the transcript of a deviant run that failed."""


class DeviatingRuntime:
    """A runtime whose ``start`` builds the configured parties as deviants."""

    def __init__(self, inner: Any, deviations: list[dict[str, Any]]) -> None:
        self._inner = inner
        self._deviations = deviations

    def start(self, specs: Any, context: Any) -> None:
        """Start the parties, the deviating ones built from their deviant class."""
        by_party = {d["party"]: d for d in self._deviations}
        check_parties([], self._deviations, {"run": [s.party_id for s in specs]})
        kinds = registry.deviation_kinds()
        out = [deviant_spec(s, by_party[s.party_id]["kind"], by_party[s.party_id]["params"],
                            kinds)
               if s.party_id in by_party else s for s in specs]
        self._inner.start(out, context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class DeviationReport:
    """What the deviations changed (module docstring)."""

    deviations: list[dict[str, Any]]
    detected: bool
    detected_by: str
    accuracy: dict[str, dict[str, float | None]]
    answered: dict[str, dict[str, float | None]]
    leakage: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (``deviations.json``)."""
        return {"deviations": self.deviations, "detected": self.detected,
                "detected_by": self.detected_by, "accuracy": self.accuracy,
                "answered_fraction": self.answered, "leakage_changes": self.leakage}


def _key(r: LeakageRow) -> tuple[str, str, str, str, str]:
    return (r.protocol, r.observer, r.target, r.attack, r.quantity)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def compare(deviant: Any, honest: Any, failure: PpknnError | None,
            deviations: list[dict[str, Any]]) -> DeviationReport:
    """The report of a deviant run (or its failure) against its honest twin."""
    accuracy: dict[str, dict[str, float | None]] = {}
    answered: dict[str, dict[str, float | None]] = {}
    for o in honest.outcomes:
        d = None if deviant is None else deviant.outcome_of(o.name)
        accuracy[o.name] = {"honest": o.accuracy, "deviant": None if d is None else d.accuracy}
        h_ans = float(o.result.answered.mean())
        d_ans = None if d is None else float(d.result.answered.mean())
        answered[o.name] = {"honest": h_ans, "deviant": d_ans}
    detected_by = ""
    if failure is not None:
        detected_by = f"{type(failure).__name__}: {failure}"
    else:
        refused = [n for n, a in answered.items()
                   if a["deviant"] is not None and a["honest"] is not None
                   and a["deviant"] < a["honest"]]
        if refused:
            detected_by = f"refusals: fewer queries answered in {refused} (ledger)"
    changes = []
    if deviant is not None:
        before = {_key(r): r for r in run_table(honest, save=False)}
        for r in run_table(deviant, save=False):
            h = before.get(_key(r))
            if h is None or not _same(h.value, r.value):
                changes.append({"protocol": r.protocol, "observer": r.observer,
                                "target": r.target, "attack": r.attack,
                                "quantity": r.quantity,
                                "honest": None if h is None else h.value,
                                "deviant": r.value, "deviant_verdict": r.verdict,
                                "honest_verdict": None if h is None else h.verdict})
    return DeviationReport(deviations=deviations, detected=bool(detected_by),
                           detected_by=detected_by, accuracy=accuracy, answered=answered,
                           leakage=changes)


def run_with_deviations(scenario: Any, *, transcript_dir: Path | None = None,
                        progress: Callable[[str, int, int], None] | None = None,
                        recorded: Callable[[Any], None] | None = None,
                        ) -> tuple[Any, DeviationReport]:
    """Run the deviant scenario and its honest twin; returns (the run kept, the report).

    The run kept is the deviant one, or the honest one when the deviant run
    failed (its failure is the detection). ``recorded`` is handed the run
    kept as soon as its protocols complete (see
    :func:`~simulations.runner.execute`).
    """
    from ppknn.simulations.runner import execute, prepare, runtime_for

    deviations = [d.model_dump() for d in scenario.deviation]
    prepared = prepare(scenario)
    parties = {p.name: [s.party_id for s in p.plan.specs] for p in prepared.protocols}
    check_parties([a.model_dump() for a in scenario.adversary], deviations, parties)
    specs = {s.party_id: s for s in prepared.specs()}
    kinds = registry.deviation_kinds()
    for d in deviations:  # the role must match, before any party starts
        deviant_spec(specs[d["party"]], d["kind"], d["params"], kinds)
    honest_scenario = scenario.model_copy(update={"deviation": ()})
    rt = runtime_for(scenario, [s.party_id for s in prepared.specs()])
    deviant = failure = None
    try:
        deviant = execute(scenario, transcript_dir=transcript_dir,
                          runtime=DeviatingRuntime(rt, deviations),
                          progress=progress, recorded=recorded)
    except ConfigError:
        raise
    except PpknnError as exc:
        failure = exc
    finally:
        rt.shutdown()
    if deviant is None and transcript_dir is not None and transcript_dir.exists():
        # the honest run is the one kept: the deviant's transcript up to its failure is
        # kept beside it, for inspection (never scored)
        transcript_dir.rename(transcript_dir.with_name(DEVIANT_TRANSCRIPT))
    honest = execute(honest_scenario, transcript_dir=None if deviant is not None
                     else transcript_dir, progress=progress,
                     recorded=None if deviant is not None else recorded)
    report = compare(deviant, honest, failure, deviations)
    return (deviant if deviant is not None else honest), report


def write_report(report: DeviationReport, out: Path) -> None:
    """``deviations.json`` and ``deviations.csv`` (the leakage rows that changed)."""
    (out / "deviations.json").write_text(jsonio.dumps(report.as_dict(), default=float))
    rows = report.leakage or [{"protocol": "", "observer": "", "target": "", "attack": "",
                               "quantity": "", "honest": None, "deviant": None}]
    write_rows(out / "deviations.csv", rows)


__all__ = ["DEVIANT_TRANSCRIPT", "DeviatingRuntime", "DeviationReport", "compare",
           "run_with_deviations", "write_report"]
