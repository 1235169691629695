"""The ``ppknn`` command line (also ``python -m ppknn``)."""

from __future__ import annotations

import inspect
import json
import os
import warnings
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
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

from ppknn.core.errors import IntegrityError, PartyFailure, PpknnError, PrivacyLeakWarning

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Multi-party simulations of privacy-preserving nearest-neighbour "
                       "classification.")
console = Console(stderr=True, soft_wrap=True)
out = Console()


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


def embedded_quickstart() -> Any:
    """The scenario ``ppknn run`` runs without a file (``scenarios/quickstart.toml``)."""
    from importlib.resources import as_file, files

    from ppknn.simulations.scenario import load_scenario

    with as_file(files("ppknn.simulations") / "quickstart.toml") as path:
        return load_scenario(path)


def _starting_ray(address: str | None) -> None:
    """Say on stderr that Ray is starting (it can take 10-20 s) or being joined.

    A new local Ray instance enables token authentication by default and warns
    that it did; setting ``RAY_AUTH_MODE=token`` first keeps exactly that
    (authentication on, a token generated if missing) without the warning. An
    explicit ``RAY_AUTH_MODE``, or joining a running cluster, is left alone.
    """
    joining = address or os.environ.get("RAY_ADDRESS")
    if joining:
        console.print(f"connecting to Ray at {joining}...")
        return
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    console.print("starting Ray (a local instance; the first start takes 10-20 s)...")


def _fail(exc: BaseException, code: int) -> None:
    """Print the error (and where a failed run's record is kept); exit with ``code``."""
    message = {1: f"{type(exc).__name__}: {exc}", 130: "interrupted"}.get(code, str(exc))
    console.print(f"[bold red]error:[/] {escape(message)}")
    kept = getattr(exc, "kept_folder", None)
    if kept is not None:
        from ppknn.simulations.output import FAILURE, check_complete

        console.print(f"what the run recorded is kept in [bold]{escape(str(kept))}[/] "
                      f"({FAILURE} says why{', with the traceback' if code == 1 else ''})")
        try:
            scorable = check_complete(kept) is not None
        except PpknnError:
            scorable = False
        if scorable:
            console.print("its protocols completed and its transcript is complete: "
                          f"[bold]ppknn leakage {escape(str(kept))}[/] scores it")
    raise typer.Exit(code)


def _apply_sets(scenario: Any, sets: list[str]) -> Any:
    """``--set key=value`` (typed: TOML literals), in order, validated once, together."""
    from ppknn.simulations.scenario import parse_value

    items = []
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise PpknnError(f"--set {item!r}: write KEY=VALUE, e.g. protocol.epsilon=0.5")
        items.append((key.strip(), parse_value(value.strip())))
    return scenario.set_keys(items) if items else scenario


