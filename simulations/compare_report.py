"""The comparison's report: ``compare.md``, its tables and figures, and the advice.

:func:`write_report` writes what a run of :mod:`ppknn.simulations.compare` measured;
:func:`render_saved` writes it again from a finished run's saved rows (``python -m
ppknn.simulations.compare FOLDER``). The module docstring of
:mod:`ppknn.simulations.compare_runs` says what a row holds.
"""

from __future__ import annotations

import math
import operator
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ppknn.core.errors import ConfigError, DataError
from ppknn.simulations import registry
from ppknn.simulations.compare_runs import (
    LEAK_RULE,
    PER_SEED_ALPHA,
    Comparison,
    _is_epsilon,
    _number,
    _ordinal,
    _t_interval,
    aggregate,
    cell_bound,
    load_comparison,
    ranking,
    replay_audited,
)


def advice(agg: Sequence[Mapping[str, Any]], profile: str = "wan") -> dict[str, str]:
    """One sentence per protocol, from the measured rows: when to choose it, when not.

    Its leak is the strongest by advantage over baseline at the most private setting
    (:func:`strongest_by_advantage`); one that recovers :data:`HEAVY_LEAK` or more of
    its targets beyond the baseline turns "choose it when" into "consider it only when".
    """
    out = {}
    for protocol in sorted({r["protocol"] for r in agg}):
        rows = [r for r in agg if r["protocol"] == protocol and r["seeds"]]
        cannot = sorted({r["dataset"] for r in agg
                         if r["protocol"] == protocol and not r["seeds"]})
        note = (f" It could not run on {', '.join(cannot)} (see the table for why)."
                if cannot else "")
        if not rows:
            out[protocol] = "It could not run on any dataset of this comparison." + note
            continue
        strong = [r for r in rows if r["level_rank"] == 1]
        weak = [r for r in rows if r["level_rank"] == max(x["level_rank"] for x in rows)]
        gap_strong = statistics.fmean(r["gap_to_reference"] for r in strong)
        gap_weak = statistics.fmean(r["gap_to_reference"] for r in weak)
        worst = min(strong, key=lambda r: r["gap_to_reference"])
        net = statistics.fmean(r.get(f"network_{profile}_s", math.nan) for r in rows)
        hops = statistics.fmean(r.get("critical_hops", r["hops"]) for r in rows)
        key = rows[0]["privacy_key"]
        heavy = _heavy_leak(strong)
        choose = ("choose it when" if gap_strong > -0.05 and heavy is None
                  else "consider it only when")
        out[protocol] = (
            f"At its most private setting ({key} = {strong[0]['level']:g}) it is "
            f"{abs(gap_strong) * 100:.1f} points {'below' if gap_strong < 0 else 'above'} its "
            f"non-private reference on average (worst {worst['gap_to_reference'] * 100:+.1f} on "
            f"{worst['dataset']}), {abs(gap_weak) * 100:.1f} points "
            f"{'below' if gap_weak < 0 else 'above'} at {key} = {weak[0]['level']:g}"
            f"{_leak_sentence(strong)}{_audit_sentence(strong)}"
            f"; it pays {hops:.0f} sequential hops on the critical path ({net:.2f} s predicted "
            f"on the {profile.upper()} profile per batch by the transcript replay): {choose} "
            "its guarantee "
            f"({registry.get(protocol).guarantee}) is the one your parties need"
            + _accept(heavy)
            + ("" if hops < 10 else ", and not when parties sit far apart on a slow network")
            + "." + note)
    return out


def _audit_sentence(strong: Sequence[Mapping[str, Any]]) -> str:
    """What the audit measured at a protocol's most private setting, for its advice."""
    audited = [r for r in strong if math.isfinite(r.get("audit_epsilon_lb", math.nan))]
    if not audited:
        return ""
    top = max(audited, key=operator.itemgetter("audit_epsilon_lb"))
    return (f"; the largest ε lower bound its audit measured there is "
            f"{top['audit_epsilon_lb']:.2g} (on {top['dataset']}; promised "
            f"{top['audit_bound']:.3g} per audited unit)"
            if top["audit_epsilon_lb"] > 0 else
            f"; its audit detected no ε there on any of {len(audited)} "
            f"datasets (promised {top['audit_bound']:.3g} per audited unit)")


HEAVY_LEAK = 0.9
"""A success rate at least this large at a protocol's most private setting, with an
advantage over its baseline whose 95% interval lies above 0 (where the cell has one):
nearly every target of the attack recovered, and not because an attacker without the
transcript would guess it. Its advice then says "consider it only when" and names the
leak (the heavy one with the largest advantage), whatever the accuracy."""


def leak_figure(r: Mapping[str, Any]) -> float:
    """A cell's leak as ranked: its advantage over baseline, else (none) its point estimate."""
    adv = _number(r.get("leak_advantage"))
    return adv if math.isfinite(adv) else _number(r.get("leak_value"))


def strongest_by_advantage(cells: Sequence[Mapping[str, Any]], *, epsilon: bool | None = None
                           ) -> Mapping[str, Any] | None:
    """The cell whose named leak has the largest :func:`leak_figure` (None: none measured).

    ``epsilon``: only cells whose leak is an empirical ε (True) or is not (False).
    """
    rated = [r for r in cells if r.get("seeds") and r.get("leak_quantity")
             and (epsilon is None or _is_epsilon(r["leak_quantity"]) == epsilon)
             and math.isfinite(leak_figure(r))]
    return max(rated, key=leak_figure) if rated else None


