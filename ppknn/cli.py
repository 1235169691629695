"""The ``ppknn`` command line (also ``python -m ppknn``).

Conventions every command keeps: bad input is refused before any work with a
one-paragraph ``error:`` naming the value and what is allowed (exit 2, nothing
written); a command that writes refuses an existing output unless
``--overwrite`` and then replaces it only once the new output is complete
(:func:`simulations.output.staged`); every string that comes from the user or
from a results folder is printed escaped, never read as Rich markup.
"""

from __future__ import annotations

import inspect
import json
import os
import warnings
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from ppknn.core.errors import (
    ConfigError,
    IntegrityError,
    PartyFailure,
    PpknnError,
    PrivacyLeakWarning,
)
from ppknn.terminal import (
    console,
    count,
    out,
    print_chaos_rows,
    print_deviations,
    print_disclosure,
    print_leakage,
    print_leakage_counts,
    print_sweep,
    read_json,
    show_folder,
    why_failed,
)

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Multi-party simulations of privacy-preserving nearest-neighbour "
                       "classification.")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            out.print(f"ppknn {version('ppknn')}")
        except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
            out.print("ppknn (not installed)")
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Multi-party simulations of privacy-preserving nearest-neighbour classification."""


class RuntimeKind(str, Enum):
    """Where the parties run: ``inprocess`` (one process) or ``ray`` (actors / tasks)."""

    inprocess = "inprocess"
    ray = "ray"


def _runtime_kind(value: Any) -> RuntimeKind:
    """``--runtime``: one of :class:`RuntimeKind` (a clean message for anything else)."""
    if isinstance(value, RuntimeKind):
        return value
    try:
        return RuntimeKind(str(value))
    except ValueError:
        allowed = ", ".join(repr(k.value) for k in RuntimeKind)
        raise typer.BadParameter(f"{value!r} is not one of {allowed}") from None


RUNTIME_METAVAR = "<" + "|".join(k.value for k in RuntimeKind) + ">"


def _runtime_option(help: str) -> Any:
    """The ``--runtime`` option, the same choice on every command."""
    return typer.Option(None, "--runtime", parser=_runtime_kind, metavar=RUNTIME_METAVAR,
                        help=help)


def _set_option(help: str) -> Any:
    """The repeatable ``--set KEY=VALUE`` option."""
    return typer.Option([], "--set", metavar="KEY=VALUE", help=help)


def _at_least(minimum: int, maximum: Callable[[], int] | None = None
              ) -> Callable[[Any], int]:
    """A parser of whole numbers ``>= minimum`` (and ``<= maximum()``) that names a bad value."""
    def parse(value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = int(str(value).strip())
            except ValueError:
                raise typer.BadParameter(f"{value!r} is not a whole number") from None
        if number < minimum:
            raise typer.BadParameter(f"{number} is too small: it must be greater than or "
                                     f"equal to {minimum}")
        if maximum is not None and number > maximum():
            raise typer.BadParameter(f"{number} is too large: it must be less than or equal "
                                     f"to {maximum():,}")
        return number

    return parse


def _max_audit_trials() -> int:
    """``[audit].trials``'s upper bound, which ``--trials`` shares."""
    from ppknn.simulations.scenario import MAX_AUDIT_TRIALS

    return MAX_AUDIT_TRIALS


def _with_alias(runtime: RuntimeKind | None, alias: bool, flag: str,
                means: RuntimeKind) -> RuntimeKind | None:
    """``--runtime``, or the hidden alias ``flag`` (= ``--runtime means``); both must agree."""
    if alias and runtime is not None and runtime is not means:
        raise ConfigError(f"{flag} means --runtime {means.value}; it contradicts --runtime "
                          f"{runtime.value}: give --runtime alone")
    return means if alias else runtime


def embedded_quickstart() -> Any:
    """The scenario ``ppknn run`` runs without a file (``scenarios/quickstart.toml``)."""
    from importlib.resources import as_file, files

    from ppknn.simulations.scenario import load_scenario

    with as_file(files("ppknn.simulations") / "quickstart.toml") as path:
        return load_scenario(path)


EXAMPLES = {"scenario file": "scenarios/quickstart.toml",
            "sweep file": "scenarios/sweep_k_by_n.toml",
            "comparison spec": "scenarios/compare.toml"}
"""An example of each kind of input file, for messages."""


def _input_file(path: Path, what: str) -> Path:
    """Refuse an input ``path`` that is a directory or cannot be read (before loading it)."""
    if path.is_dir():
        example = f" (e.g. {EXAMPLES[what]})" if what in EXAMPLES else ""
        raise ConfigError(f"{what} {str(path)!r} is a directory, not a {what}; give a TOML "
                          f"file{example}")
    if path.is_file() and not os.access(path, os.R_OK):
        raise ConfigError(f"{what} {str(path)!r} cannot be read (permission denied)")
    return path


def _load(loader: Callable[[Path], Any], path: Path, what: str) -> Any:
    """``loader(path)`` with unreadable files (a directory, binary, no permission) refused."""
    _input_file(path, what)
    _check_file_kind(path, what)
    try:
        return loader(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"{what} {str(path)!r} cannot be read: {reason}") from None


def _check_file_kind(path: Path, what: str) -> None:
    """Refuse a sweep file or comparison spec of the wrong kind, naming its command.

    (A scenario file checks its own kind when it loads; a file that cannot be read or
    parsed is left to the loader, which reports it.)
    """
    import tomllib

    from ppknn.simulations.scenario import check_file_kind

    if what not in ("sweep file", "comparison spec"):
        return
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return
    check_file_kind(data, path, what)


def _load_scenario(path: Path) -> Any:
    from ppknn.simulations.scenario import load_scenario

    return _load(load_scenario, path, "scenario file")


def _starting_ray(address: str | None) -> None:
    """Say on stderr that Ray is starting (it can take 10-20 s) or being joined.

    A new local Ray instance enables token authentication by default and warns
    that it did; setting ``RAY_AUTH_MODE=token`` first keeps exactly that
    (authentication on, a token generated if missing) without the warning. An
    explicit ``RAY_AUTH_MODE``, or joining a running cluster, is left alone.
    """
    joining = address or os.environ.get("RAY_ADDRESS")
    if joining:
        console.print(f"connecting to Ray at {escape(joining)}...")
        return
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    console.print("starting Ray (a local instance; the first start takes 10-20 s)...")


