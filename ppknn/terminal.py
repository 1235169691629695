"""What ``ppknn`` prints about an output folder: runs, sweeps, audits, chaos, comparisons.

The readers and printers behind ``ppknn show`` and ``ppknn leakage`` (and the
leakage table ``ppknn run`` and ``ppknn audit`` print): each folder kind has its
printer, every string that comes from a folder is escaped (never read as Rich
markup), and a damaged file is a one-line error naming it. The commands
themselves are in :mod:`ppknn.cli`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ppknn.core.errors import ConfigError, PpknnError

console = Console(stderr=True, soft_wrap=True)
"""Messages and progress (stderr)."""
out = Console()
"""Results (stdout)."""


def read_json(path: Path, what: str, kind: type = dict) -> Any:
    """A JSON file of a results folder; a clear error naming it if it is not what it should be.

    See :func:`simulations.reporting.jsonio.read` (a file nested too deep included).
    """
    from ppknn.simulations.reporting import jsonio

    return jsonio.read(path, what, kind)


def why_failed(record: dict[str, Any]) -> str:
    """Why a run failed, from its ``failure.json`` record (never an empty string)."""
    message = str(record.get("message") or "").strip()
    error = str(record.get("error") or "")
    if message:
        return message
    if error == "KeyboardInterrupt":
        return "interrupted"
    return error or "no reason recorded"


def print_leakage_counts(leak: dict[str, Any], *, verbose: bool = False) -> None:
    """One line: the leakage table's rows by verdict."""
    colour = "bold red" if leak["above_bound"] else "green"
    what = " (observer, target, attack)" if verbose else ""
    out.print(f"leakage: {leak['rows']} rows{what}, [{colour}]{leak['above_bound']} above "
              f"their bound[/], {leak['within_bound']} within, {leak['no_bound']} with no "
              "bound (leakage.csv)")


def print_deviations(report: dict[str, Any]) -> None:
    """One line per deviation (party, kind, detected or not and by what), then its effects."""
    detected = bool(report.get("detected"))
    by = str(report.get("detected_by") or "")
    verdict = (f"[bold red]detected[/]{': ' + escape(by) if by else ''}" if detected
               else "[bold yellow]passed silently[/] (no failure, no refusal)")
    for d in report.get("deviations", []):
        params = d.get("params") or {}
        given = f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else ""
        out.print(f"deviation: {escape(str(d.get('party', '?')))} "
                  f"{escape(str(d.get('kind', '?')) + given)}: {verdict}")
    for name, acc in (report.get("accuracy") or {}).items():
        honest = "failed" if acc.get("honest") is None else f"{acc['honest']:.4f}"
        dev = "failed" if acc.get("deviant") is None else f"{acc['deviant']:.4f}"
        out.print(f"  {escape(name)} accuracy: honest {honest}, deviant {dev}")
    changes = report.get("leakage_changes", report.get("leakage", []))
    out.print(f"  {len(changes)} leakage rows changed (deviations.csv)")


