"""The ``ppknn`` command line (also ``python -m simulations``)."""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path
from typing import Optional

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

from core.errors import PartyFailure, PpknnError, PrivacyLeakWarning

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Multi-party simulations of privacy-preserving nearest-neighbour "
                       "classification.")
console = Console(stderr=True, soft_wrap=True)
out = Console()


def _fail(exc: Exception, code: int) -> None:
    console.print(f"[bold red]error:[/] {escape(str(exc))}")
    raise typer.Exit(code)


@app.command()
def run(
    scenario: Optional[Path] = typer.Argument(  # noqa: UP007 - typer needs Optional
        None, help="Scenario TOML file; omitted: the embedded quickstart default."),
    output: Optional[Path] = typer.Option(None, help="Results folder (overrides [run].output)."),  # noqa: UP007
    runtime: Optional[str] = typer.Option(None, help="'ray' or 'inprocess' (overrides [runtime].kind)."),  # noqa: UP007,E501
    address: Optional[str] = typer.Option(None, help="Ray address, e.g. 'auto' (overrides [runtime].address)."),  # noqa: UP007,E501
    seed: Optional[int] = typer.Option(None, help="Root seed (overrides [run].seed)."),  # noqa: UP007
) -> None:
    """Run a PP-kNN scenario and write its results folder."""
    from simulations.results import summary_of, write_results
    from simulations.runner import execute
    from simulations.scenario import Scenario, load_scenario

    try:
        sc = load_scenario(scenario) if scenario else Scenario().with_overrides(
            run={"name": "quickstart", "output": "results/quickstart"})
        overrides: dict[str, dict] = {}
        if runtime:
            overrides.setdefault("runtime", {})["kind"] = runtime
        if address:
            overrides.setdefault("runtime", {})["address"] = address
        if seed is not None:
            overrides.setdefault("run", {})["seed"] = seed
        if overrides:
            sc = sc.with_overrides(**overrides)
        folder = Path(output or sc.run.output)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PrivacyLeakWarning)
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), console=console, transient=False) as bar:
                tasks: dict[str, TaskID] = {}

                def progress(phase: str, done: int, total: int) -> None:
                    if phase not in tasks:
                        tasks[phase] = bar.add_task(phase, total=total)
                    bar.update(tasks[phase], completed=done, total=total)

                outcome = execute(sc, transcript_dir=folder / "transcript", progress=progress)
        for w in caught:
            console.print(f"[yellow]warning:[/] {escape(str(w.message))}")
        write_results(outcome, folder)
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    s = summary_of(outcome)
    table = Table(title=f"PP-kNN on {s['dataset']} - {s['parties']} parties, "
                        f"{s['queries']} queries ({s['runtime']} runtime)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("accuracy PP-kNN", f"{s['accuracy_ppknn']:.4f}")
    table.add_row("accuracy kNN on the union (non-private)", f"{s['accuracy_knn']:.4f}")
    table.add_row("exact top-k fraction / paper bound",
                  f"{s['topk_exact_fraction']:.3f} / {s['topk_correctness_bound']:.3f}")
    lo, hi = s["disclosure"]["pooled_ci95"]
    table.add_row("mean per-node disclosure [95% CI]",
                  f"{s['disclosure']['mean_probability']:.3f} [{lo:.3f}, {hi:.3f}]")
    table.add_row("messages / bytes", f"{s['communication']['messages']} / "
                                      f"{s['communication']['bytes']:,}")
    table.add_row("randomness / channels", f"{s['randomness_mode']} / {s['channels']}")
    out.print(table)
    out.print(f"results written to [bold]{folder}[/] (summary.png, summary.json, ...)")


@app.command()
def leakage(results_dir: Path = typer.Argument(..., help="A results folder of `ppknn run`."),
            top: int = typer.Option(20, min=1, help="With more parties than this, show the "
                                    "this many most disclosed (all are in disclosure.csv)."),
            ) -> None:
    """Recompute per-node disclosure from a saved transcript."""
    from core.transcript import Transcript
    from simulations.disclosure import measure_disclosure
    from simulations.results import write_disclosure_csv

    try:
        public_path = results_dir / "public.json"
        if not public_path.is_file():
            raise PpknnError(f"{str(results_dir)!r} is not a results folder (no public.json)")
        public = json.loads(public_path.read_text())
        report = measure_disclosure(Transcript(results_dir / "transcript"), public)
    except PpknnError as exc:
        _fail(exc, 2)
    write_disclosure_csv(report, results_dir / "disclosure.csv")
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
        out.print("per-party probability: min {:.3f}, quartiles {:.3f} / {:.3f} / {:.3f}, "
                  "max {:.3f}; every party in {}".format(*q, results_dir / "disclosure.csv"))


@app.command()
def reproduce(
    name: str = typer.Argument(..., help="Which paper: see `ppknn reproduce --help`."),
    quick: bool = typer.Option(False, "--quick", help="Small settings (under two minutes)."),
    output: Optional[Path] = typer.Option(None, help="Tables and plots folder "  # noqa: UP007
                                          "(default results/reproduce/NAME)."),
    ray_runtime: bool = typer.Option(False, "--ray", help="Run the parties on Ray."),
    docs: Path = typer.Option(Path("."), help="Root under which docs/reproductions/ is written."),
    option: list[str] = typer.Option([], "--set", help="Extra setting of the reproduction, "
                                     "KEY=INTEGER (e.g. n_points=1000000 for lepert)."),
) -> None:
    """Re-run a paper's experiments: CSV + PNG per figure and a Markdown report."""
    from simulations import reproduce as registry

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
            try:
                kwargs[key] = int(value)
            except ValueError:
                raise PpknnError(f"--set {item!r}: value must be an integer") from None
        if "log" in params:
            kwargs["log"] = lambda text: console.log(f"{name}: {text}")
        report = module.run(folder, quick=quick, runtime="ray" if ray_runtime else "inprocess",
                            report=registry.report_path(name, docs), **kwargs)
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    out.print(f"tables and plots in [bold]{folder}[/]; report [bold]{report}[/]")


@app.command()
def sweep(
    file: Path = typer.Argument(..., help="Sweep TOML file (base scenario, grid, seeds)."),
    sequential: bool = typer.Option(False, "--sequential", help="Run here, one by one."),
    output: Optional[Path] = typer.Option(None, help="Overrides [sweep].output."),  # noqa: UP007
    chunk_size: Optional[int] = typer.Option(  # noqa: UP007
        None, min=1, help="Runs per Ray task; overrides [sweep].chunk_size."),
) -> None:
    """Run a grid of scenarios x seeds, fanned out over Ray; one combined table."""
    from simulations.sweep import load_sweep, run_sweep

    try:
        spec = load_sweep(file)
        if chunk_size is not None:
            spec = spec.model_copy(update={
                "sweep": spec.sweep.model_copy(update={"chunk_size": chunk_size})})
        n_runs = len(spec.runs())
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as bar:
            task = bar.add_task(f"sweep {spec.sweep.name}", total=n_runs)
            rows = run_sweep(spec, parallel="sequential" if sequential else None, output=output,
                             progress=lambda done, total: bar.update(task, completed=done))
    except PartyFailure as exc:
        _fail(exc, 3)
    except PpknnError as exc:
        _fail(exc, 2)
    folder = output or Path(spec.sweep.output)
    out.print(f"{len(rows)} runs; table [bold]{folder}/sweep.csv[/] "
              f"(+ sweep.parquet, sweep.png)")


@app.command()
def datasets() -> None:
    """List the datasets a scenario can name."""
    from core.data import available_datasets, data_dir

    out.print(f"data directory: {data_dir()}")
    for name in available_datasets():
        out.print(f"  {name}")


def main() -> None:
    """Console-script entry point."""
    app(prog_name="ppknn")


if __name__ == "__main__":  # pragma: no cover
    main()
