"""The notebook-sized Python API: ``ppknn.run``, ``ppknn.sweep``, ``ppknn.leakage``.

Every function takes a scenario as a TOML path, a mapping (the TOML's
tables as dicts) or a validated :class:`~ppknn.simulations.scenario.Scenario`,
and returns results as pyarrow tables (``.to_pandas()`` when pandas is
installed). Nothing is written unless ``output=`` is given: the transcript
stays in memory.

Examples
--------
>>> import ppknn
>>> result = ppknn.run({
...     "data": {"dataset": "sklearn:iris", "max_queries": 30,
...              "bounds": {"lower": [4, 2, 1, 0], "upper": [8, 4.5, 7, 2.5]}},
...     "parties": {"n": 3},
...     "protocol": {"name": "ppknn-ring", "k": 3},
...     "runtime": {"kind": "inprocess"}})
>>> round(result.accuracy, 3), result.output is None
(1.0, True)
>>> result.predictions.column_names[:3]
['query', 'label', 'ppknn-ring']
>>> round(result.leakage["ppknn-ring"].mean_probability, 2)
0.43
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from ppknn.core.errors import ConfigError
from ppknn.core.transcript import Transcript
from ppknn.simulations import registry
from ppknn.simulations.runner import ProtocolOutcome, RunResult
from ppknn.simulations.scenario import Scenario, parse_scenario
from ppknn.simulations.scenario import load_scenario as _load_toml
from ppknn.simulations.sweep import Sweep, load_sweep, parse_sweep


def load_scenario(scenario: str | os.PathLike[str] | Mapping[str, Any] | Scenario, *,
                  overrides: Mapping[str, Any] | None = None) -> Scenario:
    """A validated scenario from a TOML path, a mapping or a :class:`Scenario`.

    Parameters
    ----------
    scenario:
        A path to a TOML file, the scenario as nested dicts (``{"data": {...},
        "protocol": {...}}``) or an already validated ``Scenario``.
    overrides:
        Dotted keys set afterwards, typed as given:
        ``{"protocol.k": 3, "runtime.kind": "inprocess"}``.

    Raises
    ------
    ConfigError
        An unknown key, a wrong type or an out-of-range value, named.

    Examples
    --------
    >>> sc = load_scenario({"protocol": {"name": "dp-knn"}}, overrides={"protocol.epsilon": 2.0})
    >>> sc.protocols[0].name, sc.protocols[0].epsilon
    ('dp-knn', 2.0)
    >>> load_scenario(42)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ppknn.core.errors.ConfigError: scenario = 42: ...
    """
    if isinstance(scenario, Scenario):
        sc = scenario
    elif isinstance(scenario, (str, os.PathLike)):
        sc = _load_toml(scenario)
    elif isinstance(scenario, Mapping):
        sc = parse_scenario(dict(scenario))
    else:
        raise ConfigError(f"scenario = {scenario!r}: give a TOML path, a mapping or a "
                          "ppknn Scenario")
    if overrides is None:
        return sc
    if not isinstance(overrides, Mapping):
        raise ConfigError(f"overrides = {overrides!r}: give a mapping of dotted keys to values, "
                          "e.g. {'protocol.k': 3}")
    return sc.set_keys(overrides.items()) if overrides else sc


@dataclass(frozen=True)
class Result:
    """What :func:`run` returns: tables, the summary and the leakage of one run.

    Attributes
    ----------
    run:
        The runner's :class:`~ppknn.simulations.runner.RunResult` (every
        protocol's typed output, the plan, the baseline).
    output:
        The results folder, when one was written (``run(..., output=...)``).
    deviations:
        With ``[[deviation]]`` in the scenario: the
        :class:`~ppknn.simulations.leakage.deviations.DeviationReport` (whether
        the deviation was detected, what it changed against the honest twin);
        ``run`` is then the deviant run (the honest one when the deviant run
        failed).
    audit:
        With ``[audit] trials``: each audited protocol's
        :class:`~ppknn.simulations.leakage.audit.AuditRun` (``.row`` is its
        empirical ε lower bound).
    """

    run: RunResult
    output: Path | None = None
    deviations: Any | None = None
    audit: list[Any] | None = None

    @property
    def scenario(self) -> Scenario:
        """The resolved scenario (every default filled in)."""
        return self.run.prepared.scenario

    @property
    def protocols(self) -> list[str]:
        """The protocols that ran, in order."""
        return [o.name for o in self.run.outcomes]

    def outcome(self, name: str | None = None) -> ProtocolOutcome:
        """One protocol's outcome (``name`` may be omitted with one protocol)."""
        return self.run.outcome if name is None else self.run.outcome_of(name)

    @property
    def accuracy(self) -> float:
        """Accuracy of a one-protocol run (``outcome(name).accuracy`` otherwise)."""
        if len(self.run.outcomes) != 1:
            raise ConfigError(f"the run has {len(self.run.outcomes)} protocols "
                              f"{self.protocols}; accuracy is defined for one: use "
                              "result.outcome(name).accuracy")
        return self.run.accuracy

    @property
    def summary(self) -> dict[str, Any]:
        """``summary.json`` as a dict, its ``leakage`` section included."""
        from ppknn.simulations.leakage import summary
        from ppknn.simulations.results import summary_of

        return {**summary_of(self.run), "leakage": summary(self._leakage_rows)}

    @functools.cached_property
    def _leakage_rows(self) -> list[Any]:
        from ppknn.simulations.leakage import run_table, stream

        try:
            return run_table(self.run)
        finally:
            stream.release()  # the transcript parts scoring held

    @property
    def leakage_table(self) -> pa.Table:
        """``leakage.csv`` as a table: one row per (observer, target, attack) of every protocol.

        The measured quantity with its 95% interval, the promised bound and the
        verdict (computed once, on first use).
        """
        return _rows_table(self._leakage_rows)

    @property
    def predictions(self) -> pa.Table:
        """Per query: label, each protocol's prediction, its baseline's, its own columns."""
        from ppknn.simulations.results import prediction_rows

        return pa.Table.from_pylist(prediction_rows(self.run))

    @property
    def parties(self) -> pa.Table:
        """Per party: roles, messages and bytes, privacy spent, per-party measures."""
        from ppknn.simulations.results import party_rows

        return pa.Table.from_pylist(party_rows(self.run))

    @property
    def transcript(self) -> pa.Table:
        """Every recorded message (payload seen, provenance, wire bytes)."""
        t = self.run.transcript
        return t.table() if t is not None else pa.table({})

    @property
    def leakage(self) -> dict[str, Any]:
        """Each protocol's own leakage report, as measured (``None`` where it has none).

        The ring's per-node disclosure, the sanitizer's attack outcome, ...;
        every protocol's rows are in :attr:`leakage_table`.
        """
        return {o.name: o.leakage for o in self.run.outcomes}

    def figure(self, which: str = "summary") -> Any:
        """The run's ``"summary"`` or ``"leakage"`` figure; nothing is written.

        An SVG :class:`~ppknn.simulations.reporting.svg.Figure`: a notebook shows it
        inline, ``.to_svg()`` is its text and ``.save(path)`` writes it. The same
        figures as ``summary.svg`` and ``leakage.svg`` of :meth:`write` with ``plot``.
        """
        if which == "summary":
            from ppknn.simulations.results import summary_figure

            return summary_figure(self.run)
        if which == "leakage":
            from ppknn.simulations.leakage.table import leakage_figure

            return leakage_figure(self._leakage_rows, title=self.run.prepared.run_id)
        raise ConfigError(f"figure({which!r}): 'summary' or 'leakage'")

    def write(self, output: str | os.PathLike[str], *, overwrite: bool = False,
              plot: bool = False) -> Path:
        """Write the results folder (refuses an existing one unless ``overwrite``, a bool).

        ``plot``: also render ``summary.svg`` and ``leakage.svg`` (a bool).
        """
        from ppknn.simulations.output import check_flag, staged

        check_flag("overwrite", overwrite)
        check_flag("plot", plot)
        from ppknn.simulations.leakage import save_truths
        from ppknn.simulations.results import ScenarioRun, write_extras, write_folder

        folder = Path(output)
        with staged(folder, overwrite=overwrite) as stage:
            if self.run.transcript is not None:  # first: the ground truth is saved beside it
                _copy_transcript(self.run.transcript, stage / "transcript")
                save_truths(self.run, stage / "transcript")
            write_folder(self.run, stage, self._leakage_rows, plot=plot)
            write_extras(ScenarioRun(self.run, self.deviations, self.audit), stage)
        return folder

    def __repr__(self) -> str:
        accs = ", ".join(f"{o.name} accuracy {o.accuracy:.4f}" for o in self.run.outcomes)
        if self.deviations is not None:
            kinds = ", ".join(f"{d['party']} {d['kind']}" for d in self.deviations.deviations)
            accs += (f"; deviation {kinds} "
                     f"{'detected' if self.deviations.detected else 'undetected'}")
        if self.audit is not None:
            accs += "; audit " + ", ".join(
                f"{a.row.protocol} ε ≥ {a.row.value:.3g}" for a in self.audit)
        return f"<ppknn.Result {self.run.prepared.run_id}: {accs}>"