def count(n: int, word: str) -> str:
    """``"1 row"``, ``"1,024 rows"``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _rows(n: int) -> str:
    return count(n, "row")


def _clip(text: str, width: int = 60) -> str:
    """``text`` cut to ``width`` characters, with an ellipsis when cut."""
    return text if len(text) <= width else text[:width - 1] + "…"


def print_leakage(rows: list[Any], top: int, title: str, *, csv: str = "leakage.csv") -> None:
    """The leakage table: rows above their bound first, then the rest, at most ``top``.

    One table per protocol (named in its title), four columns that wrap rather than
    cut: readable at 80 columns.
    """
    from ppknn.simulations.leakage.table import ABOVE

    if not rows:
        out.print("no party observes anything this table can score")
        return
    order = sorted(rows, key=lambda r: (r.verdict != ABOVE, r.protocol, r.attack))
    shown = order[:top]
    count = (f"{_rows(len(rows))} in {csv}" if len(shown) == len(rows)
             else f"{len(shown)} of the {len(rows)} rows in {csv}, those above their bound "
                  "first")
    by_protocol: dict[str, list[Any]] = {}
    for r in shown:
        by_protocol.setdefault(r.protocol, []).append(r)
    for protocol, group in by_protocol.items():
        head = f"{title} ({count})" if len(by_protocol) == 1 else title
        table = Table(title=escape(f"{head}\n{protocol}: {_rows(len(group))}"))
        table.add_column("observer → target", overflow="fold")
        table.add_column("attack", no_wrap=True, overflow="fold")  # whole names, if room
        table.add_column("value\n[95% CI]", justify="right", overflow="fold")
        table.add_column("verdict\n(bound)", overflow="fold")
        for r in group:
            ci = ("" if math.isnan(r.ci_low) and math.isnan(r.ci_high)
                  else f"\n[≥ {r.ci_low:.4g}]" if math.isnan(r.ci_high)
                  else f"\n(≥ {r.ci_low:.4g}; certifiable ≤ {r.ci_high:.4g})"
                  if r.attack.startswith("audit") else f"\n[{r.ci_low:.4g}, {r.ci_high:.4g}]")
            verdict = escape(r.verdict)
            if r.verdict == ABOVE:
                verdict = f"[bold red]{verdict}[/]"
            if r.bound is not None and math.isfinite(r.bound):
                verdict += f"\n({r.bound:.4g})"
            table.add_row(escape(f"{_clip(r.observer)} → {_clip(r.target)}"), escape(r.attack),
                          escape(f"{r.value:.4g}{ci}"), verdict)
        out.print(table)
    if len(by_protocol) > 1:
        out.print(escape(f"({count})"))


def print_disclosure(report: Any, results_dir: Path, top: int) -> None:
    """The ring's per-node disclosure: every node, or the ``top`` most disclosed."""
    shown = list(report.parties)
    title = f"disclosure ({report.adversary}) from {results_dir}/transcript"
    if len(shown) > top:
        shown = sorted(shown, key=lambda d: -d.probability)[:top]
        title += f"\nthe {top} most disclosed of {len(report.parties):,} parties"
    table = Table(title=escape(title))
    for col in ("party", "probability", "95% CI", "precision"):
        table.add_column(col, justify="right", overflow="fold")
    for d in shown:
        lo, hi = d.interval
        table.add_row(escape(d.party), f"{d.probability:.3f}", f"[{lo:.3f}, {hi:.3f}]",
                      f"{d.precision:.3f}")
    lo, hi = report.pooled_interval
    table.add_row("mean", f"{report.mean_probability:.3f}", f"[{lo:.3f}, {hi:.3f}]", "")
    out.print(table)
    if len(report.parties) > top:
        probs = sorted(d.probability for d in report.parties)
        q = [probs[int(f * (len(probs) - 1))] for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
        where = results_dir / "disclosure.csv"
        out.print("per-party probability: min {:.3f}, quartiles {:.3f} / {:.3f} / {:.3f}, "
                  "max {:.3f}; ".format(*q) + f"every party in {escape(str(where))}")


def show_folder(folder: Path) -> None:
    """What :func:`show` prints; each file is checked and named when it is not what it should be."""
    from ppknn.simulations.output import FAILURE, leftover_notes

    if not folder.is_dir():
        notes = leftover_notes(folder)
        beside = f"; beside it: {'; '.join(notes)}" if notes else ""
        raise ConfigError((f"{str(folder)!r} is not a folder" if folder.exists() else
                           f"{str(folder)!r} does not exist") + beside)
    for note in leftover_notes(folder):  # said first: the folder's own report may fail
        out.print(f"[yellow]leftover:[/] {escape(note)}")
    from ppknn.simulations import reproduce

    shown = False
    if (folder / FAILURE).is_file():
        _print_failure(folder, read_json(folder / FAILURE, "a failure record"))
        shown = True
    if (folder / reproduce.MARKER).is_file():
        _render(folder / reproduce.MARKER, "reproduction record", _print_reproduction, folder,
                read_json(folder / reproduce.MARKER, "a reproduction record"))
        return
    if (folder / "summary.json").is_file():
        summary = read_json(folder / "summary.json", "a run's summary")
        _render(folder / "summary.json", "run summary", _print_summary, folder, summary)
        if (folder / "deviations.json").is_file():
            _render(folder / "deviations.json", "deviation report", print_deviations,
                    read_json(folder / "deviations.json", "a deviation report"))
        shown = True
    elif (folder / "sweep.csv").is_file():
        _render(folder / "sweep.csv", "sweep table", _print_sweep_file, folder)
        shown = True
    elif (folder / "compare-aggregate.csv").is_file():
        _render(folder / "compare-aggregate.csv", "comparison table", _print_compare, folder)
        shown = True
    elif (folder / "chaos.json").is_file():
        _render(folder / "chaos.json", "chaos record", _print_chaos, folder,
                read_json(folder / "chaos.json", "a chaos record", list))
        shown = True
    if _holds_leakage_rows(folder / "audit.csv"):
        _render(folder / "audit.csv", "audit table", _print_audit, folder)
        shown = True
    if shown:
        _flag_damaged_transcript(folder / "transcript")
    if not shown:
        raise ConfigError(f"{str(folder)!r} is not a results folder (no summary.json, "
                          "sweep.csv, compare-aggregate.csv, chaos.json or audit.csv)")


def _flag_damaged_transcript(folder: Path) -> None:
    """Say (on stdout, after the summary) that a closed transcript's parts are damaged."""
    if not (folder / "totals.json").is_file() or (folder / "failure.json").is_file():
        return
    from ppknn.core.errors import DataError
    from ppknn.core.transcript import Transcript

    try:
        Transcript(folder).check()
    except DataError as exc:
        out.print(f"[bold red]DAMAGED:[/] {escape(str(exc))}; `ppknn leakage` refuses this "
                  "folder")


def _render(path: Path, what: str, printer: Callable[..., None], *args: Any) -> None:
    """``printer(*args)``; a file that lacks what it should hold is named in a clear error."""
    try:
        printer(*args)
    except PpknnError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, StopIteration) as exc:
        raise ConfigError(f"{str(path)!r} is not a ppknn {what} ({type(exc).__name__}: "
                          f"{exc}); the file is damaged or was not written by ppknn") from None