def _scorable(folder: Path) -> bool:
    """Whether ``ppknn leakage`` can score ``folder`` (:func:`check_complete` says so)."""
    from ppknn.simulations.output import check_complete

    try:
        check_complete(folder)
    except (PpknnError, OSError, ValueError):
        return False
    return True


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as an interrupt: what the run recorded is kept; exit code 143."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated("terminated (SIGTERM)")


def _fail(exc: BaseException, code: int, hint: str = "") -> None:
    """Print the error (where a failed run's record is kept, ``hint``); exit with ``code``."""
    from ppknn.simulations.output import disk_full, disk_full_message

    text = str(exc) or type(exc).__name__
    full = disk_full(exc) if code not in (130, 143) else None
    if full is not None:  # the file system's limit, not the run's fault: one line, 2
        code, text = 2, disk_full_message(full, getattr(exc, "kept_folder", None))
    if isinstance(exc, Terminated):
        code = 143
    message = {1: f"{type(exc).__name__}: {text}", 130: "interrupted",
               143: "terminated (SIGTERM)"}.get(code, text)
    console.print(f"[bold red]error:[/] {escape(message)}")
    kept = getattr(exc, "kept_folder", None)
    if kept is not None:
        from ppknn.simulations.output import FAILURE

        console.print(f"what the run recorded is kept in [bold]{escape(str(kept))}[/] "
                      f"({FAILURE} says why{', with the traceback' if code == 1 else ''})")
        if _scorable(Path(kept)):
            console.print("its protocols completed and its transcript is complete: "
                          f"[bold]ppknn leakage {escape(str(kept))}[/] scores it")
    if hint:
        console.print(escape(hint))
    raise typer.Exit(code)


def _apply_sets(scenario: Any, sets: list[str]) -> Any:
    """``--set key=value`` (typed: TOML literals), in order, validated once, together."""
    from ppknn.simulations.scenario import parse_value

    items = []
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--set {item!r}: write KEY=VALUE, e.g. protocol.epsilon=0.5")
        items.append((key.strip(), parse_value(value.strip())))
    return scenario.set_keys(items) if items else scenario


def _progress_bar(bar: Progress) -> Callable[[str, int, int], None]:
    """A ``progress(phase, done, total)`` callback drawing one bar per phase."""
    tasks: dict[str, TaskID] = {}

    def progress(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = bar.add_task(escape(phase), total=total)
        bar.update(tasks[phase], completed=done, total=total)

    return progress


class _LazyProgress(Progress):
    """Progress bars that appear with the first one: an error before it prints alone."""

    def __enter__(self) -> _LazyProgress:
        return self  # started by the first add_task

    def add_task(self, *args: Any, **kwargs: Any) -> TaskID:  # noqa: D102
        if not self.live.is_started:
            self.start()
        return super().add_task(*args, **kwargs)

    def __exit__(self, *exc: Any) -> None:
        if self.live.is_started:  # never shown: nothing to close (not even a blank line)
            self.stop()


def _bar() -> Progress:
    return _LazyProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                         TimeElapsedColumn(), console=console)


@app.command()
def run(
    scenario: Optional[Path] = typer.Argument(
        None, help="Scenario TOML file; omitted: the embedded quickstart default."),
    output: Optional[Path] = typer.Option(None, help="Results folder (overrides [run].output)."),
    runtime: Optional[RuntimeKind] = _runtime_option(
        "Where the parties run (overrides [runtime].kind)."),
    address: Optional[str] = typer.Option(None, help="Ray address, e.g. 'auto' (overrides "
                                          "[runtime].address)."),
    seed: Optional[int] = typer.Option(None, help="Root seed (overrides [run].seed)."),
    sets: list[str] = _set_option("Any scenario key, typed: --set protocol.epsilon=0.5 --set "
                                  "data.dataset=pima (protocol[1].k with several protocols)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing results "
                                   "folder (only once the new run is complete)."),
    plot: bool = typer.Option(
        True, "--plot/--no-plot", help="Draw summary.svg and leakage.svg (a few hundredths "
        "of a second; later from the folder: ppknn show --plot)."),
) -> None:
    """Run a scenario (any registered protocol, or several) and write its results folder."""
    try:
        sc = _run_scenario_of(scenario, runtime, address, seed, sets)
        folder, whole = _run_into_folder(sc, output, overwrite, plot)
    except (PartyFailure, IntegrityError) as exc:  # the run failed (not its input): 3
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    except (Exception, KeyboardInterrupt) as exc:  # once a folder keeps what the run
        if getattr(exc, "kept_folder", None) is None:  # recorded: an internal error (1),
            raise  # an interrupt (130)
        _fail(exc, 130 if isinstance(exc, KeyboardInterrupt) else 1)
    _print_run(whole, folder)


def _run_scenario_of(scenario: Optional[Path], runtime: Optional[RuntimeKind],
                     address: Optional[str], seed: Optional[int], sets: list[str]) -> Any:
    """The scenario ``ppknn run`` runs: the file (or the quickstart) with the options applied."""
    sc = _load_scenario(scenario) if scenario else embedded_quickstart()
    overrides: dict[str, dict] = {}
    if runtime:
        overrides.setdefault("runtime", {})["kind"] = runtime.value
    if address:
        overrides.setdefault("runtime", {})["address"] = address
    if seed is not None:
        overrides.setdefault("run", {})["seed"] = seed
    if overrides:
        sc = sc.with_overrides(**overrides)
    return _apply_sets(sc, sets)


def _run_into_folder(sc: Any, output: Optional[Path], overwrite: bool, plot: bool
                     ) -> tuple[Path, Any]:
    """Run ``sc`` through the pipeline into its results folder; print its warnings once."""
    from ppknn.simulations.output import check_output, staged
    from ppknn.simulations.pipeline import run_scenario

    folder = check_output(Path(output or sc.run.output), overwrite=overwrite)
    if sc.runtime.kind == "ray":
        _starting_ray(sc.runtime.address)
    with warnings.catch_warnings(record=True) as caught, \
            staged(folder, overwrite=overwrite) as stage:
        warnings.simplefilter("always", PrivacyLeakWarning)
        with _bar() as bar:
            # Ray stops in the background while the run is measured and written
            whole = run_scenario(sc, stage=stage, progress=_progress_bar(bar),
                                 wait_for_shutdown=False, plot=plot)
    for message in dict.fromkeys(str(w.message) for w in caught):  # each once
        console.print(f"[yellow]warning:[/] {escape(message)}")
    return folder, whole