@app.command()
def run(
    scenario: Optional[Path] = typer.Argument(  # noqa: UP007 - typer needs Optional
        None, help="Scenario TOML file; omitted: the embedded quickstart default."),
    output: Optional[Path] = typer.Option(None, help="Results folder (overrides [run].output)."),  # noqa: UP007
    runtime: Optional[RuntimeKind] = typer.Option(None, help="Where the parties run (overrides [runtime].kind)."),  # noqa: UP007,E501
    address: Optional[str] = typer.Option(None, help="Ray address, e.g. 'auto' (overrides [runtime].address)."),  # noqa: UP007,E501
    seed: Optional[int] = typer.Option(None, help="Root seed (overrides [run].seed)."),  # noqa: UP007
    sets: list[str] = typer.Option([], "--set", help="Any scenario key, typed: "
                                   "--set protocol.epsilon=0.5 --set data.dataset=pima "
                                   "(protocol[1].k with several protocols)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing results "
                                   "folder (only once the new run is complete)."),
) -> None:
    """Run a scenario (any registered protocol, or several) and write its results folder."""
    from ppknn.simulations.output import staged
    from ppknn.simulations.results import run_scenario, summary_of
    from ppknn.simulations.scenario import load_scenario

    try:
        sc = load_scenario(scenario) if scenario else embedded_quickstart()
        overrides: dict[str, dict] = {}
        if runtime:
            overrides.setdefault("runtime", {})["kind"] = runtime.value
        if address:
            overrides.setdefault("runtime", {})["address"] = address
        if seed is not None:
            overrides.setdefault("run", {})["seed"] = seed
        if overrides:
            sc = sc.with_overrides(**overrides)
        sc = _apply_sets(sc, sets)
        folder = Path(output or sc.run.output)
        if sc.runtime.kind == "ray":
            _starting_ray(sc.runtime.address)
        with warnings.catch_warnings(record=True) as caught, \
                staged(folder, overwrite=overwrite) as stage:
            warnings.simplefilter("always", PrivacyLeakWarning)
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), console=console, transient=False) as bar:
                tasks: dict[str, TaskID] = {}

                def progress(phase: str, done: int, total: int) -> None:
                    if phase not in tasks:
                        tasks[phase] = bar.add_task(phase, total=total)
                    bar.update(tasks[phase], completed=done, total=total)

                # Ray stops in the background while the run is measured and written
                whole = run_scenario(sc, stage=stage, progress=progress,
                                     wait_for_shutdown=False)
                outcome, deviations = whole.run, whole.deviations
        for w in caught:
            console.print(f"[yellow]warning:[/] {escape(str(w.message))}")
    except (PartyFailure, IntegrityError) as exc:  # the run failed (not its input): 3
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    except (Exception, KeyboardInterrupt) as exc:  # once a folder keeps what the run
        if getattr(exc, "kept_folder", None) is None:  # recorded: an internal error (1),
            raise  # an interrupt (130)
        _fail(exc, 130 if isinstance(exc, KeyboardInterrupt) else 1)
    s = summary_of(outcome)
    table = Table(title=f"{', '.join(s['protocols'])} on {s['dataset']} - {s['parties']} "
                        f"parties, {s['queries']} queries ({s['runtime']} runtime)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    from ppknn.simulations import registry

    for o in outcome.outcomes:
        r = s["results"][o.name]
        table.add_row(f"[bold]{o.name}[/] accuracy", f"{r['accuracy']:.4f}")
        table.add_row(f"  {r['baseline']['name']}", f"{r['baseline']['accuracy']:.4f}")
        eps = r["privacy"]["epsilon"]
        table.add_row("  privacy", r["privacy"]["guarantee"] if eps is None else
                      f"ε = {eps:.4g}, δ = {r['privacy']['delta']:.3g}")
        for label, value in registry.get(o.name).headline(r):
            table.add_row(f"  {label}", value)
    table.add_row("messages / bytes", f"{s['communication']['messages']} / "
                                      f"{s['communication']['bytes']:,}")
    table.add_row("randomness / channels", f"{s['randomness_mode']} / {s['channels']}")
    out.print(table)
    leak_path = folder / "summary.json"
    if leak_path.is_file():
        leak = json.loads(leak_path.read_text()).get("leakage")
        if leak:
            colour = "bold red" if leak["above_bound"] else "green"
            out.print(f"leakage: {leak['rows']} rows (observer, target, attack), "
                      f"[{colour}]{leak['above_bound']} above their bound[/], "
                      f"{leak['within_bound']} within, {leak['no_bound']} with no bound "
                      "(leakage.csv)")
    if deviations is not None:
        _print_deviations(deviations)
    out.print(f"results written to [bold]{folder}[/] (summary.png, summary.json, ...)")


def _print_deviations(report: Any) -> None:
    """Whether the deviations were detected, and what they changed."""
    who = ", ".join(f"{d['party']} {d['kind']}" for d in report.deviations)
    verdict = (f"[bold red]detected[/]: {escape(report.detected_by)}" if report.detected
               else "[bold yellow]passed silently[/] (no failure, no refusal)")
    out.print(f"deviation ({who}): {verdict}")
    for name, acc in report.accuracy.items():
        dev = "failed" if acc["deviant"] is None else f"{acc['deviant']:.4f}"
        out.print(f"  {name} accuracy: honest {acc['honest']:.4f}, deviant {dev}")
    out.print(f"  {len(report.leakage)} leakage rows changed (deviations.csv)")


@app.command()
def leakage(results_dir: Path = typer.Argument(..., help="A results folder of `ppknn run`."),
            top: int = typer.Option(20, min=1, help="With more parties than this, show the "
                                    "this many most disclosed (all are in disclosure.csv)."),
            ) -> None:
    """Recompute the leakage table (and the ring's disclosure) from a saved transcript.

    Writes ``leakage.csv`` and ``leakage.png`` (and, for the ring,
    ``disclosure.csv``) into the folder: the same rows ``ppknn run`` wrote.
    """
    from ppknn.core.leakage import DisclosureReport
    from ppknn.core.transcript import Transcript
    from ppknn.simulations import leakage as leakage_table
    from ppknn.simulations import registry
    from ppknn.simulations.output import check_complete
    from ppknn.simulations.results import write_disclosure_csv

    try:
        public_path = results_dir / "public.json"
        if not public_path.is_file():
            raise PpknnError(f"{str(results_dir)!r} is not a results folder (no public.json)")
        failed_after = check_complete(results_dir)
        if failed_after is not None:
            console.print(f"[yellow]note:[/] the run failed after its protocols completed "
                          f"({escape(str(failed_after.get('message', '')))}); scoring its "
                          "complete transcript")
        public = json.loads(public_path.read_text())
        # results folders written before the protocol registry hold the ring's facts alone
        per_protocol = public.get("protocols", {"ppknn-ring": public})
        transcript = Transcript(results_dir / "transcript")
        reports = {name: registry.get(name).leakage(transcript, facts)
                   for name, facts in per_protocol.items()}
        rows = leakage_table.recompute(results_dir)
        leakage_table.write_table(rows, results_dir / "leakage.csv")
        leakage_table.plot_table(rows, results_dir / "leakage.png",
                                 title=str(public.get("run_id", results_dir.name)))
        if failed_after is not None:  # the summary it kept lacks the table: add it
            _add_leakage_summary(results_dir / "summary.json", leakage_table.summary(rows))
    except PpknnError as exc:
        _fail(exc, 2)
    for report in reports.values():
        if isinstance(report, DisclosureReport):
            write_disclosure_csv(report, results_dir / "disclosure.csv")
            _print_disclosure(report, results_dir, top)
    _print_leakage(rows, results_dir, top)


def _add_leakage_summary(path: Path, section: dict[str, Any]) -> None:
    """Put the leakage section into a failed run's ``summary.json`` (whole or not at all)."""
    if not path.is_file():
        return
    from ppknn.simulations.reporting import jsonio

    summary = json.loads(path.read_text())
    summary["leakage"] = section
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(jsonio.dumps(summary, default=float))
    partial.replace(path)


def _print_leakage(rows: list[Any], results_dir: Path, top: int, *,
                   title: str | None = None) -> None:
    """The leakage table: rows above their bound first, then the largest values."""
    from ppknn.simulations.leakage.table import ABOVE

    if not rows:
        out.print("no party observes anything this table can score")
        return
    order = sorted(rows, key=lambda r: (r.verdict != ABOVE, r.protocol, r.attack))
    shown = order[:top] if len(order) > top else order
    title = title or f"leakage from {results_dir}/transcript ({len(rows)} rows in leakage.csv)"
    table = Table(title=title)
    for col in ("protocol", "observer", "target", "attack", "value [95% CI]", "bound",
                "verdict"):
        table.add_column(col)
    for r in shown:
        bound = "" if r.bound is None else f"{r.bound:.4g}"
        table.add_row(r.protocol, r.observer[:40], r.target[:36], r.attack,
                      f"{r.value:.4g} [{r.ci_low:.4g}, {r.ci_high:.4g}]", bound, r.verdict)
    out.print(table)


def _print_disclosure(report: Any, results_dir: Path, top: int) -> None:
    shown = list(report.parties)
    title = f"disclosure ({report.adversary}) from {results_dir}/transcript"
    if len(shown) > top:
        shown = sorted(shown, key=lambda d: -d.probability)[:top]
        title += f"\nthe {top} most disclosed of {len(report.parties):,} parties"
    table = Table(title=title)
    for col in ("party", "probability", "95% CI", "precision"):
        table.add_column(col, justify="right")
    for d in shown:
        lo, hi = d.interval
        table.add_row(d.party, f"{d.probability:.3f}", f"[{lo:.3f}, {hi:.3f}]",
                      f"{d.precision:.3f}")
    lo, hi = report.pooled_interval
    table.add_row("mean", f"{report.mean_probability:.3f}", f"[{lo:.3f}, {hi:.3f}]", "")
    out.print(table)
    if len(report.parties) > top:
        probs = sorted(d.probability for d in report.parties)
        q = [probs[int(f * (len(probs) - 1))] for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
        where = results_dir / "disclosure.csv"
        out.print("per-party probability: min {:.3f}, quartiles {:.3f} / {:.3f} / {:.3f}, "
                  "max {:.3f}; ".format(*q) + f"every party in {where}")


@app.command()
def audit(
    scenario: Path = typer.Argument(..., help="Scenario TOML file ([audit] sets trials, the "
                                    "record removed, the confidence)."),
    trials: Optional[int] = typer.Option(None, min=100, help="Runs per input (overrides "  # noqa: UP007
                                         "[audit].trials; default 200 when unset)."),
    output: Optional[Path] = typer.Option(None, help="Folder for audit.csv and audit.json "  # noqa: UP007
                                          "(default: [run].output + '-audit')."),
    runtime: Optional[str] = typer.Option(None, help="'ray' fans the trials out over Ray, "  # noqa: UP007
                                          "'inprocess' runs them here (overrides "
                                          "[runtime].kind)."),
    sets: list[str] = typer.Option([], "--set", help="Any scenario key, typed."),
) -> None:
    """Empirical ε lower bounds: rerun each DP release on neighbouring inputs."""
    from ppknn.simulations.leakage.audit import audit_scenario, write_audit
    from ppknn.simulations.scenario import load_scenario

    try:
        sc = _apply_sets(load_scenario(scenario), sets)
        n = trials or sc.audit.trials or 200
        folder = Path(output or f"{sc.run.output}-audit")
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as bar:
            tasks: dict[str, TaskID] = {}

            def progress(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=total)
                bar.update(tasks[phase], completed=done, total=total)

            runs = audit_scenario(sc, trials=n, progress=progress,
                                  use_ray=None if runtime is None else runtime == "ray")
        write_audit(runs, folder)
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    _print_leakage([r.row for r in runs], folder, 50,
                   title=f"audit of {scenario}: {n} runs per neighbouring input")
    out.print(f"audit written to [bold]{folder}[/] (audit.csv, audit.json)")


@app.command()
def show(results_dir: Path = typer.Argument(..., help="A results folder of `ppknn run` or "
                                            "`ppknn sweep`.")) -> None:
    """Print a run's (or a sweep's) summary in the terminal."""
    try:
        failed = results_dir / "failure.json"
        if failed.is_file():
            _print_failure(results_dir, json.loads(failed.read_text()))
        if (results_dir / "summary.json").is_file():
            s = json.loads((results_dir / "summary.json").read_text())
            if "incomplete" in s:
                out.print(f"[yellow]summary.json {escape(s['incomplete'])}[/]")
            table = Table(title=f"{results_dir}: {', '.join(s.get('protocols', ['?']))} on "
                                f"{s['dataset']} ({s['parties']} parties, {s['queries']} "
                                f"queries, {s['runtime']})")
            for col in ("protocol", "accuracy", "baseline", "privacy", "hops"):
                table.add_column(col, justify="right")
            for name, r in s.get("results", {}).items():
                eps = r["privacy"]["epsilon"]
                table.add_row(name, f"{r['accuracy']:.4f}",
                              f"{r['baseline']['accuracy']:.4f} ({r['baseline']['name']})",
                              r["privacy"]["guarantee"] if eps is None else f"ε = {eps:.4g}",
                              str(r["hops"]))
            out.print(table)
            out.print(f"messages {s['communication']['messages']}, bytes "
                      f"{s['communication']['bytes']:,}; timings (s) "
                      + ", ".join(f"{k} {v:.2f}" for k, v in s["timings_s"].items()))
            leak = s.get("leakage")
            if leak:
                out.print(f"leakage: {leak['rows']} rows, {leak['above_bound']} above their "
                          f"bound, {leak['within_bound']} within, {leak['no_bound']} with no "
                          "bound (leakage.csv)")
        elif (results_dir / "sweep.csv").is_file():
            from ppknn.simulations.reporting.csvio import read_rows

            _print_sweep(read_rows(results_dir / "sweep.csv"), str(results_dir))
        elif not failed.is_file():
            raise PpknnError(f"{str(results_dir)!r} is not a results folder (no summary.json "
                             "or sweep.csv)")
    except PpknnError as exc:
        _fail(exc, 2)


def _print_failure(folder: Path, record: dict[str, Any]) -> None:
    """Who failed and why; whether the folder's transcript can be scored."""
    from ppknn.simulations.output import FAILURE, check_complete

    out.print(f"[bold red]{escape(str(folder))} holds a failed run:[/] "
              f"{escape(record.get('error', '?'))}: {escape(record.get('message', ''))}")
    if (folder / "transcript" / FAILURE).is_file():
        out.print("it failed while its protocols ran: its transcript ends at the failure "
                  "and is not scored")
        return
    try:
        check_complete(folder)
    except PpknnError as exc:
        out.print(f"not scored: {escape(str(exc))}")
        return
    out.print(f"its protocols completed: `ppknn leakage {escape(str(folder))}` scores its "
              "transcript")


def _print_sweep(rows: list[dict[str, Any]], title: str) -> None:
    """Mean accuracy (and baseline) per grid point over seeds."""
    if not rows:
        out.print(f"{title}: no runs")
        return
    acc = next(k for k in rows[0] if k == "accuracy" or k.endswith(":accuracy"))
    base = acc.replace("accuracy", "baseline_accuracy")
    grid = [k for k in rows[0] if "." in k and ":" not in k]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in grid), []).append(r)
    table = Table(title=f"{title}: {len(rows)} runs, mean over seeds")
    for col in (*grid, "runs", acc, base):
        table.add_column(col, justify="right")
    for point, group in groups.items():
        mean = sum(float(g[acc]) for g in group) / len(group)
        mean_b = sum(float(g[base]) for g in group) / len(group)
        table.add_row(*(str(v) for v in point), str(len(group)), f"{mean:.4f}", f"{mean_b:.4f}")
    out.print(table)