def _holds_leakage_rows(path: Path) -> bool:
    """Whether ``path`` is a table of leakage rows (``audit.csv`` of ``ppknn audit``)."""
    from ppknn.simulations.leakage.table import COLUMNS

    try:
        with path.open(encoding="utf-8") as handle:
            return handle.readline().strip() == ",".join(COLUMNS)
    except (OSError, UnicodeDecodeError):
        return False


def _print_reproduction(folder: Path, record: dict[str, Any]) -> None:
    """``reproduction.json``: which paper, how it was run, finished or where it stopped."""
    from ppknn.simulations import reproduce

    how = (f"{'quick' if record.get('quick') else 'full'} settings, "
           f"{record.get('runtime', '?')} runtime")
    extra = record.get("settings") or {}
    if extra:
        how += ", " + ", ".join(f"{k}={v}" for k, v in extra.items())
    name = str(record["name"])
    out.print(escape(f"{folder}: a reproduction of {name!r} ({how})"))
    if record.get("finished"):
        out.print(escape(f"finished; report {folder / record.get('report', name + '.md')}"))
        return
    state = reproduce.folder_state(folder, name)
    command = (f"ppknn reproduce {name}{' --quick' if record.get('quick') else ''}"
               f"{' --runtime ray' if record.get('runtime') == 'ray' else ''} --output {folder}")
    kept = (f"its {count(state.runs, 'finished run')} in {folder / reproduce.ROWS} are reused "
            f"by `{command}`" if state.runs else "it kept no finished runs")
    out.print(escape(f"unfinished: {kept}"))


def _print_summary(folder: Path, s: dict[str, Any]) -> None:
    if "incomplete" in s:
        out.print(f"[yellow]summary.json {escape(str(s['incomplete']))}[/]")
    table = Table(title=escape(f"{folder}: {', '.join(s.get('protocols', ['?']))} on "
                               f"{s['dataset']} ({s['parties']} parties, {s['queries']} "
                               f"queries, {s['runtime']})"))
    for col in ("protocol", "accuracy", "baseline", "privacy", "hops"):
        table.add_column(col, justify="right", overflow="fold")
    for name, r in s.get("results", {}).items():
        eps = r["privacy"]["epsilon"]
        table.add_row(escape(name), f"{r['accuracy']:.4f}",
                      escape(f"{r['baseline']['accuracy']:.4f} ({r['baseline']['name']})"),
                      escape(r["privacy"]["guarantee"]) if eps is None else f"ε = {eps:.4g}",
                      str(r["hops"]))
    out.print(table)
    out.print(f"messages {s['communication']['messages']}, bytes "
              f"{s['communication']['bytes']:,}; timings (s) "
              + escape(", ".join(f"{k} {v:.2f}" for k, v in s["timings_s"].items())))
    if s.get("leakage"):
        print_leakage_counts(s["leakage"])