PHASES = (("prepare_s", "prepare"), ("startup_s", "start-up"), ("protocol_s", "protocol"),
          ("recorded_s", "recorded"), ("measure_s", "measure"), ("leakage_s", "leakage"),
          ("write_s", "write"), ("plots_s", "plots"))
"""The phases of a run, in order, as ``summary.json``'s ``timings_s`` names them."""


def phases_line(timings: dict[str, Any]) -> str:
    """``prepare 0.02 s · start-up 0.01 s · ...``: the phases a run timed, in order."""
    return " · ".join(f"{label} {float(timings[key]):.2f} s" for key, label in PHASES
                      if timings.get(key) is not None)


def _print_run(whole: Any, folder: Path) -> None:
    """The terminal summary of a run written to ``folder``."""
    from ppknn.simulations.results import summary_of

    outcome, deviations = whole.run, whole.deviations
    s = summary_of(outcome)
    out.print(_run_table(outcome, s))
    leak_path = folder / "summary.json"
    written = json.loads(leak_path.read_text()) if leak_path.is_file() else {}
    if written.get("leakage"):
        print_leakage_counts(written["leakage"], verbose=True)
    if deviations is not None:
        print_deviations(deviations.as_dict())
    out.print(escape(f"phases: {phases_line(written.get('timings_s') or s['timings_s'])}"))
    plots = "".join(f"{name}, " for name in ("summary.svg", "leakage.svg")
                    if (folder / name).is_file())
    out.print(f"results written to [bold]{escape(str(folder))}[/] ({plots}summary.json, "
              "...)")
    if not plots:
        out.print(escape(f"plots: ppknn show --plot {folder}"))
    _print_notes(folder)


def _run_table(outcome: Any, s: dict[str, Any]) -> Table:
    from ppknn.simulations import registry

    table = Table(title=escape(f"{', '.join(s['protocols'])} on {s['dataset']} - "
                               f"{s['parties']} parties, {s['queries']} queries "
                               f"({s['runtime']} runtime)"))
    table.add_column("measure")
    table.add_column("value", justify="right")
    for o in outcome.outcomes:
        r = s["results"][o.name]
        table.add_row(f"[bold]{escape(o.name)}[/] accuracy", f"{r['accuracy']:.4f}")
        table.add_row(escape(f"  {r['baseline']['name']}"), f"{r['baseline']['accuracy']:.4f}")
        eps = r["privacy"]["epsilon"]
        table.add_row("  privacy", escape(r["privacy"]["guarantee"]) if eps is None else
                      f"ε = {eps:.4g}, δ = {r['privacy']['delta']:.3g}")
        for label, value in registry.get(o.name).headline(r):
            table.add_row(escape(f"  {label}"), escape(str(value)))
    table.add_row("messages / bytes", f"{s['communication']['messages']} / "
                                      f"{s['communication']['bytes']:,}")
    table.add_row("randomness / channels",
                  escape(f"{s['randomness_mode']} / {s['channels']}"))
    return table


def _print_notes(folder: Path) -> None:
    from ppknn.simulations.output import leftover_notes

    for note in leftover_notes(folder):  # what killed runs of this output left beside it
        out.print(f"[yellow]leftover:[/] {escape(note)}")
    if "working_dir_files" in Path.cwd().resolve().parts and not Path(folder).is_absolute():
        # a job submitted with `ray job submit --working-dir`: its working directory is a
        # temporary copy on the head, which Ray deletes; say where the folder really is
        out.print(f"[yellow]note:[/] this job runs in Ray's temporary copy of its working "
                  f"directory on the head: {escape(str(Path(folder).resolve()))}; pass "
                  "--output with an absolute path to keep the results (README: \"On a real "
                  "cluster\")")


@app.command()
def leakage(results_dir: Path = typer.Argument(..., help="A results folder of `ppknn run`."),
            top: int = typer.Option(20, parser=_at_least(1), metavar="<int>",
                                    help="Show at most this many parties in the disclosure "
                                    "table (the most disclosed) and this many rows in the "
                                    "leakage table (those above their bound first); "
                                    "disclosure.csv and leakage.csv have them all."),
            ) -> None:
    """Recompute the leakage table (and the ring's disclosure) from a saved transcript.

    Writes ``leakage.csv`` and ``leakage.svg`` (and, for the ring,
    ``disclosure.csv``) into the folder: the same rows ``ppknn run`` wrote.
    """
    from ppknn.core.leakage import DisclosureReport
    from ppknn.core.transcript import Transcript
    from ppknn.simulations import leakage as leakage_table
    from ppknn.simulations import registry
    from ppknn.simulations.output import FAILURE, check_complete, rewriting
    from ppknn.simulations.results import write_disclosure_csv
    from ppknn.simulations.scenario import DEFAULT_PROTOCOL

    try:
        public_path = results_dir / "public.json"
        if not public_path.is_file():
            raise ConfigError(f"{str(results_dir)!r} is not a results folder (no public.json)")
        public = read_json(public_path, "a run's public facts")
        if (results_dir / FAILURE).is_file():
            read_json(results_dir / FAILURE, "a failure record")
        if (results_dir / "scenario.json").is_file():  # read again when the table is scored
            read_json(results_dir / "scenario.json", "a run's scenario")
        try:
            failed_after = check_complete(results_dir)
        except PpknnError:
            raise
        except (OSError, ValueError) as exc:  # a damaged record check_complete reads
            raise ConfigError(f"{str(results_dir)!r}: its records cannot be read ({exc}); "
                              "the folder is damaged") from None
        if failed_after is not None:
            console.print(f"[yellow]note:[/] the run failed after its protocols completed "
                          f"({escape(why_failed(failed_after))}); scoring its complete transcript")
        # results folders written before the protocol registry hold the ring's facts alone
        per_protocol = public.get("protocols", {DEFAULT_PROTOCOL: public})
        transcript = Transcript(results_dir / "transcript")
        reports = {name: registry.get(name).leakage(transcript, facts)
                   for name, facts in per_protocol.items()}
        rows = leakage_table.recompute(results_dir)
        # under the folder's lock; each file replaces its namesake, never writing through a link
        with rewriting(results_dir) as scratch:
            leakage_table.write_table(rows, scratch / "leakage.csv")
            leakage_table.plot_table(rows, scratch / "leakage.svg",
                                     title=str(public.get("run_id", results_dir.name)))
            if failed_after is not None:  # the summary it kept lacks the table: add it
                _add_leakage_summary(results_dir / "summary.json", leakage_table.summary(rows),
                                     scratch / "summary.json")
            for report in reports.values():
                if isinstance(report, DisclosureReport):
                    write_disclosure_csv(report, scratch / "disclosure.csv")
    except PpknnError as exc:
        _fail(exc, 2)
    for report in reports.values():
        if isinstance(report, DisclosureReport):
            print_disclosure(report, results_dir, top)
    print_leakage(rows, top, f"leakage from {results_dir}/transcript")