@app.command()
def protocols() -> None:
    """List the registered protocols, their roles and privacy guarantees."""
    from ppknn.simulations import registry

    table = Table(title="registered protocols ([protocol] name = ...)")
    for col in ("name", "protocol", "roles", "guarantee"):
        table.add_column(col)
    for plugin in registry.plugins():
        roles = "; ".join(f"{r.name} x {r.count}" for r in plugin.roles)
        table.add_row(plugin.name, plugin.title, roles, plugin.guarantee)
    out.print(table)
    from ppknn.simulations.leakage import attacks

    out.print("attacks of the leakage table ([[adversary]] attack = ...; * = scored after "
              "every run):")
    for plugin in registry.plugins():
        names = [f"{a}{'*' if attacks.get(plugin.name, a).default else ''}"
                 for a in attacks.allowed(plugin.name)]
        out.print(f"  {plugin.name}: {', '.join(names) or '-'}")


@app.command()
def reproduce(
    name: str = typer.Argument(..., help="Which paper: gursoy (DP r-N/k-NN), lepert (DP-TT), "
                                         "mukherjee (PCA + Laplace), xiong (PP-kNN ring) or "
                                         "zafarani (DP Naive Bayes)."),
    quick: bool = typer.Option(False, "--quick", help="Small settings (under two minutes)."),
    output: Optional[Path] = typer.Option(None, help="Tables and plots folder "  # noqa: UP007
                                          "(default results/reproduce/NAME)."),
    runtime: RuntimeKind = typer.Option(RuntimeKind.inprocess, help="Where the parties run."),
    ray_runtime: bool = typer.Option(False, "--ray", hidden=True, help="= --runtime ray."),
    docs: Optional[Path] = typer.Option(  # noqa: UP007
        None, "--docs", help="Write the report as ROOT/docs/reproductions/NAME.md (the "
        "committed reports: e.g. --docs .); by default it goes into the output folder and "
        "nothing outside it is touched."),
    option: list[str] = typer.Option([], "--set", help="Extra setting of the reproduction, "
                                     "KEY=VALUE, typed (e.g. n_points=1000000 for lepert)."),
) -> None:
    """Re-run a paper's experiments: CSV + PNG per figure and a Markdown report."""
    from ppknn.simulations import reproduce as registry
    from ppknn.simulations.scenario import parse_value

    try:
        module = registry.load(name)
        folder = output or Path("results") / "reproduce" / name
        params = inspect.signature(module.run).parameters
        kwargs: dict[str, object] = {}
        for item in option:
            key, _, value = item.partition("=")
            fixed = ("output", "quick", "runtime", "report", "log")
            if key not in params or key in fixed:
                extra = [p for p in params if p not in fixed]
                raise PpknnError(f"--set {item!r}: reproduction {name!r} has no setting {key!r};"
                                 f" its settings: {extra}")
            kwargs[key] = parse_value(value)
        if "log" in params:
            kwargs["log"] = lambda text: console.log(f"{name}: {text}")
        report_path = (registry.report_path(name, docs) if docs is not None
                       else Path(folder) / f"{name}.md")
        kind = "ray" if ray_runtime else runtime.value
        if kind == "ray":
            _starting_ray(None)
        report = module.run(folder, quick=quick, runtime=kind, report=report_path, **kwargs)
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    out.print(f"tables and plots in [bold]{folder}[/]; report [bold]{report}[/]")