def _print_failure(folder: Path, record: dict[str, Any]) -> None:
    """Who failed and why; whether the folder's transcript can be scored."""
    from ppknn.simulations.output import FAILURE, check_complete

    error = str(record.get("error") or "?")
    why = (f"interrupted ({error})" if error == "KeyboardInterrupt" and not record.get("message")
           else f"{error}: {why_failed(record)}")
    out.print(f"[bold red]{escape(str(folder))} holds a failed run:[/] {escape(why)}")
    if not (folder / "transcript").is_dir():
        return  # not a protocol run (a sweep, an audit, a reproduction, ...): nothing to score
    if (folder / "transcript" / FAILURE).is_file():
        out.print("it failed while its protocols ran: its transcript ends at the failure "
                  "and is not scored")
        return
    try:
        check_complete(folder)
    except PpknnError as exc:
        out.print(f"not scored: {escape(str(exc))}")
        return
    except (OSError, ValueError) as exc:
        out.print(f"not scored: its records cannot be read ({escape(str(exc))})")
        return
    out.print(f"its protocols completed: `ppknn leakage {escape(str(folder))}` scores its "
              "transcript")


def _print_sweep_file(folder: Path) -> None:
    from ppknn.simulations.reporting.csvio import read_rows

    print_sweep(read_rows(folder / "sweep.csv"), str(folder))


def print_sweep(rows: list[dict[str, Any]], title: str) -> None:
    """Per grid point: accuracy and baseline (mean and 95% interval over seeds), privacy.

    The privacy column gives the ε spent (its range when the seeds differ), or the
    protocol's guarantee when it spends none (``no DP: ...``).
    """
    from ppknn.simulations.reporting.intervals import t_interval

    if not rows:
        out.print(f"{escape(title)}: no runs")
        return
    accs = [k for k in rows[0] if k == "accuracy" or k.endswith(":accuracy")]
    grid = [k for k in rows[0] if "." in k and ":" not in k]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in grid), []).append(r)
    table = Table(title=escape(f"{title}: {count(len(rows), 'run')}, mean over seeds "
                               "[95% interval]"))
    columns = [*grid, "runs"]
    for acc in accs:
        columns += [acc, acc.replace("accuracy", "baseline_accuracy"),
                    acc.replace("accuracy", "privacy")]
    for col in columns:
        table.add_column(escape(col), justify="left" if col.endswith("privacy") else "right",
                         overflow="fold")
    for point, group in groups.items():
        cells = [str(v) for v in point] + [str(len(group))]
        for acc in accs:
            for key in (acc, acc.replace("accuracy", "baseline_accuracy")):
                cells.append(_mean_interval(t_interval((g.get(key) for g in group),
                                                       clip=(0.0, 1.0))))
            cells.append(_privacy_cell(group, acc.replace("accuracy", "")))
        table.add_row(*(escape(c) for c in cells))
    out.print(table)


def _mean_interval(stats: tuple[float, float, float]) -> str:
    """``0.9120 [0.8800, 0.9440]``; one seed: the mean alone, ``(1 seed)``."""
    m, lo, hi = stats
    if not math.isfinite(m):
        return "—"
    if not math.isfinite(lo):
        return f"{m:.4f} (1 seed)"
    return f"{m:.4f} [{lo:.4f}, {hi:.4f}]"


def _privacy_cell(group: list[dict[str, Any]], prefix: str) -> str:
    """The ε spent over the seeds of one grid point, or the guarantee when none is spent."""
    spent = []
    for g in group:
        try:
            spent.append(float(g.get(f"{prefix}epsilon_spent")))
        except (TypeError, ValueError):
            continue
    spent = [e for e in spent if math.isfinite(e)]
    if spent:
        lo, hi = min(spent), max(spent)
        return f"ε = {lo:.4g}" if lo == hi else f"ε = {lo:.4g} to {hi:.4g}"
    protocol = str(group[0].get(f"{prefix}protocol") or "")
    try:
        from ppknn.simulations import registry

        guarantee = registry.get(protocol).guarantee
    except Exception:  # noqa: BLE001 - a protocol not installed here: say what is known
        guarantee = ""
    if guarantee.lower().startswith("no "):  # e.g. "no DP: per-node disclosure ..."
        return guarantee.split(" (")[0]  # its reference in brackets: `ppknn protocols`
    return f"no ε recorded ({guarantee})" if guarantee else "no DP: no ε spent"