def _add_leakage_summary(path: Path, section: dict[str, Any], into: Path) -> None:
    """Write a failed run's ``summary.json`` with the leakage section to ``into``."""
    if not path.is_file():
        return
    from ppknn.simulations.reporting import jsonio

    summary = read_json(path, "a run's summary")
    summary["leakage"] = section
    into.write_text(jsonio.dumps(summary, default=float))


@app.command()
def audit(
    scenario: Path = typer.Argument(..., help="Scenario TOML file ([audit] sets trials, the "
                                    "record removed, the confidence)."),
    trials: Optional[int] = typer.Option(None, parser=_at_least(100, _max_audit_trials),
                                         metavar="<int>",
                                         help="Runs per input, 100 to 1,000,000 (overrides "
                                         "[audit].trials; default 200 when unset)."),
    output: Optional[Path] = typer.Option(None, help="Folder for audit.csv and audit.json "
                                          "(default: [run].output + '-audit')."),
    runtime: Optional[RuntimeKind] = _runtime_option(
        "'ray' fans the trials out over Ray, 'inprocess' runs them here (overrides "
        "[runtime].kind)."),
    sets: list[str] = _set_option("Any scenario key, typed (e.g. --set protocol.epsilon=0.5)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing audit "
                                   "folder (only once the new audit is complete)."),
    certify: float = typer.Option(5.0, "--certify", min=0.01, max=50.0, metavar="EPS",
                                  help="The ε the worst-case audit draws enough trials to "
                                  "certify (its power); default 5."),
    replay: bool = typer.Option(False, "--replay", help="Rerun the whole protocol per trial "
                                "on the scenario's own record (slow; default: the "
                                "vectorised worst-case audit)."),
) -> None:
    """Empirical ε lower bounds: each DP release on its most revealing neighbouring inputs."""
    from ppknn.simulations.leakage.audit import audit_scenario, audit_worst_case, write_audit
    from ppknn.simulations.output import check_output, staged

    try:
        sc = _apply_sets(_load_scenario(scenario), sets)
        n = trials or sc.audit.trials or (200 if replay else None)
        folder = check_output(Path(output or f"{sc.run.output}-audit"), overwrite=overwrite)
        use_ray = sc.runtime.kind == "ray" if runtime is None else runtime is RuntimeKind.ray
        if use_ray and replay:
            _starting_ray(sc.runtime.address)
        with _bar() as bar:
            if replay:
                runs = audit_scenario(sc, trials=n, progress=_progress_bar(bar),
                                      use_ray=use_ray)
            else:
                runs = audit_worst_case(sc, certify=certify, trials=n,
                                        progress=_progress_bar(bar))
        with staged(folder, overwrite=overwrite) as stage:
            write_audit(runs, stage)
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    how = (f"{n} runs per neighbouring input" if replay else
           f"worst-case neighbours, draws planned to certify ε = {certify:g}")
    print_leakage([r.row for r in runs], 50, f"audit of {scenario}: {how}", csv="audit.csv")
    out.print(f"audit written to [bold]{escape(str(folder))}[/] (audit.csv, audit.json)")


@app.command()
def show(results_dir: Path = typer.Argument(..., help="A folder written by `ppknn run`, "
                                            "`sweep`, `audit`, `chaos` or `compare`."),
         plot: bool = typer.Option(False, "--plot", help="Also render a run's summary.svg "
                                   "and leakage.svg from the folder's files.")) -> None:
    """Print a run's (or a sweep's, audit's, chaos run's, comparison's) summary."""
    try:
        show_folder(results_dir)
        if plot:
            _plot_folder(results_dir)
    except PpknnError as exc:
        _fail(exc, 2)


def _plot_folder(folder: Path) -> None:
    """``ppknn show --plot``: a run folder's plots, each replacing its namesake (no link)."""
    from ppknn.simulations.output import rewriting
    from ppknn.simulations.results import plot_folder

    if not (folder / "summary.json").is_file() or not (folder / "public.json").is_file():
        raise ConfigError(f"{str(folder)!r}: --plot renders a run's folder (summary.json and "
                          "public.json); this is not one")
    with rewriting(folder) as scratch:
        written = plot_folder(folder, scratch)
    out.print(escape(f"plots: {', '.join(str(folder / p.name) for p in written)}"))


@app.command()
def protocols() -> None:
    """List the registered protocols, their roles and privacy guarantees."""
    from ppknn.simulations import registry

    table = Table(title=escape("registered protocols ([protocol] name = ...)"))
    for col in ("name", "protocol", "roles", "guarantee"):
        table.add_column(col, overflow="fold")
    for plugin in registry.plugins():
        roles = "; ".join(f"{r.name} x {r.count}" for r in plugin.roles)
        table.add_row(*(escape(str(v)) for v in (plugin.name, plugin.title, roles,
                                                 plugin.guarantee)))
    out.print(table)
    from ppknn.simulations.leakage import attacks

    out.print(escape("attacks of the leakage table ([[adversary]] attack = ...; * = scored "
                     "after every run):"))
    for plugin in registry.plugins():
        names = [f"{a}{'*' if attacks.get(plugin.name, a).default else ''}"
                 for a in attacks.allowed(plugin.name)]
        out.print(escape(f"  {plugin.name}: {', '.join(names) or '-'}"))