@app.command()
def sweep(
    file: Path = typer.Argument(..., help="Sweep TOML file (base scenario, grid, seeds)."),
    runtime: Optional[RuntimeKind] = typer.Option(  # noqa: UP007
        None, help="'ray': fan the runs out over Ray tasks; 'inprocess': run them here, one "
        "by one (overrides [sweep].parallel)."),
    sequential: bool = typer.Option(False, "--sequential", hidden=True,
                                    help="= --runtime inprocess."),
    output: Optional[Path] = typer.Option(None, help="Overrides [sweep].output."),  # noqa: UP007
    chunk_size: Optional[int] = typer.Option(  # noqa: UP007
        None, min=1, help="Runs per Ray task; overrides [sweep].chunk_size."),
    sets: list[str] = typer.Option([], "--set", help="A base-scenario key, typed: "
                                   "--set protocol.epsilon=0.5."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing sweep "
                                   "folder (only once the new table is complete)."),
) -> None:
    """Run a grid of scenarios x seeds (any protocol), fanned out over Ray; one table."""
    from ppknn.simulations.scenario import parse_value, set_dotted
    from ppknn.simulations.sweep import load_sweep, run_sweep

    try:
        spec = load_sweep(file)
        base = spec.base
        for item in sets:
            key, eq, value = item.partition("=")
            if not eq or not key:
                raise PpknnError(f"--set {item!r}: write KEY=VALUE, e.g. protocol.k=5")
            base = set_dotted(base, key.strip(), parse_value(value.strip()))
        spec = spec.model_copy(update={"base": base})
        if chunk_size is not None:
            spec = spec.model_copy(update={
                "sweep": spec.sweep.model_copy(update={"chunk_size": chunk_size})})
        n_runs = len(spec.runs())
        from ppknn.simulations.output import check_output

        folder = check_output(output or Path(spec.sweep.output), overwrite=overwrite)
        parallel = ("sequential" if sequential or runtime is RuntimeKind.inprocess
                    else "ray" if runtime is RuntimeKind.ray else None)
        if (parallel or spec.sweep.parallel) == "ray":
            _starting_ray(spec.sweep.address)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as bar:
            task = bar.add_task(f"sweep {spec.sweep.name}", total=n_runs)
            rows = run_sweep(spec, parallel=parallel, output=folder, overwrite=overwrite,
                             progress=lambda done, total: bar.update(task, completed=done))
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    _print_sweep(rows, f"sweep {spec.sweep.name}")
    out.print(f"{len(rows)} runs; table [bold]{folder}/sweep.csv[/] "
              f"(+ sweep.parquet, sweep.png)")