def _number(value: Any, spec: str = ".3g") -> str:
    """A number for a table; ``—`` when missing or not finite."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return format(value, spec)
    return "—"


def _print_compare(folder: Path) -> None:
    """``compare-aggregate.csv``: accuracy per (dataset, protocol, level), mean over seeds."""
    from ppknn.simulations.reporting.csvio import read_rows

    rows = read_rows(folder / "compare-aggregate.csv")
    table = Table(title=escape(f"{folder}: {count(len(rows), 'cell')}, mean over seeds "
                               "(compare.md has the report)"))
    for col in ("dataset", "protocol", "level", "seeds", "accuracy [95% CI]", "empirical ε"):
        table.add_column(escape(col), overflow="fold")
    for r in rows:
        level = f"{r['privacy_key']} = {r['level']}"
        acc = (f"{_number(r['accuracy'], '.4f')} [{_number(r.get('accuracy_low'), '.4f')}, "
               f"{_number(r.get('accuracy_high'), '.4f')}]")
        table.add_row(escape(str(r["dataset"])), escape(str(r["protocol"])), escape(level),
                      str(r.get("seeds", "")), escape(acc),
                      _number(r.get("empirical_epsilon")))
    out.print(table)


def _print_chaos(folder: Path, rows: list[dict[str, Any]]) -> None:
    """``chaos.json``: how each injected fault ended."""
    print_chaos_rows(f"{folder}: {count(len(rows), 'injected fault')}", rows)
    bad = sum(1 for r in rows if not r["ok"])
    out.print(f"{len(rows) - bad} of {len(rows)} faults failed cleanly")


def print_chaos_rows(title: str, rows: list[dict[str, Any]]) -> None:
    """The chaos table (rows of ``chaos.json``); what every row shares goes in the title."""
    shared = {k: rows[0].get(k) for k in ("party", "method", "occurrence", "bound_s")
              if rows and len({str(r.get(k)) for r in rows}) == 1}
    said = []
    if "party" in shared:
        said.append(f"party {shared['party']}")
    if "method" in shared:
        said.append(f"method {shared['method']}, call {shared.get('occurrence', '?')}")
    if "bound_s" in shared:
        said.append(f"bound {_number(shared['bound_s'], 'g')} s")
    table = Table(title=escape(title + (f"\n({'; '.join(said)})" if said else "")))
    columns = ["fault"] + [c for c in ("party", "method") if c not in shared] + [
        "ended with", "names party", "seconds"] + (["bound"] if "bound_s" not in shared
                                                   else []) + ["messages kept", "ok"]
    for col in columns:
        table.add_column(col, overflow="fold")
    for r in rows:
        cells = {"fault": escape(str(r["kind"])), "party": escape(str(r["party"])),
                 "method": escape(str(r.get("method", "*"))),
                 "ended with": escape(r["error"] or ("completed" if r.get("fired", True)
                                                     else "completed: the fault never fired "
                                                     "(lower --occurrence)")),
                 "names party": "yes" if r["names_party"] else "no",
                 "seconds": _number(r["seconds"], ".1f"), "bound": _number(r["bound_s"], "g"),
                 "messages kept": str(r["transcript_rows"]),
                 "ok": "yes" if r["ok"] else "[bold red]NO[/]"}
        table.add_row(*(cells[c] for c in columns))
    out.print(table)


def _print_audit(folder: Path) -> None:
    """``audit.csv``: the empirical ε lower bounds, as the leakage table shows them."""
    from ppknn.simulations.leakage.table import COLUMNS, LeakageRow, read_table

    fields = [c for c in COLUMNS if c != "verdict"]
    rows = [LeakageRow(**{k: r.get(k) for k in fields}) for r in read_table(folder / "audit.csv")]
    for r in rows:
        if not isinstance(r.value, (int, float)):
            raise ValueError(f"value {r.value!r} is not a number")
    print_leakage(rows, 50, f"audit in {folder}", csv="audit.csv")


__all__ = ["console", "count", "out", "print_chaos_rows", "print_deviations", "print_disclosure",
           "print_leakage", "print_leakage_counts", "print_sweep", "read_json", "show_folder",
           "why_failed"]