@app.command()
def reproduce(
    name: str = typer.Argument(..., help="Which paper: gursoy (DP r-N/k-NN), lepert (DP-TT), "
                                         "mukherjee (PCA + Laplace), xiong (PP-kNN ring) or "
                                         "zafarani (DP Naive Bayes)."),
    quick: bool = typer.Option(False, "--quick", help="Small settings (under two minutes)."),
    output: Optional[Path] = typer.Option(None, help="Tables and plots folder "
                                          "(default results/reproduce/NAME)."),
    runtime: Optional[RuntimeKind] = _runtime_option("Where the parties run (default "
                                                     "inprocess)."),
    ray_runtime: bool = typer.Option(False, "--ray", hidden=True, help="= --runtime ray."),
    docs: Optional[Path] = typer.Option(
        None, "--docs", help="Write the report as ROOT/docs/reproductions/NAME.md (the "
        "committed reports: e.g. --docs .); by default it goes into the output folder and "
        "nothing outside it is touched."),
    option: list[str] = _set_option("Extra setting of the reproduction, typed (e.g. "
                                    "n_points=1000000 for lepert)."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Run again over a folder that holds a finished "
        "reproduction, or start an unfinished one afresh. The run goes into the hidden "
        "staging folder .OUTPUT.partial-reproduce-NAME beside the output, which replaces "
        "the old folder only once the run is complete; a run that stops (even killed) "
        "keeps its finished runs there and the same command resumes from them. A staging "
        "folder left with other settings (--quick, --runtime, --set) is refused, never "
        "mixed in: resume it with its settings, or delete it to start afresh."),
) -> None:
    """Re-run a paper's experiments: CSV + PNG per figure and a Markdown report.

    An output folder holding an unfinished run of the same reproduction, with its
    finished runs kept in grid-rows/, is resumed (those runs are reused); a finished
    one is refused unless --overwrite, whose staging folder is resumed the same way.
    One run at a time writes an output: a second is refused while the first runs.
    """
    from ppknn.simulations import reproduce as registry
    from ppknn.simulations.output import output_lock, swap_in

    folder = Path(output or Path("results") / "reproduce" / name)
    again = ""  # the command that resumes this run (once its settings are known)
    try:
        module = registry.load(name)
        kind = (_with_alias(runtime, ray_runtime, "--ray", RuntimeKind.ray)
                or RuntimeKind.inprocess)
        params = inspect.signature(module.run).parameters
        kwargs = _reproduce_settings(name, params, option)
        if docs is not None and not docs.is_dir():
            raise ConfigError(f"--docs {str(docs)!r} is not a folder; give the checkout's "
                              "root (e.g. --docs .)")
        facts = {"quick": quick, "runtime": kind.value, "settings": dict(kwargs)}
        again = _reproduce_command(name, folder, facts, docs, overwrite=overwrite)
        if "log" in params:
            kwargs["log"] = lambda text: console.print(f"{escape(name)}: {escape(str(text))}")
        with output_lock(folder):
            where = _reproduce_where(folder, name, facts, docs, overwrite=overwrite)
            if kind is RuntimeKind.ray:
                _starting_ray(None)
            report = _reproduce_in(where, folder, module, name, docs, facts, kwargs)
            if where != folder:  # the staging folder is complete: the old folder goes now
                swap_in(where, folder, overwrite=True)
    except PartyFailure as exc:
        _fail(exc, 3, _resume_hint(exc, name, folder, again))
    except PpknnError as exc:
        _fail(exc, 2, _resume_hint(exc, name, folder, again))
    except (Exception, KeyboardInterrupt) as exc:  # the folder keeps what it finished
        if getattr(exc, "kept_folder", None) is None:
            raise
        _fail(exc, 130 if isinstance(exc, KeyboardInterrupt) else 1,
              _resume_hint(exc, name, folder, again))
    out.print(f"tables and plots in [bold]{escape(str(folder))}[/]; report "
              f"[bold]{escape(str(report))}[/]")


def _reproduce_settings(name: str, params: Any, option: list[str]) -> dict[str, object]:
    """The ``--set KEY=VALUE`` settings of reproduction ``name`` (``params``: its run's)."""
    from ppknn.simulations.scenario import parse_value

    fixed = ("output", "quick", "runtime", "report", "log")
    settings = [p for p in params if p not in fixed]
    kwargs: dict[str, object] = {}
    for item in option:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"--set {item!r}: write KEY=VALUE; the settings of "
                              f"reproduction {name!r}: {settings or 'none'}")
        if key not in settings:
            raise ConfigError(f"--set {item!r}: reproduction {name!r} has no setting "
                              f"{key!r}; its settings: {settings or 'none'}")
        kwargs[key] = parse_value(value.strip())
    return kwargs


def _reproduce_command(name: str, folder: Path, facts: dict[str, Any], docs: Path | None, *,
                       overwrite: bool) -> str:
    """The ``ppknn reproduce`` command line of a run with ``facts`` (its settings)."""
    import shlex

    from ppknn.simulations.scenario import parse_value

    words = ["ppknn", "reproduce", name, "--output", str(folder)]
    if overwrite:
        words.append("--overwrite")
    if facts.get("quick"):
        words.append("--quick")
    if facts.get("runtime", RuntimeKind.inprocess.value) != RuntimeKind.inprocess.value:
        words += ["--runtime", str(facts["runtime"])]
    for key, value in (facts.get("settings") or {}).items():
        plain = isinstance(value, str) and parse_value(value) == value
        words += ["--set", f"{key}={value if plain else json.dumps(value)}"]
    if docs is not None:
        words += ["--docs", str(docs)]
    return " ".join(shlex.quote(word) for word in words)