def _copy_transcript(transcript: Transcript, folder: Path) -> None:
    """Write an in-memory transcript as the recorder would (parts and ``totals.json``)."""
    from ppknn.core.transcript import TranscriptRecorder

    recorder = TranscriptRecorder(folder)
    for batch in transcript.table().to_batches(max_chunksize=4096):
        recorder.append(batch.to_pylist())
    recorder.close()


def _check_progress(progress: Any) -> None:
    """Refuse a ``progress`` that cannot be called, before anything runs or is written."""
    if progress is not None and not callable(progress):
        raise ConfigError(f"progress = {progress!r}: give a function called with the "
                          "progress, or None")


def _local_ray_auth(address: str | None) -> None:
    """Before a new local Ray instance: token authentication on, as Ray does, without its notice.

    Ray enables token authentication for a new local instance by setting
    ``RAY_AUTH_MODE=token`` in the process and warns that it did; setting it first gives
    the same state without the warning. An explicit ``RAY_AUTH_MODE`` or a cluster to
    join (``address``, ``RAY_ADDRESS``) is left alone.
    """
    if not address and not os.environ.get("RAY_ADDRESS"):
        os.environ.setdefault("RAY_AUTH_MODE", "token")


def run(scenario: str | os.PathLike[str] | Mapping[str, Any] | Scenario, *,
        output: str | os.PathLike[str] | None = None, overwrite: bool = False,
        overrides: Mapping[str, Any] | None = None,
        progress: Callable[[str, int, int], None] | None = None, plot: bool = False) -> Result:
    """Run a scenario (any registered protocol, or several) and measure it.

    Parameters
    ----------
    scenario:
        A TOML path, a mapping or a :class:`Scenario` (see :func:`load_scenario`).
    output:
        Write the common results folder there (refused if it exists, unless
        ``overwrite``); ``None``: nothing is written, the transcript stays in memory.
    overwrite:
        Replace an existing results folder once the new run is complete (a bool:
        anything else raises ``TypeError``).
    overrides:
        Dotted keys, e.g. ``{"protocol.k": 3, "runtime.kind": "inprocess"}``.
    progress:
        Called with ``(phase, done, total)``.
    plot:
        With ``output``, also render ``summary.svg`` and ``leakage.svg`` (a bool; later
        from the folder: ``ppknn show --plot``).

    Returns
    -------
    Result
        Tables (``predictions``, ``parties``, ``transcript``), ``summary``,
        ``leakage`` and ``accuracy``.

    Examples
    --------
    >>> r = run({"data": {"dataset": "sklearn:wine", "max_queries": 20, "scale": "minmax",
    ...                   "bounds": {"lower": [0.0] * 13, "upper": [1700.0] * 13}},
    ...          "protocol": {"name": "dp-knn", "task": "knn", "k": 5, "epsilon": 1.0},
    ...          "runtime": {"kind": "inprocess"}})
    >>> r.protocols, r.summary["results"]["dp-knn"]["privacy"]["epsilon"]
    (['dp-knn'], 1.0)
    """
    from ppknn.simulations.output import check_flag, check_output, staged
    from ppknn.simulations.pipeline import run_scenario

    check_flag("overwrite", overwrite)  # "no" is not False: only a bool is taken
    check_flag("plot", plot)
    _check_progress(progress)
    sc = load_scenario(scenario, overrides=overrides)
    if sc.runtime.kind == "ray":
        _local_ray_auth(sc.runtime.address)
    if output is None:
        whole = run_scenario(sc, progress=progress)
        return Result(whole.run, deviations=whole.deviations, audit=whole.audit)
    folder = check_output(Path(output), overwrite=overwrite)
    with staged(folder, overwrite=overwrite) as stage:
        whole = run_scenario(sc, stage=stage, progress=progress, plot=plot)
    # the run was recorded in the staging folder, now renamed: read it where it is
    run = dataclasses.replace(whole.run, transcript_dir=folder / "transcript",
                              transcript=Transcript(folder / "transcript"))
    return Result(run, output=folder, deviations=whole.deviations, audit=whole.audit)