@app.command()
def chaos(
    scenario: Path = typer.Argument(..., help="Scenario TOML file to run under faults."),
    output: Path = typer.Option(Path("results/chaos"), help="A fresh folder: one transcript per "
                                "fault and chaos.json."),
    party: Optional[str] = typer.Option(None, help="The faulty party (default: the second)."),  # noqa: UP007
    kind: list[str] = typer.Option([], "--kind", help="Fault kinds (default: all): kill, raise, "
                                   "hang, slow, memory, drop, duplicate, reorder, tamper."),
    method: str = typer.Option("*", help="The party method that fails ('*': any)."),
    occurrence: int = typer.Option(2, min=1, help="Which matching call fails (1 = the first)."),
    runtime: Optional[str] = typer.Option(None, help="'ray' or 'inprocess' (overrides [runtime].kind)."),  # noqa: UP007,E501
    sets: list[str] = typer.Option([], "--set", help="Any scenario key, typed (e.g. "
                                   "--set runtime.party_timeout_s=2)."),
) -> None:
    """Inject each fault into one party and check every run fails cleanly (exit 1 if not)."""
    from ppknn.simulations.faults import run_chaos
    from ppknn.simulations.scenario import load_scenario

    try:
        sc = load_scenario(scenario)
        if runtime:
            sc = sc.with_overrides(runtime={"kind": runtime})
        sc = _apply_sets(sc, sets)
        table = Table(title=f"fault injection: {scenario} ({sc.runtime.kind} runtime, "
                            f"party_timeout_s {sc.runtime.party_timeout_s:g})")
        for col in ("fault", "party", "ended with", "names party", "seconds", "bound",
                    "messages kept", "ok"):
            table.add_column(col)

        def row(fault: Any, o: Any) -> None:
            console.log(f"{fault.kind}: {o.error or 'completed'} in {o.seconds:.1f} s")
            table.add_row(fault.kind, fault.party, o.error or "completed", str(o.named),
                          f"{o.seconds:.1f}", f"{o.bound_s:g}", str(o.transcript_rows),
                          "yes" if o.ok else "[bold red]NO[/]")

        outcomes = run_chaos(sc, output, party=party, kinds=kind or None, method=method,
                             occurrence=occurrence, progress=row)
    except PpknnError as exc:
        _fail(exc, 2)
    out.print(table)
    bad = [o.fault.kind for o in outcomes if not o.ok]
    out.print(f"{len(outcomes) - len(bad)} of {len(outcomes)} faults failed cleanly; "
              f"details in [bold]{output}/chaos.json[/]")
    if bad:
        raise typer.Exit(1)