def _reproduce_where(folder: Path, name: str, facts: dict[str, Any], docs: Path | None, *,
                     overwrite: bool) -> Path:
    """Where a reproduction writes: ``folder`` itself, or its staging folder (``--overwrite``).

    Refuses (``ConfigError``) what must not run and says what the run reuses. Called
    with the output's lock held, so the folders cannot change under it.
    """
    from ppknn.simulations import reproduce as registry
    from ppknn.simulations.output import check_output

    state = registry.folder_state(folder, name)
    stage = registry.stage(folder, name)
    kept = registry.folder_state(stage, name)
    record = registry.read_marker(stage) if kept.kind != "empty" else None
    ours = record is not None and kept.kind != "other"
    resume_kept = ""
    if ours:
        assert record is not None
        resume_kept = _reproduce_command(name, folder, {k: record.get(k) for k in
                                                        registry.SETTINGS}, docs,
                                         overwrite=True)
    if not overwrite:
        return _reproduce_in_place(folder, name, state, stage, resume_kept if ours else "")
    check_output(folder, overwrite=True)
    if kept.kind != "empty":
        return _resume_stage(folder, name, facts, stage, kept, record, resume_kept)
    if state.kind == "empty":
        return folder
    console.print(f"[yellow]note:[/] running in {escape(str(stage))}; {escape(str(folder))} is "
                  "replaced only once the run is complete. If the run stops, its finished runs "
                  f"stay there and the same command resumes from them: "
                  f"{escape(_reproduce_command(name, folder, facts, docs, overwrite=True))}")
    return stage


def _reproduce_in_place(folder: Path, name: str, state: Any, stage: Path,
                        resume_kept: str) -> Path:
    """``folder`` itself, when a run without ``--overwrite`` may write there (else refused).

    ``resume_kept``: the command resuming an unfinished ``--overwrite`` run kept in
    ``stage`` (empty when none is).
    """
    from ppknn.simulations import reproduce as registry
    from ppknn.simulations.output import check_output

    ours = bool(resume_kept)
    if state.kind == "finished":
        also = (f"; the unfinished --overwrite run kept in {str(stage)!r} resumes with "
                f"`{resume_kept}`" if ours else "")
        raise ConfigError(f"output {str(folder)!r} already holds {state.detail}; pass "
                          "--overwrite to run it again (the old folder is replaced only "
                          "once the new run is complete) or choose another --output"
                          f"{also}")
    if state.kind == "other":  # a file, another reproduction, ...
        if registry.read_marker(folder) is None:
            check_output(folder, overwrite=False)
        raise ConfigError(f"output {str(folder)!r} holds {state.detail}, not a "
                          f"reproduction of {name!r}; choose another --output (or pass "
                          "--overwrite to replace it)")
    if state.kind == "empty":
        check_output(folder, overwrite=False)
    elif state.kind == "resumable":  # in place: even a killed run keeps its finished runs
        console.print(f"[yellow]note:[/] {escape(str(folder))} holds "
                      f"{escape(state.detail)}: resuming it, reusing its "
                      f"{count(state.runs, 'finished run')} in "
                      f"{escape(str(folder / registry.ROWS))} (--overwrite starts "
                      "afresh)")
    else:
        console.print(f"[yellow]note:[/] {escape(str(folder))} holds "
                      f"{escape(state.detail)} that kept no finished runs: running it "
                      "again there (--overwrite starts afresh)")
    if ours:
        console.print(f"[yellow]note:[/] {escape(str(stage))} keeps an unfinished "
                      "--overwrite run that this run does not use; "
                      f"{escape(resume_kept)} resumes it")
    return folder


def _resume_stage(folder: Path, name: str, facts: dict[str, Any], stage: Path, kept: Any,
                  record: dict[str, Any] | None, resume_kept: str) -> Path:
    """The staging folder of an ``--overwrite`` run that ``stage`` keeps (else refused)."""
    from ppknn.simulations import reproduce as registry

    ours = record is not None and kept.kind != "other"
    if not ours:
        raise ConfigError(f"{str(stage)!r}, the staging folder of output {str(folder)!r}, "
                          f"holds {kept.detail}, not a run of reproduction {name!r} that "
                          "ppknn left there; it is never touched: move or delete it")
    assert record is not None
    differ = registry.differing_settings(record, facts)
    if differ:
        what = "; ".join(f"{key} {was!r} there, {now!r} here"
                         for key, (was, now) in differ.items())
        raise ConfigError(f"{str(stage)!r} keeps an unfinished --overwrite run of output "
                          f"{str(folder)!r} with other settings ({what}); runs of other "
                          f"settings are never mixed: `{resume_kept}` resumes it, or "
                          "delete that folder to start afresh with these settings")
    if kept.kind == "finished":  # stopped between its last write and the swap
        what = ("completing the --overwrite run kept in {}, which finished but did not "
                "replace the output yet (its finished runs are reused)")
    elif kept.kind == "resumable":
        what = ("resuming the unfinished --overwrite run kept in {}, reusing its "
                f"{count(kept.runs, 'finished run')}")
    else:
        what = "resuming the unfinished --overwrite run kept in {}, which kept no finished run"
    console.print(f"[yellow]note:[/] {what.format(escape(str(stage)))}; "
                  f"{escape(str(folder))} stays as it is until the run is complete "
                  "(delete the staging folder to start afresh)")
    return stage