def sweep(spec: str | os.PathLike[str] | Mapping[str, Any] | Sweep, *,
          parallel: str | None = None, output: str | os.PathLike[str] | None = None,
          overwrite: bool = False,
          progress: Callable[[int, int], None] | None = None) -> pa.Table:
    """Run a grid of scenarios x seeds and return one row per run.

    Parameters
    ----------
    spec:
        A sweep TOML path, its tables as a mapping (``{"sweep": {...}, "base":
        {...}, "grid": {"protocol.k": [1, 3]}}``) or a :class:`Sweep`.
    parallel:
        ``"ray"`` (fan out over Ray tasks) or ``"sequential"``; ``None``: the
        file's ``[sweep].parallel``.
    output:
        Also write ``sweep.csv``, ``sweep.parquet`` and ``sweep.png`` there
        (refused before anything runs if it already holds results, unless
        ``overwrite``); ``None``: nothing is written.
    overwrite:
        Replace an existing sweep folder once the new table is complete (a bool:
        anything else raises ``TypeError``).
    progress:
        Called with ``(done, total)``.

    Examples
    --------
    >>> table = sweep({"sweep": {"name": "k", "seeds": [0, 1]},
    ...                "base": {"data": {"dataset": "sklearn:iris", "max_queries": 15,
    ...                                  "bounds": {"lower": [4, 2, 1, 0],
    ...                                             "upper": [8, 4.5, 7, 2.5]}},
    ...                         "parties": {"n": 3}},
    ...                "grid": {"protocol.k": [1, 3]}}, parallel="sequential")
    >>> table.num_rows, len(set(table.column("run_id").to_pylist()))
    (4, 4)
    """
    from ppknn.simulations.output import check_flag
    from ppknn.simulations.sweep import run_sweep

    check_flag("overwrite", overwrite)
    if isinstance(spec, Sweep):
        sw = spec
    elif isinstance(spec, (str, os.PathLike)):
        sw = load_sweep(spec)
    elif isinstance(spec, Mapping):
        sw = parse_sweep(dict(spec))
    else:
        raise ConfigError(f"sweep = {spec!r}: give a TOML path, a mapping or a ppknn Sweep")
    _check_progress(progress)
    if (parallel or sw.sweep.parallel) == "ray":
        _local_ray_auth(sw.sweep.address)
    rows = run_sweep(sw, parallel=parallel, output=None if output is None else Path(output),
                     overwrite=overwrite, progress=progress)
    return pa.Table.from_pylist(rows)