@app.command()
def datasets() -> None:
    """List the datasets a scenario can name."""
    from ppknn.core.data import available_datasets, data_dir

    out.print(f"data directory: {data_dir()}")
    for name in available_datasets():
        out.print(f"  {name}")
    out.print("  synthetic:classification?rows=N&features=D&classes=C  (generated, any size)")
    out.print("  file:///path/data.csv?label=COL, s3://..., gs://..., hdfs://...  (a CSV by URI; "
              "PPKNN_DATA_DIR may be a URI too)")


@app.command()
def compare(
    spec: Optional[Path] = typer.Argument(  # noqa: UP007
        None, help="Comparison spec TOML (datasets, protocols with privacy levels, seeds); "
        "omitted with --quick: the embedded quick spec."),
    quick: bool = typer.Option(False, "--quick", help="The embedded quick spec: every "
                               "protocol, two levels, two bundled datasets, two seeds."),
    runtime: Optional[RuntimeKind] = typer.Option(  # noqa: UP007
        None, help="'ray': fan the runs out over Ray tasks; 'inprocess': one by one "
        "(overrides [compare].parallel; the table is the same)."),
    output: Optional[Path] = typer.Option(None, help="Overrides [compare].output."),  # noqa: UP007
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing folder "
                                   "(only once the new comparison is complete)."),
) -> None:
    """All protocols on the same data at matched privacy: one table, plots and a report."""
    import time

    from ppknn.simulations.compare import (
        QUICK_SPEC,
        load_comparison,
        run_comparison,
        write_report,
    )
    from ppknn.simulations.output import staged

    try:
        if spec is None and not quick:
            raise PpknnError("give a comparison spec file, or --quick for the embedded one")
        comparison = load_comparison(QUICK_SPEC if spec is None else spec)
        folder = output or Path(comparison.compare.output)
        parallel = ("sequential" if runtime is RuntimeKind.inprocess
                    else "ray" if runtime is RuntimeKind.ray else comparison.compare.parallel)
        jobs = comparison.jobs()  # validates every cell before anything runs
        if parallel == "ray":
            _starting_ray(comparison.compare.address)
        t0 = time.perf_counter()
        with staged(folder, overwrite=overwrite) as stage, \
                Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                         TimeElapsedColumn(), console=console) as bar:
            task = bar.add_task(f"compare {comparison.compare.name}", total=len(jobs))
            rows = run_comparison(comparison, parallel=parallel,
                                  progress=lambda done, total: bar.update(task, completed=done))
            command = "ppknn compare " + ("--quick" if spec is None else str(spec))
            write_report(comparison, rows, stage, command=command,
                         seconds=time.perf_counter() - t0, quick=spec is None,
                         parallel=parallel)
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    out.print(f"{len(rows)} runs; report [bold]{folder}/compare.md[/] (+ compare.csv, "
              "compare.parquet, compare-aggregate.csv, plots)")


def main() -> None:
    """Console-script entry point."""
    app(prog_name="ppknn")


if __name__ == "__main__":  # pragma: no cover
    main()