def _reproduce_in(where: Path, folder: Path, module: Any, name: str, docs: Path | None,
                  facts: dict[str, Any], kwargs: dict[str, Any]) -> Path:
    """Run reproduction ``name`` writing into ``where`` (``folder`` itself, or its stage).

    Returns where the report is once ``where`` is ``folder``. Before the run ``where``
    says which reproduction it holds and with which settings (:data:`reproduce.MARKER`)
    and after it that it finished. A run that fails keeps what it wrote in ``where``,
    with ``failure.json`` saying why (the next run resumes from its finished runs); one
    refused before it wrote anything leaves nothing behind.
    """
    import shutil

    from ppknn.simulations import reproduce as registry
    from ppknn.simulations.output import FAILURE, MARKER, failure_record, refuse_links, write_marker

    report = registry.report_path(name, docs) if docs is not None else folder / f"{name}.md"
    written = report if docs is not None else where / f"{name}.md"
    in_place = where == folder
    created = not where.exists()
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"output {str(where)!r} cannot be created: {exc.strerror}") from None
    refuse_links(where)  # a run resumed in place never writes through a link planted there
    ours = [where / registry.MARKER, where / MARKER]
    new = [p for p in ours if not p.exists()]
    registry.write_marker(where, name=name, finished=False, **facts)
    if in_place:
        write_marker(where)
    try:
        module.run(where, quick=facts["quick"], runtime=facts["runtime"], report=written,
                   **kwargs)
    except BaseException as exc:
        if not any(p.is_file() and p not in ours and p.name != FAILURE
                   for p in where.rglob("*")):
            for p in new:  # refused before it wrote anything: nothing is kept
                p.unlink(missing_ok=True)
            if created:
                shutil.rmtree(where, ignore_errors=True)
        else:
            from ppknn.simulations.reporting import jsonio

            (where / FAILURE).write_text(jsonio.dumps(failure_record(exc)))
            try:
                exc.kept_folder = where  # type: ignore[attr-defined]
            except AttributeError:
                pass
        raise
    shown = report.relative_to(folder) if report.is_relative_to(folder) else report.resolve()
    registry.write_marker(where, name=name, finished=True, report=str(shown), **facts)
    (where / FAILURE).unlink(missing_ok=True)
    return report


def _resume_hint(exc: BaseException, name: str, folder: Path, again: str) -> str:
    """How to resume a failed reproduction from the finished runs it kept (or ``""``)."""
    from ppknn.simulations import reproduce as registry

    kept = getattr(exc, "kept_folder", None)
    if kept is None:
        return ""
    state = registry.folder_state(Path(kept), name)
    if state.kind != "resumable":
        return ""
    runs = count(state.runs, "finished run")
    if Path(kept) == folder:
        return f"the same command resumes it, reusing its {runs}"
    if Path(kept) == registry.stage(folder, name):
        return (f"{kept} keeps its {runs} ({folder} is untouched); the same command resumes "
                f"there: {again}")
    return f"`ppknn reproduce {name} --output {kept}` resumes from its {runs}"


@app.command()
def sweep(
    file: Path = typer.Argument(..., help="Sweep TOML file (base scenario, grid, seeds)."),
    runtime: Optional[RuntimeKind] = _runtime_option(
        "'ray': fan the runs out over Ray tasks; 'inprocess': run them here, one by one "
        "(overrides [sweep].parallel)."),
    sequential: bool = typer.Option(False, "--sequential", hidden=True,
                                    help="= --runtime inprocess."),
    output: Optional[Path] = typer.Option(None, help="Overrides [sweep].output."),
    chunk_size: Optional[int] = typer.Option(None, parser=_at_least(1), metavar="<int>",
                                             help="Runs per Ray task; overrides "
                                             "[sweep].chunk_size."),
    sets: list[str] = _set_option("A base-scenario key, typed: --set protocol.epsilon=0.5."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing sweep "
                                   "folder (only once the new table is complete)."),
) -> None:
    """Run a grid of scenarios x seeds (any protocol), fanned out over Ray; one table."""
    from ppknn.simulations.output import check_output
    from ppknn.simulations.scenario import parse_value
    from ppknn.simulations.sweep import load_sweep, run_sweep, with_base_keys

    try:
        kind = _with_alias(runtime, sequential, "--sequential", RuntimeKind.inprocess)
        spec = _load(load_sweep, file, "sweep file")
        items = []
        for item in sets:
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise ConfigError(f"--set {item!r}: write KEY=VALUE, e.g. protocol.k=5")
            items.append((key.strip(), parse_value(value.strip())))
        spec = with_base_keys(spec, items)
        if chunk_size is not None:
            spec = spec.model_copy(update={
                "sweep": spec.sweep.model_copy(update={"chunk_size": chunk_size})})
        n_runs = len(spec.runs())
        folder = check_output(output or Path(spec.sweep.output), overwrite=overwrite)
        parallel = ("sequential" if kind is RuntimeKind.inprocess
                    else "ray" if kind is RuntimeKind.ray else None)
        if (parallel or spec.sweep.parallel) == "ray":
            _starting_ray(spec.sweep.address)
        with _bar() as bar:
            task = bar.add_task(escape(f"sweep {spec.sweep.name}"), total=n_runs)
            rows = run_sweep(spec, parallel=parallel, output=folder, overwrite=overwrite,
                             progress=lambda done, total: bar.update(task, completed=done))
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    print_sweep(rows, f"sweep {spec.sweep.name}")
    out.print(f"{count(len(rows), 'run')}; results written to [bold]{escape(str(folder))}[/] "
              f"(sweep.csv, sweep.parquet, sweep.png)")


@app.command()
def chaos(
    scenario: Path = typer.Argument(..., help="Scenario TOML file to run under faults."),
    output: Path = typer.Option(Path("results/chaos"), help="Folder for one transcript per "
                                "fault and chaos.json."),
    party: Optional[str] = typer.Option(None, help="The faulty party (default: the second)."),
    kind: list[str] = typer.Option([], "--kind", metavar="KIND", help="A fault kind, repeatable "
                                   "(default: all): kill, raise, hang, slow, memory, drop, "
                                   "duplicate, reorder, tamper."),
    method: str = typer.Option("*", help="The party method that fails, one of the party's "
                               "methods (a bad name lists them), or '*' for any."),
    occurrence: int = typer.Option(2, parser=_at_least(1), metavar="<int>",
                                   help="Which matching call fails (1 = the first)."),
    runtime: Optional[RuntimeKind] = _runtime_option(
        "Where the parties run (overrides [runtime].kind)."),
    sets: list[str] = _set_option("Any scenario key, typed (e.g. --set "
                                  "runtime.party_timeout_s=2)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing chaos "
                                   "folder (only once every fault has run)."),
) -> None:
    """Inject each fault into one party and check every run fails cleanly (exit 1 if not)."""
    from ppknn.simulations.faults import chaos_plan, run_chaos
    from ppknn.simulations.output import check_output, staged

    try:
        sc = _load_scenario(scenario)
        if runtime:
            sc = sc.with_overrides(runtime={"kind": runtime.value})
        sc = _apply_sets(sc, sets)
        if output.is_dir() and any(output.iterdir()) and not overwrite:
            raise ConfigError(f"output {str(output)!r} already exists; pass --overwrite to "
                              "replace it (only once every fault has run) or choose another "
                              "--output")
        folder = check_output(output, overwrite=overwrite)
        title = (f"fault injection: {scenario} ({sc.runtime.kind} runtime, party_timeout_s "
                 f"{sc.runtime.party_timeout_s:g})")

        def row(fault: Any, o: Any) -> None:
            ended = o.error or ("completed" if o.fired else
                                "completed: the fault never fired (lower --occurrence)")
            console.print(escape(f"{fault.kind}: {ended} in {o.seconds:.1f} s"))

        cases = chaos_plan(sc, party=party, kinds=kind or None, method=method,
                           occurrence=occurrence)  # every argument checked before a run
        if sc.runtime.kind == "ray":
            _starting_ray(sc.runtime.address)
        with staged(folder, overwrite=overwrite) as stage:
            outcomes = run_chaos(sc, stage, cases=cases, progress=row)
    except PpknnError as exc:
        _fail(exc, 2)
    except (Exception, KeyboardInterrupt) as exc:
        if getattr(exc, "kept_folder", None) is None:
            raise
        _fail(exc, 130 if isinstance(exc, KeyboardInterrupt) else 1)
    print_chaos_rows(title, [o.as_dict() for o in outcomes])
    bad = [o.fault.kind for o in outcomes if not o.ok]
    out.print(f"{len(outcomes) - len(bad)} of {len(outcomes)} faults failed cleanly; "
              f"details in [bold]{escape(str(folder))}/chaos.json[/]")
    if bad:
        raise typer.Exit(1)