def leakage(source: Result | RunResult | str | os.PathLike[str]) -> dict[str, Any]:
    """Each protocol's own leakage report, from a run or a saved results folder.

    From a run, the report as measured (the ring's per-node disclosure, the
    sanitizer's attack outcome, ...). From a folder (``ppknn run``'s output),
    the reports recomputed from the saved transcript alone, as ``ppknn
    leakage`` does (the ring's disclosure); a protocol with no such report
    maps to ``None``. Every protocol's rows, from either: :func:`leakage_table`.

    Examples
    --------
    >>> r = run({"data": {"dataset": "sklearn:iris", "max_queries": 10,
    ...                   "bounds": {"lower": [4, 2, 1, 0], "upper": [8, 4.5, 7, 2.5]}},
    ...          "parties": {"n": 3}, "runtime": {"kind": "inprocess"}})
    >>> report = leakage(r)["ppknn-ring"]
    >>> len(report.parties), 0.0 <= report.mean_probability <= 1.0
    (3, True)
    """
    import json

    from ppknn.simulations.output import check_complete

    if isinstance(source, Result):
        return source.leakage
    if isinstance(source, RunResult):
        return {o.name: o.leakage for o in source.outcomes}
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigError(f"source = {source!r}: give a Result, a RunResult or the path of a "
                          "results folder")
    folder = Path(source)
    public_path = folder / "public.json"
    if not public_path.is_file():
        raise ConfigError(f"{str(folder)!r} is not a results folder (no public.json)")
    check_complete(folder)
    public = json.loads(public_path.read_text())
    per_protocol = public.get("protocols", {"ppknn-ring": public})
    transcript = Transcript(folder / "transcript")
    return {name: registry.get(name).leakage(transcript, facts)
            for name, facts in per_protocol.items()}