def _heavy_leak(strong: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The heavy non-ε leak (:data:`HEAVY_LEAK`) with the largest advantage, or None.

    ``strong``: a protocol's cells at its most private setting.
    """
    def heavy(r: Mapping[str, Any]) -> bool:
        low = _number(r.get("leak_advantage_low"))
        return (_number(r.get("leak_value")) >= HEAVY_LEAK
                and (low > 0 or math.isnan(_number(r.get("leak_advantage")))))

    return strongest_by_advantage([r for r in strong if heavy(r)], epsilon=False)


def advantage_text(r: Mapping[str, Any]) -> str:
    """``advantage [low, high] over the baseline's b`` of a cell ('' when it has none)."""
    adv = _number(r.get("leak_advantage"))
    if not math.isfinite(adv):
        return ""
    return (f"advantage {adv:+.3g} [{_number(r.get('leak_advantage_low')):+.3g}, "
            f"{_number(r.get('leak_advantage_high')):+.3g}] over the baseline's "
            f"{_number(r.get('leak_baseline')):.3g}")


def _accept(heavy: Mapping[str, Any] | None) -> str:
    """The advice's condition on a heavy leak ('' when there is none)."""
    if heavy is None:
        return ""
    adv = advantage_text(heavy)
    return (f", and only if its strongest attack recovering {heavy['leak_value']:.0%} "
            f"of its targets at its most private setting ({heavy['leak_quantity']}, "
            f"on {heavy['dataset']}{'; ' + adv if adv else ''}) is acceptable to them")


def _leak_sentence(strong: Sequence[Mapping[str, Any]]) -> str:
    """What the attacks measured at a protocol's most private setting, for its advice."""
    top = strongest_by_advantage(strong)
    bounded = [r for r in strong if r.get("epsilon_lb_seeds")]
    text = ""
    if top is not None:
        over = (f"{top['leak_seeds']} of {top['seeds']} seeds with a finite value"
                if top["leak_seeds"] < top["seeds"] else f"{top['seeds']} seeds")
        adv = advantage_text(top)
        if not _is_epsilon(top["leak_quantity"]):
            return (f"; the strongest leakage its attacks measured there"
                    f"{', by advantage over baseline,' if adv else ''} is "
                    f"{top['leak_value']:.3g} ({top['leak_quantity']}, mean over {over}, on "
                    f"{top['dataset']}{'; ' + adv if adv else ''})")
        text = (f"; the largest mean ε point estimate of its attacks there"
                f"{', by advantage over baseline,' if adv else ''} is "
                f"{top['leak_value']:.3g} ({top['leak_quantity']}, on {top['dataset']}, over "
                f"{over}; a point estimate, not a bound{'; ' + adv if adv else ''})")
    if not bounded:
        return text
    return text + _bound_sentence(bounded)


def _bound_sentence(bounded: Sequence[Mapping[str, Any]]) -> str:
    """The attacks' ε lower bounds at the most private setting, against their promise."""
    cell = max(bounded, key=operator.itemgetter("empirical_epsilon_lb"))
    seed = max(bounded, key=operator.itemgetter("epsilon_lb_max"))
    tests = sum(r["epsilon_lb_seeds"] - r["seeds_undecided"] for r in bounded)
    above = sum(r["seeds_above"] for r in bounded)
    text = ("; as a lower bound, " + (
        f"every cell's ε lower bound there is {cell['empirical_epsilon_lb']:.3g}"
        if all(r["empirical_epsilon_lb"] == cell["empirical_epsilon_lb"] for r in bounded)
        else f"the largest cell ε lower bound there is {cell['empirical_epsilon_lb']:.3g} "
             f"(on {cell['dataset']})")
        + f", the largest single-seed 95% bound {seed['epsilon_lb_max']:.3g} "
          f"({seed['dataset']}, seed {seed['epsilon_lb_max_seed']})")
    if tests:
        text += (f", and {above} of {tests} per-seed bounds there exceed their promise "
                 f"({PER_SEED_ALPHA * tests:.1f} expected by chance if every promise held)")
    return text


# --------------------------------------------------------------------------- report
def write_report(spec: Comparison, rows: Sequence[Mapping[str, Any]], folder: Path, *,
                 command: str, seconds: float | None = None, quick: bool = False,
                 parallel: str | None = None, saved: bool = False) -> Path:
    """Write the comparison's tables, figures and report into ``folder``.

    ``compare.parquet`` (every run), ``compare-run.json`` (how the run was made:
    command, seconds, runtime, spec), ``compare-aggregate.csv`` (one row per cell, the
    data of the figures), four figures (palette PNGs at :func:`_canvas`'s size) and
    ``compare.md``; returns the report's path. ``parallel``:
    how the cells ran when it overrode the spec's ``[compare].parallel`` (the command
    then gets the ``--runtime`` option that does so). ``saved``: the rows are the ones
    saved in ``folder`` (:func:`render_saved`); they are not written again.
    """
    from ppknn.simulations.reporting import Figure, Report, Run, Series, jsonio, write, write_rows

    folder.mkdir(parents=True, exist_ok=True)
    mode = parallel or spec.compare.parallel
    if mode != spec.compare.parallel and "--runtime" not in command:
        command += " --runtime " + ("ray" if mode == "ray" else "inprocess")
    if not saved:
        _write_runs(folder, rows)
    (folder / "compare-run.json").write_text(jsonio.dumps(  # strict: NaN/inf as null
        {"command": command, "seconds": seconds, "quick": quick, "parallel": mode,
         "spec": spec.model_dump(mode="json")}) + "\n")
    agg = aggregate(rows)
    table = _aggregate_table(agg)
    write_rows(folder / "compare-aggregate.csv", table.rows)
    run_name = spec.compare.name
    protocols = sorted({r["protocol"] for r in agg})

    def accuracy_against(name: str, title: str, xlabel: str, x: str, **kw: Any) -> Figure:
        """One accuracy figure (a line per protocol, a panel per dataset)."""
        return Figure(name=name, title=title, xlabel=xlabel, x=x, panel_by="panel",
                      csv="compare-aggregate.csv",
                      ylabel="accuracy (mean, 95% CI over seeds)", ylim=(0.0, 1.05), **kw,
                      series=tuple(Series(label=p, y="accuracy", low="accuracy_low",
                                          high="accuracy_high", where={"protocol": p})
                                   for p in protocols))

    figures = (
        accuracy_against("utility_vs_privacy_level", "Accuracy at each privacy level",
                         "privacy level (ordinal: 1 = most private)", "level_rank",
                         categorical=True),
        accuracy_against("utility_vs_leakage",
                         "Accuracy against the strongest leak's advantage over baseline",
                         "strongest leak: advantage over baseline (mean)",
                         "leak_advantage"),
        accuracy_against("utility_vs_cost", "Accuracy against predicted WAN time",
                         "predicted WAN s per batch (transcript replay)",
                         "network_wan_s", logx=True),
        accuracy_against("utility_vs_empirical_epsilon",
                         "Accuracy against the measured empirical ε (attacks and audit)",
                         "empirical ε lower bound (largest measured)", "empirical_epsilon"),
    )
    figures = _draw_figures(figures, table, folder, run_name)
    report = Report(
        title=f"Comparison: {run_name}",
        run=Run(command=command, quick=quick, seconds=seconds,
                runtime="ray" if mode == "ray" else "inprocess"),
        intro=(_intro(spec, rows, mode, folder, saved=saved),),
        settings={"datasets": ", ".join(spec.compare.datasets),
                  "seeds": ", ".join(map(str, spec.compare.seeds)),
                  "base scenario": spec.base or "defaults"},
        sections=_sections(spec, rows, agg, figures))
    return write(report, folder / "compare.md")


def _write_runs(folder: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """The per-run table, written once: ``compare.parquet``.

    Typed columns, compressed with zstd at level 19 (on the full comparison's 1,950 runs,
    170 KB against snappy's 247 KB).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ppknn.simulations.reporting.csvio import columns_of

    names = columns_of(rows)  # every row's keys (a column some rows lack is null there)
    pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in names} for r in rows]),
                   folder / "compare.parquet", compression="zstd", compression_level=19)


def _aggregate_table(agg: Sequence[Mapping[str, Any]]) -> Any:
    """The aggregate as a :class:`~ppknn.simulations.reporting.Table` (every cell's keys)."""
    from ppknn.simulations.reporting import Table

    columns = tuple(dict.fromkeys(k for r in agg for k in r))
    table = Table(name="compare-aggregate", columns=columns)
    for r in agg:
        table.add(**{c: r.get(c, math.nan) for c in columns})
    return table


def _draw_figures(figures: Sequence[Any], table: Any, folder: Path, run_name: str
                  ) -> tuple[Any, ...]:
    """Draw each figure from the cells that ran; returns those with something to draw."""
    from ppknn.simulations.reporting import Table, plot

    drawn = [{**r, "panel": _panel(r["dataset"])} for r in table.rows
             if r["seeds"]]  # cells that ran, each with its panel's title
    kept = []
    for f in figures:  # a cell without a value on the figure's axis is left out of it
        ordered = sorted((r for r in drawn if isinstance(r.get(f.x), (int, float))
                          and math.isfinite(r[f.x])), key=operator.itemgetter("protocol", f.x))
        if ordered:  # (a figure with nothing to draw is left out of the report)
            drawn_table = Table(name=f.name, columns=(*table.columns, "panel"), rows=ordered)
            plot(f, drawn_table, folder=folder, run=run_name,
                 mpl_figure=_canvas(len({r['dataset'] for r in ordered})))
            kept.append(f)  # (its data: those rows of compare-aggregate.csv)
    return tuple(kept)


def _panel(dataset: str) -> str:
    """A dataset's panel title: a source's options go on a second line, comma-separated."""
    name, _, options = dataset.partition("?")
    return f"{name}\n{options.replace('&', ', ')}" if options else name


PANEL_INCHES = (3.9, 3.1)
"""Width and height of one dataset's panel in the figures (at the plots' 100 dpi): four
panels to a row, three when there are more; a 13-dataset figure is 1,170 × 1,600 px."""


def _canvas(n_panels: int) -> Any:
    """A blank figure for ``n_panels`` dataset panels, laid out as the plots lay them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    cols = n_panels if n_panels <= 4 else 3
    rows = -(-n_panels // cols)
    fig = MplFigure(figsize=(max(6.0, PANEL_INCHES[0] * cols), PANEL_INCHES[1] * rows + 0.5),
                    layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _intro(spec: Comparison, rows: Sequence[Mapping[str, Any]], mode: str, folder: Path, *,
           saved: bool) -> str:
    """The report's first paragraph: what ran, and how."""
    return (f"{len(rows)} runs: {len(spec.compare.datasets)} datasets × "
            f"{len(spec.protocol)} protocols × their privacy levels × "
            f"{len(spec.compare.seeds)} seeds, "
            + ("fanned out over Ray tasks (each cell's parties in-process in its task)"
               if mode == "ray" else "run one by one in one process")
            + (f"; the {sum(1 for r in rows if 'ray_over_inprocess' in r)} cells of "
               "`[compare.runtime_compare]` also ran with their parties on Ray"
               if any("ray_over_inprocess" in r for r in rows) else "")
            + ". Intervals are Student-t 95% over seeds."
            + (" This file was rendered from that run's saved rows (`compare.parquet`) "
               "by `python -m ppknn.simulations.compare "
               f"{folder.as_posix()}`; the numbers are the run's." if saved else ""))


def _sections(spec: Comparison, rows: Sequence[Mapping[str, Any]],
              agg: Sequence[Mapping[str, Any]], figures: Sequence[Any]) -> tuple[Any, ...]:
    """The report's sections, in order (those with nothing to show are left out)."""
    from ppknn.simulations.reporting import Section
    from ppknn.simulations.reporting.markdown import table_lines

    runtime_lines = _runtime_table(spec, rows, table_lines)
    audit_lines = _audit_table(spec, agg, table_lines)
    promise_lines = _promise_section(agg, table_lines, recorded=any("leak_bound" in r
                                                                    for r in rows))
    advice_lines = [f"- **{p}**: {text}" for p, text in advice(agg).items()]
    strongest = _strongest_text(agg)
    return (
        Section(heading="How the axes are made comparable", text=_axes_text(spec)),
        Section(heading="Results", figures=tuple(figures), text=(
            "\n".join(table_lines(*_results_table(agg, list(spec.profiles())))),)),
        *((Section(heading="Each protocol's strongest leak, by advantage over baseline",
                   text=strongest),) if strongest else ()),
        *((Section(heading="The attacks' ε lower bounds against the promise",
                   text=tuple(promise_lines)),) if promise_lines else ()),
        Section(heading="Ranking", text=_ranking_text(agg)),
        *((Section(heading="Audit: empirical ε at the same settings",
                   text=tuple(audit_lines)),) if audit_lines else ()),
        *((Section(heading="Wall time in-process and on Ray", text=tuple(runtime_lines)),)
          if runtime_lines else ()),
        Section(heading="When to choose which", text=tuple(advice_lines)),
    )


def _axes_text(spec: Comparison) -> tuple[str, ...]:
    """How utility, privacy and cost are measured (with the units and network profiles)."""
    units = [f"- **{e.name}**: `{e.privacy_key}` ∈ {e.levels} — {registry.get(e.name).guarantee}"
             for e in spec.protocol]
    nets = [f"- **{k}**: {v.latency_ms:g} ms per link, {v.bandwidth_mbps:g} Mbit/s"
            for k, v in spec.profiles().items()]
    return (
        "**Utility**: accuracy and macro-F1 on the same split as the non-private "
        "reference each protocol declares (scikit-learn kNN or radius-kNN for the "
        "neighbour protocols, Gaussian NB for the NB models) and scikit-learn's "
        "Gaussian NB. An unanswered query counts as wrong.",
        "**Privacy**: each protocol's guarantee is in its own unit (below), so the levels "
        "are not comparable across protocols; the measured axis is the strongest leakage "
        "the run's default attacks found on its own transcript (`ppknn leakage`), named "
        "per cell. **Which attack**: " + LEAK_RULE + " "
        "Where an attack tests a distinguishing event (DP NB's membership inference, "
        "DP-TT's side inference) each seed gives an empirical ε **point estimate** and a "
        "one-sided 95% **lower bound**; otherwise the quantity is the attack's success "
        "rate (a disclosure probability, a reconstruction or label inference rate). "
        "*attacks' leakage* is the mean of the seeds' finite point estimates, with the "
        "quantity's name as the attack gives it: for an ε it is an estimate, not a bound, "
        "and can exceed the promised ε by chance. *its baseline* is what an attacker "
        "without the transcript scores on the same targets (mean over seeds), *its "
        "advantage* the attack's figure minus the baseline's, with its 95% interval "
        "(section *Each protocol's strongest leak*). *attacks' ε lower bound* gives the "
        "cell's lower bound from its seeds' bounds and the largest single seed's (next "
        "section). A seed without a finite point estimate is left out of the mean, one "
        "without a finite bound out of the cell's bound, and each is counted (*n/a*). "
        "Attacks on a single run bound leakage from below, they guarantee nothing; the "
        "audit mode measures ε on neighbouring inputs.",
        *units,
        "**Cost**: messages and bytes from the transcript; hops on the critical path "
        "as the driver reports them; in-process protocol time (and, for the cells "
        "of `[compare.runtime_compare]`, the same cell's protocol time with its "
        "parties on Ray, measured in the same run); and the time predicted on a "
        "network by **replaying the transcript**: every message carries the "
        "messages its sender had received before sending it (and its sender's "
        "previous send), so a message leaves when those have arrived, a directed "
        "link carries one message at a time (bytes × 8 / bandwidth) and delivers "
        "it one latency later; the run takes until its last arrival. *critical "
        "path* counts the sequential hops (latencies) on the chain that sets that "
        "time: a ring pays one per owner per round, a central owner one round "
        "trip, independent exchanges overlap. Computation time is not modelled, "
        "nor a party's links sharing one network interface.",
        *nets)


def _results_table(agg: Sequence[Mapping[str, Any]], profiles: Sequence[str]
                   ) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The results table's header and rows: one row per cell (why, when it cannot run)."""
    from ppknn.simulations.reporting import fmt, interval

    head = ("dataset", "protocol", "privacy", "accuracy [95% CI]", "macro-F1", "reference",
            "Gaussian NB", "ε spent", "attacks' leakage: mean point estimate (quantity)",
            "its baseline (no transcript)", "its advantage over baseline [95% CI]",
            "attacks' ε lower bound: cell / largest seed", "audit ε", "messages", "hops",
            "critical path", *(f"{p} s" for p in profiles), "Ray / in-process [95% CI]")
    body = [(r["dataset"], r["protocol"], f"{r['privacy_key']} = {r['level']:g}",
             f"{fmt(r['accuracy'])} {interval(r['accuracy_low'], r['accuracy_high'])}",
             fmt(r["macro_f1"]), f"{r['reference']}: {fmt(r['reference_accuracy'])}",
             fmt(r["gaussian_nb_accuracy"]), fmt(r["epsilon_spent"]),
             _leak_text(r), fmt_num(r.get("leak_baseline")), _advantage_cell_text(r),
             _bound_text(r),
             fmt(r["audit_epsilon_lb"]) if r["audit_seeds"] else "—",
             fmt(r["messages"]), fmt(r["hops"]), fmt(r["critical_hops"]),
             *(fmt(r[f"network_{p}_s"]) for p in profiles),
             (f"{fmt(r['ray_over_inprocess'])} {interval(r['ray_low'], r['ray_high'])}"
              if r["ray_cells"] else "—")) if r["seeds"] else
            (r["dataset"], r["protocol"], f"{r['privacy_key']} = {r['level']:g}",
             f"cannot run: {r['cannot_run']}", *("—",) * (14 + len(profiles)))
            for r in agg]
    return head, body


def _advantage_cell_text(r: Mapping[str, Any]) -> str:
    """The advantage cell of the results table: mean [95% CI]; seeds without one: n/a.

    (Never ``[...] [...]``: Markdown reads two bracketed texts as a reference link.)
    """
    from ppknn.simulations.reporting import fmt, interval

    adv = _number(r.get("leak_advantage"))
    if not math.isfinite(adv):
        return "—"
    missing = r["seeds"] - int(r.get("leak_advantage_seeds", r["seeds"]))
    return (f"{fmt(adv)} {interval(r['leak_advantage_low'], r['leak_advantage_high'])}"
            + (f"; {missing} of {r['seeds']} seeds n/a" if missing else ""))


def _strongest_text(agg: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """Per protocol, at its most and least private setting: its strongest leak by advantage."""
    from ppknn.simulations.reporting.markdown import table_lines

    body = []
    for protocol in sorted({r["protocol"] for r in agg}):
        rows = [r for r in agg if r["protocol"] == protocol and r["seeds"]]
        ranks = sorted({r["level_rank"] for r in rows})
        for rank in dict.fromkeys((ranks[0], ranks[-1]) if ranks else ()):
            top = strongest_by_advantage([r for r in rows if r["level_rank"] == rank])
            if top is None:
                continue
            body.append((protocol, f"{top['privacy_key']} = {top['level']:g}",
                         top["leak_quantity"], top["dataset"], fmt_num(top["leak_value"]),
                         fmt_num(top.get("leak_baseline")), _advantage_cell_text(top)))
    if not body:
        return ()
    return (
        "Per protocol, at its most and its least private setting, the cell whose named "
        "leak has the largest advantage over its baseline (an attacker without the "
        "transcript, on the same targets), over the datasets: the attack, its mean point "
        "estimate, the baseline's and the advantage. The advantage is the mean over seeds "
        "with its Student-t 95% interval over seeds; where every seed gives the same "
        "advantage (no spread), the mean of the seeds' own 95% intervals (Newcombe's for "
        "a difference of rates, the difference of the ends for an ε). A cell whose rows "
        "carry no baseline is ranked by its point estimate and shows no advantage.",
        "\n".join(table_lines(("protocol", "setting", "strongest leak (attack: quantity)",
                               "on", "attack's figure (mean)", "baseline (mean)",
                               "advantage [95% CI]"), body)))


def _ranking_text(agg: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The ranking table and how to read it."""
    from ppknn.simulations.reporting import fmt
    from ppknn.simulations.reporting.markdown import table_lines

    ranks = ranking(agg)
    rank_head = tuple(ranks[0]) if ranks else ()
    return (
        "\n".join(table_lines(rank_head, ([fmt(v) if isinstance(v, float) else v
                                           for v in r.values()] for r in ranks))),
        "Second column: among the settings whose measured empirical ε (the largest "
        "lower bound measured on the cell: the attacks' cell bound, or the "
        "audit's) is at most 1, the most accurate; accuracy with its 95% interval "
        "over seeds; *tied_with* lists the settings whose interval overlaps the "
        "winner's. An empirical ε is a lower bound: a setting enters because no "
        "measurement found more than ε = 1, not because it guarantees it. Settings "
        "without an empirical ε measurement (the ring's and the PCA release's "
        "attacks report success rates, not ε) do not enter it, nor those whose "
        "attacks left a seed without an ε bound (n/a: its most leaking seeds may "
        "be the missing ones).")


def _leak_text(r: Mapping[str, Any]) -> str:
    """The attacks' leakage cell of the results table: mean point estimate, quantity, n/a."""
    from ppknn.simulations.reporting.formatting import fmt

    n, errors = r["seeds"], r.get("leak_errors", 0)
    if not r.get("leak_quantity"):
        return (f"n/a (the leakage scorer failed on {errors} of {n} seeds: `leak_error` in "
                "compare.csv)" if errors else "—")
    value = fmt(r["leak_value"]) if math.isfinite(r["leak_value"]) else "n/a"
    missing = n - r["leak_seeds"]
    na = ""
    if missing:
        na = f" [{missing} of {n} seeds n/a" + (
            "" if not errors else ": the scorer failed]" if errors == missing
            else f", {errors} of them: the scorer failed") + ("]" if errors != missing else "")
    return f"{value}{na} ({r['leak_quantity']})"


def _bound_text(r: Mapping[str, Any]) -> str:
    """The attacks' ε lower bound cell: the cell's bound / the largest seed's, seeds above."""
    from ppknn.simulations.reporting.formatting import fmt

    if not _is_epsilon(r.get("leak_quantity", "")):
        return "—"
    m, n = r["epsilon_lb_seeds"], r["seeds"]
    if not m:
        return f"n/a (none of {n} seeds recorded a bound)"
    text = f"{fmt(r['empirical_epsilon_lb'])} / {fmt(r['epsilon_lb_max'])}"
    if r["seeds_above"]:
        text += f" (**{r['seeds_above']} of {m} seeds above ε = {r['leak_promise']:.3g}**)"
    return text + (f" [{n - m} of {n} seeds n/a]" if m < n else "")


def _promise_section(agg: Sequence[Mapping[str, Any]], table_lines: Callable[..., list[str]],
                     *, recorded: bool) -> list[str]:
    """The attacks' per-seed ε lower bounds against each cell's promise, tested as a family."""
    cells = [r for r in agg if r.get("seeds") and _is_epsilon(r.get("leak_quantity", ""))]
    if not cells:
        return []
    alpha = PER_SEED_ALPHA
    body, tests_all, above_all = _promise_rows(cells, alpha)
    family = (
        f"Comparing every per-seed bound with its promise makes many tests: if every promise "
        f"held, each would exceed it with probability at most {alpha:.0%}, independently, so "
        f"about {alpha:.0%} of them are expected above it by chance. The table counts them "
        f"per setting, with that expectation and the probability of at least the observed "
        f"count if every promise held (binomial tail; a small value points at a broken "
        f"promise). In all, {above_all} of {tests_all} per-seed bounds exceed their promise, "
        f"against {alpha * tests_all:.1f} expected by chance.")
    lines = [*_promise_intro(cells, alpha, recorded=recorded), family, "\n".join(table_lines(
        ("protocol", "setting", "cells", "per-seed bounds", "n/a seeds", "promised ε",
         "undecided: > 0, no promise", "bounds compared", "above the promise",
         f"expected by chance ({alpha:.0%})", "P(at least this many | promises hold)"),
        body))]
    return lines + _flagged_lines(cells, alpha, table_lines)


def _promise_intro(cells: Sequence[Mapping[str, Any]], alpha: float, *,
                   recorded: bool) -> list[str]:
    """How a cell's ε lower bound is made from its seeds', what n/a and the promise mean."""
    most = max(r["epsilon_lb_seeds"] for r in cells)
    _, k, conf = cell_bound([0.0] * most, alpha)
    intro = (
        f"Each seed's attack gives a one-sided lower bound on ε (Clopper-Pearson on the "
        f"test's hit rates: 95% for DP NB's membership test, 97.5% for DP-TT's side "
        f"inference), so each exceeds the true ε with probability at most {alpha:.0%}. A "
        f"cell's lower bound is the k-th largest of its m per-seed bounds, k the smallest "
        f"count with P(Binomial(m, {alpha:g}) ≥ k) ≤ {alpha:g} (k = {k} for m = {most}): "
        f"the true ε can lie below it only if at least k independent seeds' bounds exceeded "
        f"it, so it is itself a lower bound at {1 - alpha:.0%} or more ({conf:.1%} for m = "
        f"{most}). The largest single seed's bound is shown beside it but is no such bound: "
        f"of {most} seeds' {1 - alpha:.0%} bounds the largest exceeds the truth with "
        f"probability up to {1 - (1 - alpha) ** most:.0%}.")
    na = ("A seed is n/a when its attack recorded no finite bound; it is left out of the "
          "cell's bound and counted, and a cell with n/a seeds stays out of the ranking at "
          "empirical ε ≤ 1." + (
          " A seed whose point estimate is infinite (one arm of the test never fired) keeps "
          "its finite bound but is left out of the mean point estimate, which then "
          "understates the cell's leakage." if recorded else
          " In this file a seed whose point estimate is infinite (one arm of the test never "
          "fired: no member rejected by the membership test, or the server right on every "
          "decision) was recorded without its bound, so the n/a seeds are the ones where "
          "the attack did best: a cell with n/a seeds understates its leakage, in its mean "
          "point estimate and in its bound."))
    promise = ("A cell's promise is the ε its attack is compared with (per released model "
               "for DP NB, per decision for DP-TT), as the attack records it" if recorded else
               "This file records no promise with the attacks, so a cell's promise is its "
               "audit's, which is in the same unit (ε per released model for DP NB, per "
               "decision for DP-TT); a cell without an audit has none: a positive bound "
               "there is *undecided*, a zero bound exceeds no promise")
    return [intro, na + " " + promise + "."]


def _promise_rows(cells: Sequence[Mapping[str, Any]], alpha: float
                  ) -> tuple[list[tuple[str, ...]], int, int]:
    """Per (protocol, setting): the family table's row; with the bounds compared and above."""
    from scipy import stats

    tests_all = above_all = 0
    body = []
    for protocol, rank in sorted({(r["protocol"], r["level_rank"]) for r in cells}):
        rs = [r for r in cells if (r["protocol"], r["level_rank"]) == (protocol, rank)]
        bounds = sum(r["epsilon_lb_seeds"] for r in rs)
        undecided = sum(r["seeds_undecided"] for r in rs)
        tests, above = bounds - undecided, sum(r["seeds_above"] for r in rs)
        tests_all, above_all = tests_all + tests, above_all + above
        promises = sorted({r["leak_promise"] for r in rs if math.isfinite(r["leak_promise"])})
        shown = ("not recorded" if not promises else f"{promises[0]:.3g}" if len(promises) == 1
                 else f"{promises[0]:.3g} to {promises[-1]:.3g}")
        tail = float(stats.binom.sf(above - 1, tests, alpha)) if above else 1.0
        top = max((r["undecided_max"] for r in rs if math.isfinite(r["undecided_max"])),
                  default=math.nan)
        body.append((protocol, f"{rs[0]['privacy_key']} = {rs[0]['level']:g}", str(len(rs)),
                     str(bounds), str(sum(r["seeds"] - r["epsilon_lb_seeds"] for r in rs)),
                     shown, f"{undecided} (largest {top:.3g})" if undecided else "0",
                     str(tests), str(above), f"{alpha * tests:.1f}",
                     f"{tail:.2g}" if tests else "—"))
    return body, tests_all, above_all


def _flagged_lines(cells: Sequence[Mapping[str, Any]], alpha: float,
                   table_lines: Callable[..., list[str]]) -> list[str]:
    """The cells with a seed's bound above the promise, as a table (none: nothing)."""
    from ppknn.simulations.reporting.formatting import fmt

    flagged = [r for r in cells if r["seeds_above"]]
    if not flagged:
        return []
    return [
        "The cells with a seed's bound above the promise (each a single "
        f"{1 - alpha:.0%} bound among the family above; the cell's own bound "
        "is what the cell supports):",
        "\n".join(table_lines(
            ("dataset", "protocol", "setting", "promised ε", "seeds above (their bounds)",
             "seeds with a bound", "median seed bound", "cell's ε lower bound"),
            ((r["dataset"], r["protocol"], f"{r['privacy_key']} = {r['level']:g}",
              f"{r['leak_promise']:.3g}", r["above_promise"], str(r["epsilon_lb_seeds"]),
              fmt(r["epsilon_lb_median"]),
              f"{fmt(r['empirical_epsilon_lb'])} ({_ordinal(r['epsilon_lb_rank'])} largest "
              f"of {r['epsilon_lb_seeds']}, {r['epsilon_lb_confidence']:.1%})")
             for r in flagged)))]


def _runtime_table(spec: Comparison, rows: Sequence[Mapping[str, Any]],
                   table_lines: Callable[..., list[str]]) -> list[str]:
    """Per protocol: the Ray / in-process ratio of protocol wall time over the compared cells."""
    rc = spec.compare.runtime_compare
    measured = [r for r in rows if "ray_over_inprocess" in r
                and math.isfinite(r["ray_over_inprocess"])]
    if rc is None or not measured:
        return []
    body = []
    for protocol in sorted({r["protocol"] for r in measured}):
        rs = [r for r in measured if r["protocol"] == protocol]
        ratio, lo, hi = _t_interval([r["ray_over_inprocess"] for r in rs])
        local = statistics.fmean(r["protocol_s"] for r in rs)
        remote = statistics.fmean(r["ray_protocol_s"] for r in rs)
        start = statistics.fmean(r["ray_startup_s"] for r in rs)
        same = sum(bool(r["ray_same_row"]) for r in rs)
        body.append((protocol, str(len(rs)), f"{local:.4f}", f"{remote:.4f}",
                     f"{ratio:.2f} [{lo:.2f}, {hi:.2f}]", f"{start:.2f}",
                     f"{same} of {len(rs)}"))
    where = (f"seeds {rc.seeds}; datasets "
             f"{', '.join(rc.datasets) if rc.datasets else 'all'}; protocols "
             f"{', '.join(rc.protocols) if rc.protocols else 'all'}; layout {rc.layout}")
    return [
        f"Each of these cells ({where}) ran twice in this run: in-process, then with its "
        "parties as Ray actors on this machine. The ratio is the protocol's wall time on "
        "Ray over in-process in the same cell (95% t interval over the cells); actor "
        "start-up is not in the protocol time and is shown apart. Small runs are dominated "
        "by per-call overheads, so the ratio says what Ray costs at this size, not at "
        "scale; the machine was shared, so times carry its load.",
        "\n".join(table_lines(("protocol", "cells", "in-process s (mean)", "Ray s (mean)",
                               "Ray / in-process [95% CI]", "Ray start-up s",
                               "same row on Ray"), body))]


def _audit_table(spec: Comparison, agg: Sequence[Mapping[str, Any]],
                 table_lines: Callable[..., list[str]]) -> list[str]:
    """The audited cells: the promise, the attacks' and the audit's ε lower bounds."""
    au = spec.compare.audit
    rows = [r for r in agg if r.get("audit_seeds")]
    if au is None or not rows:
        return []
    covered = set(replay_audited())
    skipped = sorted({e.name for e in spec.protocol} - covered)
    body = [(r["dataset"], r["protocol"], f"{r['privacy_key']} = {r['level']:g}",
             fmt_num(r["audit_bound"]), fmt_num(r["empirical_epsilon_lb"]),
             fmt_num(r["audit_epsilon_lb"]), str(r["audit_seeds"]),
             "yes" if r["audit_epsilon_lb"] <= r["audit_bound"] + 1e-9 else "**no**")
            for r in rows]
    where = (f"seeds {au.seeds}; datasets {', '.join(au.datasets) if au.datasets else 'all'}"
             f"; {au.trials} reruns per neighbouring input; {au.confidence:.0%} one-sided "
             "Clopper-Pearson")
    return [
        f"The audit mode (`ppknn audit`) reruns a cell's release on the original input and "
        f"on a neighbour (one training row removed, or the query reflected for DP-TT) and "
        f"lower-bounds the ε it spends ({where}). It covers the protocols that promise ε "
        f"({', '.join(sorted(covered & {e.name for e in spec.protocol}))}); "
        + (f"{', '.join(skipped)} promise no ε (a disclosure probability, an "
           "amplification) and are measured by their attacks only. " if skipped else "")
        + "The promise column is the ε the audited unit is charged (per request, per "
        "model, per decision); a lower bound above it would be a broken promise. An audit "
        "is a lower bound with limited power: with n test draws per input (95% "
        "Clopper-Pearson) it cannot certify more than about ln(n / 3) (2.8 at the 50 test "
        "draws per input of 100 reruns, as for DP-TT and DP NB here; DP owner audits draw "
        "25 releases per rerun), so a large promise is never shown to be "
        "exceeded, and 0 means that no ε was detected, not that none is spent.",
        "\n".join(table_lines(("dataset", "protocol", "setting", "promised ε (audited unit)",
                               "attacks' ε lower bound (cell)", "audit ε lower bound",
                               "audited seeds", "within the promise"), body))]


def fmt_num(v: Any) -> str:
    """A number for a table (— when missing)."""
    return f"{v:.3g}" if isinstance(v, (int, float)) and math.isfinite(v) else "—"


def load_rows(folder: Path) -> list[dict[str, Any]]:
    """The per-run rows a comparison saved in ``folder``, as :func:`run_comparison` gave them.

    From ``compare.parquet`` (full precision; a null is a key the row did not have), with
    any column only ``compare.csv`` holds added from it (its floats have six digits).
    """
    import pyarrow.parquet as pq

    from ppknn.simulations.reporting.csvio import read_rows

    folder = Path(folder)
    if not (folder / "compare.parquet").is_file():
        raise ConfigError(f"{str(folder)!r} holds no compare.parquet: give the folder of a "
                          "comparison run")
    rows = [{k: v for k, v in r.items() if v is not None}
            for r in pq.read_table(folder / "compare.parquet").to_pylist()]
    if (folder / "compare.csv").is_file():
        more = read_rows(folder / "compare.csv")
        if [r.get("run_id") for r in more] != [r.get("run_id") for r in rows]:
            raise DataError(f"{folder}: compare.csv and compare.parquet hold different runs")
        for row, extra in zip(rows, more, strict=True):
            row.update({k: v for k, v in extra.items() if k not in row and v is not None})
    return rows


def render_saved(folder: Path, spec: str | os.PathLike[str] | Mapping[str, Any] | None = None,
                 *, command: str | None = None, seconds: float | None = None,
                 parallel: str | None = None) -> Path:
    """Write ``folder``'s report again from the rows its run saved (nothing is re-run).

    The run's facts (command, seconds, runtime, spec) come from ``compare-run.json``;
    arguments given here stand in for a fact the folder does not record (they are
    recorded there with the report).
    """
    import json

    folder = Path(folder)
    facts_file = folder / "compare-run.json"
    facts = json.loads(facts_file.read_text()) if facts_file.is_file() else {}
    source = spec if spec is not None else facts.get("spec")
    if source is None:
        raise ConfigError(f"{str(folder)!r} records no spec (no compare-run.json): give it")
    if command is None and "command" not in facts:
        raise ConfigError(f"{str(folder)!r} records no command (no compare-run.json): give it")
    return write_report(load_comparison(source), load_rows(folder), folder,
                        command=command if command is not None else facts["command"],
                        seconds=seconds if seconds is not None else facts.get("seconds"),
                        quick=bool(facts.get("quick", False)),
                        parallel=parallel or facts.get("parallel"), saved=True)


def main(argv: Sequence[str] | None = None) -> Path:
    """``python -m ppknn.simulations.compare FOLDER``: :func:`render_saved` from the shell."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m ppknn.simulations.compare",
        description="Write a comparison folder's report again from its saved rows.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--spec", help="the comparison spec TOML, when the folder has no "
                        "compare-run.json")
    parser.add_argument("--command", help="the command that made the run")
    parser.add_argument("--seconds", type=float, help="the run's wall time")
    parser.add_argument("--runtime", choices=("inprocess", "ray"),
                        help="how the cells ran, when the command's --runtime overrode the spec")
    args = parser.parse_args(argv)
    parallel = {"inprocess": "sequential", "ray": "ray", None: None}[args.runtime]
    return render_saved(args.folder, args.spec, command=args.command, seconds=args.seconds,
                        parallel=parallel)


__all__ = ["HEAVY_LEAK", "advice", "fmt_num", "load_rows", "main", "render_saved",
           "write_report"]


if __name__ == "__main__":  # pragma: no cover
    main()