@app.command()
def datasets() -> None:
    """List the datasets a scenario can name."""
    from ppknn.core.data import available_datasets, data_dir

    try:
        folder, names = data_dir(), available_datasets()
    except PpknnError as exc:  # PPKNN_DATA_DIR naming a folder without a manifest
        _fail(exc, 2)
    out.print(f"data directory: {escape(str(folder))}")
    for name in names:
        out.print(f"  {escape(name)}")
    out.print("  synthetic:classification?rows=N&features=D&classes=C  (generated, any size)")
    out.print("  file:///path/data.csv?label=COL, s3://..., gs://..., hdfs://...  (a CSV by URI; "
              "PPKNN_DATA_DIR may be a URI too)")


@app.command()
def compare(
    spec: Optional[Path] = typer.Argument(
        None, help="Comparison spec TOML (datasets, protocols with privacy levels, seeds); "
        "or none, with --quick."),
    quick: bool = typer.Option(False, "--quick", help="The embedded quick spec instead of a "
                               "file: every protocol, two levels, two bundled datasets, two "
                               "seeds."),
    runtime: Optional[RuntimeKind] = _runtime_option(
        "'ray': fan the runs out over Ray tasks; 'inprocess': one by one, with no Ray at all "
        "(the cells of [compare.runtime_compare] are then skipped, with a note) (overrides "
        "[compare].parallel; the table is the same)."),
    output: Optional[Path] = typer.Option(None, help="Overrides [compare].output."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing folder "
                                   "(only once the new comparison is complete)."),
) -> None:
    """All protocols on the same data at matched privacy: one table, plots and a report."""
    import time

    from ppknn.simulations.compare import (
        load_comparison,
        quick_spec,
        run_comparison,
        write_report,
    )
    from ppknn.simulations.output import check_output, staged

    try:
        if spec is not None and quick:
            raise ConfigError(f"give a comparison spec ({str(spec)!r}) or --quick (the "
                              "embedded quick spec), not both")
        if spec is None and not quick:
            raise ConfigError("give a comparison spec file, or --quick for the embedded one")
        comparison = (load_comparison(quick_spec()) if spec is None
                      else _load(load_comparison, spec, "comparison spec"))
        folder = check_output(output or Path(comparison.compare.output), overwrite=overwrite)
        parallel = ("sequential" if runtime is RuntimeKind.inprocess
                    else "ray" if runtime is RuntimeKind.ray else comparison.compare.parallel)
        jobs = comparison.jobs()  # validates every cell before anything runs
        on_ray = sum(1 for meta, _ in jobs if meta["ray_layout"])
        if runtime is RuntimeKind.inprocess and on_ray:
            console.print("[yellow]note:[/] " + escape(
                f"--runtime inprocess: {count(on_ray, 'cell')} of [compare.runtime_compare] "
                f"{'is' if on_ray == 1 else 'are'} not rerun on Ray (the table has no Ray "
                "timings); leave out --runtime inprocess to measure them"))
            comparison = comparison.model_copy(update={"compare": comparison.compare.model_copy(
                update={"runtime_compare": None})})
            jobs = comparison.jobs()
            on_ray = 0
        if parallel == "ray" or on_ray:
            _starting_ray(comparison.compare.address)
        command = "ppknn compare " + ("--quick" if spec is None else str(spec)) + (
            f" --runtime {runtime.value}" if runtime is not None else "")
        t0 = time.perf_counter()
        with staged(folder, overwrite=overwrite) as stage, _bar() as bar:
            task = bar.add_task(escape(f"compare {comparison.compare.name}"), total=len(jobs))
            rows = run_comparison(comparison, parallel=parallel,
                                  progress=lambda done, total: bar.update(task, completed=done))
            write_report(comparison, rows, stage, command=command,
                         seconds=time.perf_counter() - t0, quick=spec is None,
                         parallel=parallel)
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    out.print(f"{count(len(rows), 'run')}; report [bold]{escape(str(folder))}/compare.md[/] (+ "
              "compare.parquet, compare-aggregate.csv, plots)")


def main() -> None:
    """Console-script entry point.

    SIGTERM is handled as Ctrl-C is: the run stops, what it recorded is kept and said, and
    the exit code is 143 (128 + 15) rather than a silent kill.
    """
    import signal

    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        app(prog_name="ppknn")
    except SystemExit as exc:
        context = exc.__context__
        while context is not None and not isinstance(context, Terminated):
            context = context.__context__
        if context is not None and exc.code != 143:  # click's "Aborted!" path
            console.print("[bold red]error:[/] terminated (SIGTERM)")
            raise SystemExit(143) from None
        raise


if __name__ == "__main__":  # pragma: no cover
    main()
