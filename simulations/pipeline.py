"""One pipeline from a scenario to its results folder.

:func:`run_scenario` is what ``ppknn run``, :func:`ppknn.run`, every run of
a sweep and the reproductions' scenario runs call: run the protocols
(:func:`~simulations.runner.execute`; with ``[[deviation]]`` the deviant run
beside its honest twin), measure them, score the leakage table once, run
the ``[audit]``, then hand everything computed to the writer
(:mod:`simulations.results`), which only writes. Each phase is timed
(``timings_s`` in ``summary.json``: prepare, start-up, protocol, recorded,
measure, leakage, write, plots), so a user sees where a run's time went.

Plots are drawn when asked: ``plot=True`` (``ppknn run`` asks unless
``--no-plot``), or later from the folder with ``ppknn show --plot``; sweeps draw
no per-run plot.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ppknn.simulations.results import (
    ScenarioRun,
    write_extras,
    write_folder,
    write_recorded,
)
from ppknn.simulations.runner import RunResult, execute

Progress = Callable[[str, int, int], None]


def score_leakage(run: RunResult, folder: Path | None = None) -> list[Any]:
    """The run's leakage table (every default and scripted adversary), timed as ``leakage_s``.

    The ground truth is read from ``folder/transcript`` when the run saved it
    there as it was recorded (:func:`~simulations.results.write_recorded`),
    else computed (and saved there when the folder has a transcript).
    """
    from ppknn.simulations import leakage

    t0 = time.perf_counter()
    truth_dir = None if folder is None else folder / "transcript"
    rows = leakage.run_table(run, truth_dir=truth_dir if truth_dir is not None
                             and truth_dir.is_dir() else None)
    run.timings["leakage_s"] = time.perf_counter() - t0
    return rows


def _run(scenario: Any, transcript_dir: Path | None, progress: Progress | None,
         wait_for_shutdown: bool, recorded: Callable[[RunResult], None] | None
         ) -> tuple[RunResult, Any]:
    """The run kept, and the deviation report when the scenario has ``[[deviation]]``."""
    if scenario.deviation:  # the deviant run beside its honest twin
        from ppknn.simulations.leakage.deviations import run_with_deviations

        return run_with_deviations(scenario, transcript_dir=transcript_dir,
                                   progress=progress, recorded=recorded)
    return execute(scenario, transcript_dir=transcript_dir, progress=progress,
                   wait_for_shutdown=wait_for_shutdown, recorded=recorded), None


def run_scenario(scenario: Any, *, stage: Path | None = None,
                 progress: Progress | None = None, wait_for_shutdown: bool = True,
                 plot: bool = False) -> ScenarioRun:
    """Everything a scenario asks for, as ``ppknn run``, ``ppknn.run`` and sweeps do it.

    With ``stage``, the results folder is written there: what scoring needs
    as soon as the protocols complete (:func:`~simulations.results.write_recorded`),
    then, once measured and scored, the results (with ``summary.svg`` and
    ``leakage.svg`` when ``plot``), the audit and the deviation report.
    Without, nothing is written, no leakage table is scored (``ppknn.Result``
    scores it on first use) and the transcript stays in memory.
    """
    recorded = None if stage is None else (lambda run: write_recorded(run, stage))
    transcript_dir = None if stage is None else stage / "transcript"
    from ppknn.simulations.leakage import stream

    try:
        run, deviations = _run(scenario, transcript_dir, progress, wait_for_shutdown,
                               recorded)
        if stage is not None:
            rows = score_leakage(run, stage)
            write_folder(run, stage, rows, plot=plot)
    finally:
        stream.release()  # the transcript parts measuring and scoring read once
    audit = None
    if scenario.audit.trials:
        from ppknn.simulations.leakage.audit import audit_scenario

        audit = audit_scenario(scenario, progress=progress)
    done = ScenarioRun(run, deviations, audit)
    if stage is not None:
        write_extras(done, stage)
    return done




def write_results(result: RunResult, output: str | Path, *, plot: bool = True) -> Path:
    """Score the run's leakage table and write its results folder; returns its path.

    For a run measured outside :func:`run_scenario`
    (e.g. :func:`~simulations.runner.execute`); ``plot``: also ``summary.svg``
    and ``leakage.svg``.
    """
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    return write_folder(result, out, score_leakage(result, out), plot=plot)


__all__ = ["run_scenario", "score_leakage", "write_results"]