def leakage_table(source: Result | RunResult | str | os.PathLike[str]) -> pa.Table:
    """Every protocol's leakage rows, from a run or a saved results folder (``leakage.csv``).

    One row per (observer, target, attack): the measured quantity with its 95%
    interval, the bound the protocol promises and the verdict. From a folder
    it is recomputed from the saved transcript and ground truth, as
    ``ppknn leakage`` does (nothing is written).

    Examples
    --------
    >>> r = run({"data": {"dataset": "sklearn:iris", "max_queries": 10,
    ...                   "bounds": {"lower": [4, 2, 1, 0], "upper": [8, 4.5, 7, 2.5]}},
    ...          "parties": {"n": 3}, "runtime": {"kind": "inprocess"}})
    >>> table = leakage_table(r)
    >>> table.column_names[:4], set(table.column("verdict").to_pylist()) <= {
    ...     "within bound", "above bound", "no bound"}
    (['protocol', 'observer', 'target', 'attack'], True)
    """
    if isinstance(source, Result):
        return source.leakage_table
    if isinstance(source, RunResult):
        return Result(source).leakage_table
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigError(f"source = {source!r}: give a Result, a RunResult or the path of a "
                          "results folder")
    from ppknn.simulations.leakage import recompute
    from ppknn.simulations.output import check_complete

    folder = Path(source)
    if not (folder / "public.json").is_file():
        raise ConfigError(f"{str(folder)!r} is not a results folder (no public.json)")
    check_complete(folder)
    return _rows_table(recompute(folder))


def _rows_table(rows: list[Any]) -> pa.Table:
    from ppknn.simulations.leakage.table import COLUMNS

    if not rows:
        return pa.table({c: pa.array([], pa.string()) for c in COLUMNS})
    return pa.Table.from_pylist([r.as_dict() for r in rows])


def protocol_names() -> list[str]:
    """The registered protocol names (``ppknn.registry.get(name)`` gives a plugin).

    >>> protocol_names()   # the built-in ones, and any a package installed beside them registers
    [...'dp-knn', 'dp-nb', 'dptt', ...'pca-perturbation', 'ppknn-ring', 'ring-nb'...]
    """
    return registry.names()


__all__ = ["Result", "leakage", "leakage_table", "load_scenario", "protocol_names", "run",
           "sweep"]
