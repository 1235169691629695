"""Reproduction of Lepert (2022), chapter 6: DP-TT against geo-indistinguishability.

``ppknn reproduce lepert [--quick] [--runtime ray]`` runs the thesis's experiments as
scenario grids of the ``dptt`` registry plugin (every DP-TT point, and the
GEO baseline measured beside it, is one scenario run exactly as ``ppknn
run`` runs it: :mod:`ppknn_reproductions.experiments.dptt_sweeps`), plus one study
that is not a protocol run, the empirical privacy audit
(:mod:`ppknn_reproductions.experiments.dptt_audit`). It writes one CSV and one PNG
per figure into the output folder (and each grid's long table under
``grids/``, the synthetic datasets under ``data/``), the PNGs also next to
the report, and the Markdown report: a :class:`~simulations.reporting.Report`
built from the run's tables, with the thesis's claims as
:class:`~simulations.reporting.Claim` data (:mod:`.lepert_claims`).

The thesis uses 100,000 points and, for Fig. 6.18, also 1,000,000; the
default run uses 100,000 (Fig. 6.18 compares 10,000 and 100,000) and
``ppknn reproduce lepert --set n_points=1000000`` runs everything
on 1,000,000 points (Fig. 6.18 then compares 100,000 and 1,000,000).
Settings and readings: :mod:`ppknn_reproductions.experiments.dptt_sweeps`,
:mod:`protocols.dptt.data`.

Most figures are drawn by the shared style (:func:`simulations.reporting.line_plot`:
raw and top-5 accuracy as two panels with 95% bands, GEO dashed). Two kinds
it does not draw are drawn by :func:`custom_plot`: the DIS families, where
a DIS variant and the GEO release matched to it share a colour, and
Fig. 6.17, where GEO has its own x axis (ε*/Δ). Figures over the privacy
radius run from the largest radius to the smallest, as in the thesis.
"""

from __future__ import annotations

import math
import shutil
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.protocols.dptt.traversal import early_stop_disagreements
from ppknn.protocols.dptt.variants import Variant, printed_section_5_2_epsilon
from ppknn.simulations.grids import write_grid_rows
from ppknn.simulations.reporting import (
    Claim,
    Figure,
    Report,
    Run,
    Section,
    Series,
    Table,
    fmt,
    interval,
    line_plot,
    save_png,
)
from ppknn.simulations.reporting import write as write_markdown
from ppknn_reproductions.experiments.dptt_audit import AUDIT_POINTS, AUDIT_VARIANTS, audit_study
from ppknn_reproductions.experiments.dptt_evaluation import Row
from ppknn_reproductions.experiments.dptt_sweeps import (
    CALIBRATION_VARIANTS,
    DRAW_RADIUS,
    Grid,
    Sweep,
)
from ppknn_reproductions.lepert_claims import (
    accuracy_interval,
    at_final_epsilon,
    check_claims,
    cmp_setup_at,
)

DESCRIPTION = "Lepert: DP-TT private kd-tree traversal vs geo-indistinguishability (Ch. 6)"
"""One line for ``ppknn reproduce``'s list of reproductions."""


FIG_DIR = "lepert"
"""Figures go to ``<report dir>/lepert/``."""

TITLE = ("Lepert (2022): differentially private nearest-neighbour queries by kd-tree "
         "traversal (DP-TT)")
COLUMNS = ("series", *(f.name for f in fields(Row)), "nn_low", "nn_high", "top5_low",
           "top5_high")
"""Columns of every figure's table (CSV): the series label, the measured row, 95% intervals."""
PANELS = (("nn", "raw NN accuracy"), ("top5", "top-5 accuracy"))
R_AXIS = "privacy radius r (DIS sensitivity bound)"
E_AXIS = "final ε (bounded range)"
ACCOUNT_VARIANTS = ("basic", "P4", "P8", "E2", "E8", "GS", "N20", "GS-N20")

THESIS_FIGURES = {  # (utility, family) -> thesis figure numbers for 1-D and 2-D
    ("dis", "P"): ("6.5", "6.6"), ("dis", "E"): ("6.7", "6.8"), ("dis", "GS"): ("6.9", "6.9"),
    ("dis", "N"): ("6.10", "6.11"), ("dis", "GS-N"): ("6.12", "6.13"),
    ("cmp", "P"): ("6.19", "6.20"), ("cmp", "E"): ("6.21", "6.22"),
    ("cmp", "GS"): ("6.23", "6.23"), ("cmp", "N"): ("6.24", "6.25"),
    ("cmp", "GS-N"): ("6.26", "6.27"),
}

DEVIATIONS = (
    "The real location datasets (Gowalla, Brightkite; Figs. 6.16, 6.30, 6.31) are not "
    "available offline. `protocols.dptt.data.load_checkins` reads SNAP's check-in format and "
    "`quantise` applies the thesis's grid (500 latitude x 200 longitude cells over the San "
    "Francisco or Austin box, non-empty cell centres as the points); both are tested on a "
    "small file in that format.",
    "The thesis does not give the number of queries, the members of each variant family "
    "(beyond P0/P4/P8, E8, N5/N20), δ, or how GEO's ε* is split over repeated runs; the "
    "choices are in the settings above. Each repeated GEO run gets the whole ε*, as the "
    "thesis's rule reads, which favours GEO.",
    "CMP sends a query equal to a node's value to the right (Algorithm 5), not to the left as "
    "Algorithm 14's strict test would, so that a query equal to a data point can reach it; the "
    "two differ only on ties.",
    "The thesis's caption of Fig. 6.1 repeats Fig. 6.2's; its text describes the share of data "
    "points sent, which is what is plotted here (client's count of distinct data points "
    "received: node values and released points).",
    "The data law: the thesis's \"uniformly drawing ... from a 0 to 1 billion normal "
    "distribution\" is read as a normal law spanning [0, 10^9] (see the setting).",
    "The calibration of the exponential mechanism: every figure and claim uses Algorithm "
    "12's exp(εu/2Δ). The thesis's E8 accuracies follow if its code drew from exp(εu/Δ); that "
    "reading (`protocol.calibration = \"thesis-reading\"`) is measured beside it in its own "
    "section and flagged there as a reading, not used elsewhere.",
    "The GEO baseline is measured inside each DP-TT scenario run (the plugin's `geo_*` "
    "metrics, `protocol.geo_radius`), on the same split, against that run's release, from its "
    "own stream; the thesis ran GEO separately. GEO alone (Fig. 6.17) rides on a basic CMP run "
    "whose DP-TT numbers are not used.",
    "Data and streams: each dataset is one pool of N + Q points of the law, split once by "
    "the settings' seed into the server's N rows and the client's Q queries (before, points "
    "and queries were drawn separately); every scenario run starts its client and GEO "
    "streams from the same seed (common random numbers: the points of a curve are not "
    "independent draws, each is a valid measurement; before, one stream ran through the "
    "whole sweep). The points carry a "
    "label (first coordinate above the middle of the domain) that the registry's "
    "classification columns need; the thesis's accuracies do not use it.",
    "Final ε: the thesis's §5.2 prints the bounded-range bound with the count inside the KL "
    "term (`KL(cε)`); that is not Theorem 2.13, which it cites, and gives larger values. "
    "Theorem 2.13 is used; the printed bound is shown beside it in the accounting table.",
    "Labels: the server releases each released point's class label with it "
    "(`protocols.dptt.driver`; the thesis releases points only), so that the registry's "
    "client can classify. The thesis's accuracies, and every accuracy of this report, "
    "measure the released points only; the server's data is not protected either way "
    "(thesis §5.2).",
)
E_RULE = (
    "E(s) stops every thread at depth H − s of the worst-case height H, so every query "
    "makes exactly H − s decisions, as §5.4 counts them; Algorithm 16 tests the node's "
    "height (`P.height > S`). The two agree except inside a subtree one level shorter than "
    "the worst case, where Algorithm 16 would stop one level higher (one decision fewer, a "
    "subtree of height s released instead of s − 1); flagged in "
    "`protocols/dptt/traversal.py`. ")
"""The E(s) deviation; :func:`_deviations` adds whether this report's trees reach it."""


def _early_stops(grid: Grid, audit: AuditSettings | None) -> list[tuple[int, str, int]]:
    """``(N, variant, nodes)`` for every E variant and tree size the report runs.

    ``nodes`` counts where Algorithm 16's height rule would stop earlier than
    the depth rule (:func:`protocols.dptt.traversal.early_stop_disagreements`).
    """
    main = {*(v for f in grid.families.values() for v in f), *grid.dis_comparison,
            *grid.cmp_comparison, *CALIBRATION_VARIANTS}
    runs = {(grid.n_points, v) for v in main}
    runs |= {(n, v) for n in grid.sent_sizes for v in grid.sent_variants}
    runs |= {(AUDIT_POINTS, v) for v in (audit.variants if audit else ())}
    out = []
    for n, label in sorted(runs):
        v = Variant.parse(label)
        if v.kind == "E":
            out.append((n, v.label, early_stop_disagreements(n, v.s)))
    return out


def _deviations(grid: Grid, audit: AuditSettings | None) -> tuple[str, ...]:
    """:data:`DEVIATIONS` and the E(s) rule, with whether the report's trees reach it."""
    stops = _early_stops(grid, audit)
    hit = [f"{v} on {n:,} points ({k} nodes)" for n, v, k in stops if k]
    where = ", ".join(f"{v} on {n:,}" for n, v, _ in stops)
    tail = (f"On this report's trees it changes {'; '.join(hit)}." if hit else
            f"No tree of this report has such a node ({where or 'no E variant'} points), so "
            "the two rules give the same traversals here.")
    return (*DEVIATIONS, E_RULE + tail)


@dataclass(frozen=True)
class Plot:
    """One thesis figure: what to draw, the rows it is drawn from, and how.

    ``style`` is ``"accuracy"`` (shared style, raw and top-5 panels),
    ``"radius"`` (the same over the privacy radius, largest first),
    ``"sent"`` (Fig. 6.1, shared style), ``"paired"`` or ``"twin"``
    (:func:`custom_plot`). A ``"twin"`` plot draws its GEO series against
    ``twin_x`` on a second x axis labelled ``twin_xlabel``.
    """

    figure: Figure
    table: Table
    style: str = "accuracy"
    twin_x: str = ""
    twin_xlabel: str = ""

    @property
    def name(self) -> str:
        """The file stem of the figure's CSV and PNG."""
        return self.figure.name

    def x_of(self, row: dict[str, Any]) -> str:
        """The column a row is drawn against."""
        return self.twin_x if self.style == "twin" and row["method"] == "GEO" else self.figure.x


Curve = tuple[str, Sequence[Row]]
"""A series label and its measured rows."""


def _table(name: str, curves: Sequence[Curve]) -> Table:
    """The rows of a figure, one per (series, configuration), with 95% accuracy intervals."""
    table = Table(name=name, columns=COLUMNS)
    for label, rows in curves:
        for r in rows:
            nn, top5 = (accuracy_interval(a, r.n_queries)
                        for a in (r.nn_accuracy, r.top5_accuracy))
            table.add(series=label, **r.as_dict(), nn_low=nn[0], nn_high=nn[1],
                      top5_low=top5[0], top5_high=top5[1])
    return table


def _accuracy(name: str, title: str, curves: Sequence[Curve], x: str, xlabel: str,
              style: str = "accuracy", **twin: str) -> Plot:
    figure = Figure(
        name=name, title=title, xlabel=xlabel, ylabel="accuracy (95% band)", x=x,
        panel_by="panel", group_by="series", logx=True, ylim=(-0.02, 1.02),
        series=(Series(y="accuracy", low="low", high="high", band=True,
                       where={"method": "DP-TT"}),
                Series(y="accuracy", low="low", high="high", band=True, dashed=True,
                       where={"method": "GEO"})))
    return Plot(figure, _table(name, curves), style, **twin)


def _thesis(utility: str, family: str, dims: int) -> str:
    numbers = THESIS_FIGURES.get((utility, family))
    return f" (thesis Fig. {numbers[dims - 1]})" if numbers and dims in (1, 2) else ""


def build_figures(sweep: Sweep) -> list[Plot]:
    """Run every experiment of the grid; returns the figures in thesis order.

    The order of the sweep's calls is fixed (the client's stream is drawn in it).
    """
    g = sweep.grid
    plots: list[Plot] = []
    # Fig. 6.1: data sent to the client against the database size
    sent = [(f"DP-TT-CMP {v}", [sweep.cmp(2, v, g.sent_epsilon, n) for n in g.sent_sizes])
            for v in g.sent_variants]
    name = "fig6_01_data_sent"
    plots.append(Plot(Figure(
        name=name, title=f"Share of the data sent to the client (2-D, CMP ε = "
        f"{g.sent_epsilon:g}; thesis Fig. 6.1)",
        xlabel="database size N", ylabel="share of the data sent to the client", x="n_points",
        group_by="series", logx=True, logy=True,
        hlines=(("naive protocol: the whole tree (100%)", 1.0),),
        series=(Series(y="seen_fraction"),)), _table(name, sent), "sent"))
    # Figs. 6.2-6.4: basic DIS vs GEO; 6.5-6.13: families; 6.14/6.15: comparison
    for dims in g.dims:
        pairs = [sweep.dis(dims, "basic", r) for r in g.radii]
        plots.append(_accuracy(
            f"fig6_0{1 + dims}_dis_vs_geo_{dims}d",
            f"Basic DP-TT-DIS and GEO, {dims}-D, N = {g.n_points:,} (thesis Fig. 6.{1 + dims})",
            [("DP-TT-DIS", [p[0] for p in pairs]), ("GEO", [p[1] for p in pairs])],
            "radius", R_AXIS, "radius"))
    plots.append(_accuracy(
        "fig6_04_dis_1d_vs_2d", "Basic DP-TT-DIS in 1-D and 2-D (thesis Fig. 6.4)",
        [(f"DP-TT-DIS {d}-D", [sweep.dis(d, "basic", r)[0] for r in g.radii]) for d in g.dims],
        "radius", R_AXIS, "radius"))
    for family, labels in g.families.items():
        for dims in g.dims:
            curves: list[Curve] = []
            for v in labels:
                pairs = [sweep.dis(dims, v, r) for r in g.radii]
                curves += [(f"DIS {v}", [p[0] for p in pairs]),
                           (f"GEO ({v})", [p[1] for p in pairs])]
            plots.append(_accuracy(
                f"dis_{family.lower()}_{dims}d", f"DP-TT-DIS {family} and GEO (fair release), "
                f"{dims}-D{_thesis('dis', family, dims)}", curves, "radius", R_AXIS, "paired"))
    for dims in g.dims:
        plots.append(_accuracy(
            f"fig6_{13 + dims}_dis_comparison_{dims}d",
            f"DP-TT-DIS variants compared, {dims}-D (thesis Fig. 6.{13 + dims})",
            [(v, [sweep.dis(dims, v, r)[0] for r in g.radii]) for v in g.dis_comparison],
            "radius", R_AXIS, "radius"))
    # Fig. 6.17: CMP basic, and GEO on its own scale
    cmp_basic = [(f"DP-TT-CMP {d}-D", [sweep.cmp(d, "basic", e) for e in g.cmp_epsilons])
                 for d in g.dims]
    geo_alone = [(f"GEO {d}-D", [sweep.geo_alone(d, x) for x in g.geo_ratios]) for d in g.dims]
    plots.append(_accuracy(
        "fig6_17_cmp_vs_geo", "Basic DP-TT-CMP against final ε; GEO (ε* = 1) against ε*/Δ "
        "(thesis Fig. 6.17)", cmp_basic + geo_alone, "final_epsilon_br", E_AXIS, "twin",
        twin_x="geo_per_unit", twin_xlabel="GEO ε*/Δ"))
    # Fig. 6.18: database size
    curves = []
    for dims in g.dims:
        for n in g.size_comparison:
            curves.append((f"{dims}-D, N = {n:,}",
                           [sweep.cmp(dims, "basic", e, n) for e in g.cmp_epsilons]))
    plots.append(_accuracy("fig6_18_cmp_sizes",
                           "Basic DP-TT-CMP for two database sizes (thesis Fig. 6.18)", curves,
                           "final_epsilon_br", E_AXIS))
    # Figs. 6.19-6.27: CMP families; 6.28/6.29: comparison (+ GEO at global sensitivity)
    for family, labels in g.families.items():
        for dims in g.dims:
            plots.append(_accuracy(
                f"cmp_{family.lower()}_{dims}d",
                f"DP-TT-CMP {family}, {dims}-D{_thesis('cmp', family, dims)}",
                [(v, [sweep.cmp(dims, v, e) for e in g.cmp_epsilons]) for v in labels],
                "final_epsilon_br", E_AXIS))
    for dims in g.dims:
        curves = [(v, [sweep.cmp(dims, v, e) for e in g.cmp_epsilons]) for v in g.cmp_comparison]
        curves.append(("GEO, global sensitivity 1e9 (basic's ε*)",
                       [sweep.cmp_geo_global(dims, "basic", e) for e in g.cmp_epsilons]))
        plots.append(_accuracy(
            f"fig6_{27 + dims}_cmp_comparison_{dims}d",
            f"DP-TT-CMP variants compared, {dims}-D (thesis Fig. 6.{27 + dims})", curves,
            "final_epsilon_br", E_AXIS))
    # the calibration reading: exp(εu/2Δ) (proven) against exp(εu/Δ), at the stated final ε
    curves = []
    for dims in g.dims:
        for v in CALIBRATION_VARIANTS:
            for cal, label in (("proven", "exp(εu/2Δ), proven"),
                               ("thesis-reading", "exp(εu/Δ), thesis reading")):
                curves.append((f"{dims}-D {v}, {label}",
                               [sweep.cmp(dims, v, e, calibration=cal) for e in g.cmp_epsilons]))
    plots.append(_accuracy(
        "calibration_cmp", "DP-TT-CMP " + ", ".join(CALIBRATION_VARIANTS) + " under both "
        "calibrations of the exponential mechanism, against the final ε the thesis would "
        "state (a reading)", curves, "stated_final_epsilon_br",
        "final ε as stated (ε-bounded-range decisions)"))
    return plots


# ------------------------------------------------------------------ drawing
def _panels(plot: Plot) -> Table:
    """The figure's rows in long form: one row per (panel: raw / top-5, configuration)."""
    x = plot.figure.x
    return Table.from_rows(plot.name, (
        {"series": r["series"], "method": r["method"], x: r[x], "panel": label,
         "accuracy": r[f"{m}_accuracy"], "low": r[f"{m}_low"], "high": r[f"{m}_high"]}
        for m, label in PANELS for r in plot.table.rows))


def _blank(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def draw(plot: Plot, folder: Path, run: str) -> Path:
    """Draw one figure into ``folder`` (its PNG's path); ``run`` names the run in the title."""
    if plot.style in ("paired", "twin"):
        return custom_plot(plot, folder, run)
    if plot.style == "sent":
        return line_plot(plot.figure, plot.table, folder=folder, run=run)
    if plot.style == "accuracy":
        return line_plot(plot.figure, _panels(plot), folder=folder, run=run)
    canvas = _blank(9.2, 4.4)  # "radius": the shared style, then the x axes inverted
    path = line_plot(plot.figure, _panels(plot), folder=folder, run=run, mpl_figure=canvas)
    for ax in canvas.axes:
        ax.invert_xaxis()
    save_png(canvas, path)
    return path


def custom_plot(plot: Plot, folder: Path, run: str) -> Path:
    """The figures the shared style does not draw, raw and top-5 panels with 95% bands.

    ``"paired"``: each DIS variant and the GEO release matched to it share a
    colour (GEO dashed), radius axis largest first. ``"twin"``: the GEO
    series on a second x axis (``plot.twin_x``), dotted.
    """
    import matplotlib

    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    twin = plot.style == "twin"
    table = plot.table
    labels = list(dict.fromkeys(table.column("series")))
    variants = list(dict.fromkeys(table.column("variant", method="DP-TT")))
    fig = _blank(9.2, 4.8 if twin else 4.4)
    for ax, (m, ylabel) in zip(fig.subplots(1, 2), PANELS):
        top = ax.twiny() if twin else None
        handles = []
        for i, label in enumerate(labels):
            rows = table.where(series=label)
            geo = rows[0]["method"] == "GEO"
            on = top if geo and top is not None else ax
            x = plot.x_of(rows[0])
            rows.sort(key=lambda r: r[x])
            colour = cycle[(i if twin else variants.index(rows[0]["variant"])) % len(cycle)]
            xs = [r[x] for r in rows]
            (line,) = on.plot(xs, [r[f"{m}_accuracy"] for r in rows], color=colour,
                              ls=(":" if twin else "--") if geo else "-",
                              marker="s" if geo else "o", ms=3, label=label)
            on.fill_between(xs, [r[f"{m}_low"] for r in rows], [r[f"{m}_high"] for r in rows],
                            color=colour, alpha=0.15, lw=0)
            handles.append(line)
        ax.set_xscale("log")
        if top is not None:
            top.set_xscale("log")
            top.set_xlabel(plot.twin_xlabel)
        if plot.style == "paired":
            ax.invert_xaxis()
        ax.set_xlabel(plot.figure.xlabel)
        ax.set_ylabel(f"{ylabel} (95% band)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=7)
    fig.suptitle(textwrap.fill(plot.figure.title, 100) + f"\n{run}", fontsize=10)
    return save_png(fig, Path(folder) / plot.figure.png)


# ------------------------------------------------------------------- report
def _summary(plot: Plot) -> Table:
    """What a figure shows, per series: its x range, best accuracies, points released."""
    t = plot.table
    labels = list(dict.fromkeys(t.column("series")))
    if plot.style == "sent":
        return Table.from_rows(f"{plot.name}_summary", (
            {"series": s, **{f"% sent, N = {r['n_points']:,}": 100 * r["seen_fraction"]
                             for r in t.where(series=s)}} for s in labels))
    rows = []
    for s in labels:
        rr = t.where(series=s)
        xs = [r[plot.x_of(r)] for r in rr]
        raw = max(rr, key=lambda r: r["nn_accuracy"])
        top5 = max(rr, key=lambda r: r["top5_accuracy"])
        rows.append({"series": s, "x from": min(xs), "x to": max(xs),
                     "best raw": raw["nn_accuracy"],
                     "raw 95% CI": interval(raw["nn_low"], raw["nn_high"]),
                     "best top-5": top5["top5_accuracy"],
                     "top-5 95% CI": interval(top5["top5_low"], top5["top5_high"]),
                     "released / query": float(np.mean([r["released_mean"] for r in rr]))})
    return Table.from_rows(f"{plot.name}_summary", rows)


MECHANISMS = {"proven": "exp(εu/2Δ), proven", "thesis-reading": "exp(εu/Δ), thesis reading"}
"""How the report names the two calibrations of the exponential mechanism."""


AUDIT_COLUMNS = ("utility", "calibration", "variant", "compositions", "promised ε (bounded range)",
                 "promised ε (sum)", "ε really spent", "audit: ε lower bound (95%)",
                 "loss on the tested event, 95% CI", "traversals per query")


def audit_table(rows: Sequence[Any]) -> Table:
    """The audit study's rows as a report table (one-sided bound and two-sided interval)."""
    table = Table(name="privacy_audit", columns=AUDIT_COLUMNS)
    for r in rows:
        table.add(**dict(zip(AUDIT_COLUMNS, (
            r.utility.upper(), MECHANISMS[r.calibration], r.variant, r.compositions,
            r.promised_br, r.promised_sum, r.spent_epsilon, r.eps_lower,
            interval(r.loss_low, r.loss_high), r.n_samples))))
    return table


def calibration_table(sweep: Sweep) -> Table:
    """Both calibrations at the stated final ε ≈ 50 and 100: accuracy, ε charged and spent.

    Accuracies are read off the measured curve (interpolated in log stated
    final ε); the per-decision ε, what one decision spends, the final ε
    charged and the final ε really spent are computed exactly for the
    configuration at that stated final ε (:func:`.lepert_claims.cmp_setup_at`).
    """
    g = sweep.grid
    rows = []
    for dims in g.dims:
        height = sweep.height(dims)
        for v in CALIBRATION_VARIANTS:
            for cal, label in MECHANISMS.items():
                curve = [sweep.cmp(dims, v, e, calibration=cal) for e in g.cmp_epsilons]
                for target in (50.0, 100.0):
                    raw = at_final_epsilon(curve, target, "nn_accuracy",
                                           x="stated_final_epsilon_br")
                    top5 = at_final_epsilon(curve, target, "top5_accuracy",
                                            x="stated_final_epsilon_br")
                    setup = cmp_setup_at(v, height, target, delta=g.delta, calibration=cal)
                    dp, br = setup.decision_epsilons
                    n = curve[0].n_queries
                    rows.append({
                        "dims": dims, "variant": v, "mechanism": label,
                        "stated final ε": target, "ε per decision": setup.epsilon,
                        "one decision spends: pure DP / bounded range":
                            f"{fmt(dp)} / {fmt(br)}",
                        "raw": raw, "raw 95% CI": interval(*accuracy_interval(raw, n)),
                        "top-5": top5, "top-5 95% CI": interval(*accuracy_interval(top5, n)),
                        "final ε charged": setup.account(height).epsilon_br,
                        "final ε really spent (bounded range or sum)":
                            setup.spent_account(height).epsilon_br})
    return Table.from_rows("calibration_reading", rows)


def _same_mechanism(sweep: Sweep) -> str:
    """Grid points where proven at ε and the thesis reading at ε/2 ran: their raw accuracies."""
    g = sweep.grid
    dims, v = g.dims[0], CALIBRATION_VARIANTS[0]
    pairs = [(e, e / 2) for e in g.cmp_epsilons if e / 2 in g.cmp_epsilons]
    return "; ".join(
        f"proven ε = {e:g} and thesis reading ε = {h:g}: "
        f"{fmt(sweep.cmp(dims, v, e).nn_accuracy)} and "
        f"{fmt(sweep.cmp(dims, v, h, calibration='thesis-reading').nn_accuracy)}"
        for e, h in pairs[-2:])


def _calibration_section(sweep: Sweep, claims: Sequence[Claim]) -> Section:
    """What the thesis's numbers imply about the mechanism it ran (a reading, measured)."""
    g = sweep.grid
    same = _same_mechanism(sweep)
    return Section(heading="What the thesis's numbers imply about its mechanism (a reading)",
                   text=(
        "Algorithm 12 draws each bit from exp(ε u / (2Δ)); this reproduction does too "
        "(`calibration = \"proven\"`). Under it the thesis's E8 accuracies (95% raw at final "
        "ε ≈ 50 in 1-D, 100% at 100 in 2-D) are out of reach (see the E8 claims). The "
        "observation checked here: they follow if the thesis's code drew from exp(ε u / Δ). "
        "Both calibrations are run side by side through the plugin "
        "(`protocol.calibration`), each plotted against the final ε the thesis would state "
        "for it (ε-bounded-range decisions). Flagged as a reading: the thesis does not say "
        "which it ran.",
        "What one decision spends. The CMP utility is 0 or 1 (Δ = 1) and flips between two "
        "queries, so with two outcomes exp(ε u / (2Δ)) is randomised response with log-odds "
        "ε/2 (the correct side with probability e^(ε/2)/(1+e^(ε/2))): each decision is "
        "ε/2-DP and ε-bounded-range. exp(ε u / Δ) is randomised response with log-odds ε: "
        "ε-DP and 2ε-bounded-range. For DIS, within the radius, exp(ε u / (2Δ)) is ε-DP and "
        "exp(ε u / Δ) 2ε-DP per decision. The final ε really spent is the smaller of the "
        "bounded-range bound (Theorem 2.13) over the decisions' bounded-range ε and the sum "
        "of their pure ε. In the table, accuracies are read off the measured curves "
        "(interpolated); the per-decision ε, what a decision spends and both final ε are "
        f"computed exactly at the stated final ε (δ = {g.delta:g}).",
        "What follows for privacy. The proven calibration over-charges CMP: each decision "
        "is charged ε (the ledger, the run's `privacy`, every figure's final ε) and spends "
        "ε/2, so the final ε charged is twice what is spent wherever summation is the "
        "smaller bound (E8 at the table's stated ε) and less than twice elsewhere. That is "
        "safe and kept: it is "
        "Algorithm 12's and the thesis's own accounting (the plugin also reports "
        "`spent_final_epsilon`). The two calibrations are thus one mechanism under two "
        "labels -- exp(εu/2Δ) at ε is exp(εu/Δ) at ε/2, and with common random numbers "
        f"they give the same bits ({g.dims[0]}-D E8 raw accuracy, "
        f"`calibration_cmp.csv`: {same}). At equal ε really spent they reach the same "
        "accuracy (the table's proven rows at stated 100 against the thesis reading's at "
        "50, up to interpolation): the thesis's E8 numbers follow just as well if it ran "
        "Algorithm 12 and counted each CMP decision at the ε/2 it spends. The thesis "
        "reading's stated ε is what its mechanism spends wherever summation is the "
        "smaller bound (for E8 the table's stated and really spent final ε agree); where "
        "the bounded-range bound is smaller it understates the loss, as its decisions are "
        "2ε-bounded-range, not ε. For DIS, exp(ε u / Δ) is 2ε-DP per decision: the stated "
        "ε would be half the true one.",
    ), figures=(), tables=(calibration_table(sweep),),
        claims=tuple(c for c in claims if c.id.startswith("calibration")))


def _t_interval(values: Sequence[float]) -> tuple[float, float]:
    """95% Student-t interval of the mean of ``values`` (NaN with fewer than two)."""
    from scipy import stats

    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2:
        return (float("nan"), float("nan"))
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return (float(x.mean() - half), float(x.mean() + half))


def draws_table(sweep: Sweep) -> Table:
    """The headline quantities on every draw of the data: main draw, spread, t interval."""
    g = sweep.grid
    draws = range(g.data_draws + 1)
    quantities: list[tuple[str, Any]] = []
    for dims, target in ((1, 50.0), (2, 100.0)):
        if dims in g.dims:
            quantities.append((
                f"{dims}-D CMP E8 raw accuracy at final ε = {target:g} (interpolated)",
                lambda k, d=dims, t=target: at_final_epsilon(
                    [sweep.on_draw(k, d, "cmp", "E8", e) for e in g.cmp_epsilons], t,
                    "nn_accuracy")))
    if 2 in g.dims:
        quantities.append((
            "2-D basic DIS: largest top-5 accuracy over the radii (Fig. 6.3)",
            lambda k: max(sweep.on_draw(k, 2, "dis", "basic", g.dis_epsilon, r).top5_accuracy
                          for r in g.radii)))
        if DRAW_RADIUS in g.radii:
            quantities.append((
                "2-D DIS at r = 10^4: best top-5 accuracy over the compared variants "
                "(Fig. 6.15)",
                lambda k: max(sweep.on_draw(k, 2, "dis", v, g.dis_epsilon,
                                            DRAW_RADIUS).top5_accuracy
                              for v in g.dis_comparison)))
    rows = []
    for label, measure in quantities:
        values = [float(measure(k)) for k in draws]
        lo, hi = _t_interval(values)
        rows.append({"quantity": label, "main draw": values[0],
                     "other draws": ", ".join(fmt(v) for v in values[1:]),
                     f"mean over {len(values)} draws": float(np.mean(values)),
                     "95% t interval (draws)": interval(lo, hi),
                     "min - max": f"{fmt(min(values))} - {fmt(max(values))}"})
    return Table.from_rows("data_draws", rows)


def _draws_section(sweep: Sweep) -> Section:
    g = sweep.grid
    return Section(heading="Spread over draws of the data", text=(
        "The intervals elsewhere in this report are binomial over the queries of one run on "
        "one draw of the data. They do not hold the spread between draws: every query of a "
        "run descends the same tree, whose top splits depend on the draw, so a deterministic "
        "descent (DIS at a small radius) hits or misses for many queries together. The "
        f"headline configurations are re-run on {g.data_draws} further draws of the same law "
        "(each a scenario grid of its own dataset, same settings and seed); the table gives "
        "the main draw's value, the others, and a 95% Student-t interval of the mean over "
        "all draws. Where the t interval is much wider than the binomial one, a claim's "
        "verdict on the main draw should be read with it.",), tables=(draws_table(sweep),))


def _audit_section(rows: Sequence[Any], n_samples: int, epsilon: float) -> Section:
    return Section(heading="Empirical privacy audit", text=(
        "A study, not a protocol run (`ppknn_reproductions.experiments.dptt_audit`): for one "
        f"variant of each kind the report uses (scaled to a 1-D tree of {AUDIT_POINTS} points, "
        f"height 8: {', '.join(AUDIT_VARIANTS)}), both utilities and both calibrations, the "
        f"client and server parties run {n_samples:,} traversals of each of two neighbouring "
        f"queries at ε = {epsilon:g} per decision; `core.dp.audit` selects an event of the "
        "server's view (its bits) on half of the traversals and tests it on the other half "
        "with Clopper-Pearson bounds. The bound is a one-sided 95% lower confidence bound on "
        "the ε the traversal really spends; the interval is the two-sided 95% Clopper-Pearson "
        "interval of the privacy loss on the tested event. CMP pair: queries beyond both ends "
        "of the data (every decision flips); DIS pair: two queries one privacy radius apart.",
        _audit_reading(rows),
    ), tables=(audit_table(rows),))


def _audit_reading(rows: Sequence[Any]) -> str:
    """What the audit table shows, computed from its rows."""
    above = [r for r in rows if r.eps_lower > r.spent_epsilon]
    cmp = [r for r in rows if r.utility == "cmp"]
    proven = [r for r in cmp if r.calibration == "proven"]
    half = [r for r in proven if r.eps_lower <= r.promised_sum / 2]
    twice = [r.variant for r in proven if math.isclose(r.promised_br, 2 * r.spent_epsilon)]
    over_half = [r for r in cmp if r.calibration != "proven"
                 and r.eps_lower > r.promised_sum / 2]
    reading = [r for r in cmp if r.calibration != "proven"]
    return (
        f"Reading: {len(above)} of {len(rows)} bounds exceed the ε really spent (a bound above "
        "it would be a bug). CMP under the proven calibration: a decision at exp(εu/2Δ) is "
        "ε/2-DP, so the ε really spent is at most half the promised sum c·ε and the promise "
        "over-charges it -- 2x where summation is the smaller bound ("
        f"{', '.join(twice) or 'none here'}), less where the bounded-range bound is; "
        f"{len(half)} of {len(proven)} bounds lie at or below half the promised sum. CMP under "
        f"the thesis reading: {len(over_half)} of {len(reading)} bounds lie above half the "
        "promised sum, which the proven mechanism cannot produce. DIS bounds lie far below the "
        "promise: the pair one radius apart moves only the decisions whose two children "
        "straddle the queries. Multi-thread variants (P, GS) are audited on a coarser view (the "
        "number of 1-bits when the view has more than 62 bits), so their bounds are weaker.")


def _accounting(grid: Grid, height: int) -> Table:
    """Compositions, rounds and final ε of the main variants (worst case, H decisions)."""
    table = Table(name="accounting", columns=(
        "variant", "compositions c", "rounds", "messages", "at most released",
        "final ε at ε=1: bounded range", "at ε=1: sum c·ε", "at ε=1: §5.2 as printed",
        "final ε at ε=10: bounded range", "at ε=10: sum c·ε"))
    for label in ACCOUNT_VARIANTS:
        v = Variant.parse(label)
        if v.s > height:
            continue
        a1 = v.account(height, epsilon=1.0, delta=grid.delta)
        a10 = v.account(height, epsilon=10.0, delta=grid.delta)
        rounds = v.rounds(height)
        table.add(**dict(zip(table.columns, (
            label, a1.compositions, rounds, 2 * rounds + 2, v.max_released(height),
            a1.epsilon_br, a1.epsilon_sum,
            printed_section_5_2_epsilon(a1.compositions, 1.0, grid.delta)
            if a1.compositions else 0,
            a10.epsilon_br, a10.epsilon_sum))))
    return table


def _command(quick: bool, n_points: int, fig_dir: str = FIG_DIR,
             runtime: str = "inprocess") -> str:
    """The command line that reproduces the run (the runtime flag unless in-process).

    >>> _command(False, 100_000), _command(True, 100_000, runtime="ray")
    ('ppknn reproduce lepert', 'ppknn reproduce lepert --quick --runtime ray')
    """
    flag = (" --quick" if quick else "") + (f" --runtime {runtime}"
                                            if runtime != "inprocess" else "")
    if n_points == 100_000 and fig_dir == FIG_DIR:
        return f"ppknn reproduce lepert{flag}"
    where = f" --output results/reproduce/{fig_dir}" if fig_dir != FIG_DIR else ""
    return f"ppknn reproduce lepert{flag} --set n_points={n_points}{where}"


def _settings(g: Grid, height: int) -> dict[str, Any]:
    return {
        "points per dimension (N)": g.n_points, "queries": g.n_queries, "dimensions": g.dims,
        "data law": g.distribution, "seed": g.seed, "worst-case tree height H": height,
        "DIS ε per decision": g.dis_epsilon, "DIS / GEO radii r": g.radii,
        "CMP ε per decision": g.cmp_epsilons, "GEO alone ε*/Δ (ε* = 1)": g.geo_ratios,
        "variant families": "; ".join(f"{k}: {', '.join(v)}" for k, v in g.families.items()),
        "DIS comparison (Figs. 6.14/6.15)": g.dis_comparison,
        "CMP comparison (Figs. 6.28/6.29)": g.cmp_comparison,
        "extra draws of the data (headline configurations)": g.data_draws,
        "data sent (Fig. 6.1): sizes, variants, CMP ε": (
            f"{', '.join(f'{n:,}' for n in g.sent_sizes)}; {', '.join(g.sent_variants)}; "
            f"{g.sent_epsilon:g}"),
        "δ of the bounded-range bound": g.delta,
    }


def build_report(plots: Sequence[Plot], claims: Sequence[Claim], grid: Grid, *, height: int,
                 quick: bool, elapsed_s: float, fig_dir: str = FIG_DIR,
                 extra: Sequence[Section] = (), audit: AuditSettings | None = None) -> Report:
    """The report of one run: setting, accounting, claims, studies, one section per figure.

    ``extra`` are sections placed after the claims (the calibration reading
    and the privacy audit).
    """
    g = grid
    setting = Section(heading="How the thesis's setting is read", text=(
        f"- Data: {g.n_points:,} synthetic points per dimension (1-D and 2-D), "
        f"{g.n_queries:,} queries from the same law, seed {g.seed}. The thesis's \"uniformly "
        "drawing ... from a 0 to 1 billion normal distribution\" is read as a normal law "
        "spanning [0, 10^9] (mean 5·10^8, sd 10^9/6, truncated to the range by redrawing) "
        f"-- `distribution = \"{g.distribution}\"`; the global sensitivity is the range, 10^9.",
        f"- Tree: the modified kd-tree of Algorithm 10; worst-case height H = ceil(log2 N) = "
        f"{height} decisions for N = {g.n_points:,}.",
        f"- DIS: ε = {g.dis_epsilon:g} per decision, sensitivity bound (privacy radius) r from "
        f"{max(g.radii):.0e} to {min(g.radii):.0e}. GEO at the same r with ε* = the DP-TT "
        "variant's final ε (bounded range): 1-D Laplace of scale r/ε*, 2-D planar Laplace "
        "with ε*/r per unit; released as fairly as the thesis prescribes (repeated for P and "
        "GS, neighbours of the answer for E and N).",
        f"- CMP: ε per decision in {{{', '.join(f'{e:g}' for e in g.cmp_epsilons)}}}, plotted "
        "against the final ε. GEO alone (ε* = 1) against ε*/Δ in "
        f"{{{', '.join(f'{x:.0e}' for x in g.geo_ratios)}}}.",
        f"- Final ε: Theorem 2.13 (Dong, Durfee & Rogers) at δ = {g.delta:g}, which is never "
        "above plain summation c·ε (also reported in every CSV). It is what a query is "
        "charged, ε per decision as the thesis states; a CMP decision of Algorithm 12 is "
        "ε/2-DP, so for CMP the charge is up to twice what is spent (safe; see the "
        "calibration reading below).",
    ))
    accounting = Section(heading="Compositions and final ε", text=(
        f"Per query, worst case (H = {height}); rounds and messages of one traversal. The "
        "thesis's §5.2 prints the bound with the count inside the KL term (`KL(cε)`); that is "
        "not Theorem 2.13, which it cites, and gives larger values -- its column is shown for "
        "comparison only.",), tables=(_accounting(g, height),))
    figures = [Section(heading=p.figure.title, level=3, figures=(p.figure,),
                       tables=(_summary(p),)) for p in plots]
    return Report(
        title=TITLE,
        run=Run(command=_command(quick, g.n_points, fig_dir, g.runtime), runtime=g.runtime,
                quick=quick, seed=g.seed, seconds=elapsed_s),
        intro=(
            "Each figure has a CSV (one row per series and configuration, with the 95% "
            "intervals of both accuracies) and a PNG in the output folder "
            "(`results/reproduce/lepert/` by default); the PNGs and CSVs are also in "
            f"`{fig_dir}/`. "
            f"Accuracies are shares of the {g.n_queries:,} queries of one run per "
            "configuration; their 95% intervals (normal approximation to the binomial, over "
            "the queries -- not over repeated runs) are the bands of the plots, the "
            "intervals of the tables and of the claims.",
            "Where the numbers come from. Every figure whose points are DP-TT runs -- all "
            "figures below, and the calibration reading -- comes from scenario grids of the "
            "`dptt` registry plugin, one grid per synthetic dataset (their long tables are "
            "`grids/grid-*.csv` in the output folder): each point is one scenario run as "
            "`ppknn run` runs it, and GEO is the plugin's `geo_*` baseline measured in the "
            "same run against its release. The privacy audit is a study (client and server "
            "parties driven directly on a small tree, two neighbouring queries), not a "
            "protocol run. The accounting table is computed, not measured.",),
        settings={**_settings(g, height), **(audit.describe() if audit else {})},
        sections=(setting, accounting,
                  Section(heading="Claims beside measurements", claims=tuple(claims)),
                  *extra,
                  Section(heading="Figures", text=(
                      "Per figure: each series' range on the x axis, its best raw and top-5 "
                      "accuracy and the mean number of points released per query.",)),
                  *figures),
        deviations=_deviations(g, audit), figure_dir=fig_dir)


QUICK_GRID: dict[str, Any] = {
    "n_queries": 100, "radii": (1e9, 1e5, 1e4, 1e3), "cmp_epsilons": (1.0, 5.0, 10.0, 17.0),
    "families": {"P": ("basic", "P4", "P8"), "E": ("E4", "E8"), "GS": ("GS",),
                 "N": ("N20",), "GS-N": ("GS-N20",)},
    "geo_ratios": (1e-8, 1e-6, 1e-4, 1e-2),
}
"""``--quick``: the lists of :meth:`Grid.quick` cut further, the sizes kept. Every figure,
claim and section is still there: the radii the claims read (10^5, 10^4, 10^3) and the
largest, CMP ε that reach final ε 50 and 100 and hold a pair ε, ε/2 (the calibration
reading), each family with the comparisons' members, GEO alone on both sides of 95%."""


@dataclass(frozen=True)
class AuditSettings:
    """The privacy audit's settings (a study: :mod:`ppknn_reproductions.experiments.dptt_audit`)."""

    variants: tuple[str, ...] = AUDIT_VARIANTS
    epsilon: float = 0.5
    n_samples: int = 20_000
    seed: int = 2022

    @classmethod
    def quick(cls) -> AuditSettings:
        """Two variants, fewer traversals."""
        return cls(variants=("basic", "E4"), n_samples=4000)

    def describe(self) -> dict[str, Any]:
        """The settings as report lines."""
        return {"audit: variants, ε per decision, traversals per query, seed":
                f"{', '.join(self.variants)}; {self.epsilon:g}; {self.n_samples:,}; "
                f"{self.seed}"}


def run(output: Path, *, quick: bool, runtime: str, report: Path,
        n_points: int = 100_000, log: Any = None, grid: Grid | None = None,
        audit: AuditSettings | None = None) -> Path:
    """Run the reproduction (see the module docstring); returns the report's path.

    ``runtime = "ray"`` fans the grids' runs out as Ray tasks; each run hosts
    its parties in-process, as every grid run does. ``grid`` and ``audit``
    (Python API only) replace the quick or full settings, e.g. smaller ones.
    """
    start = time.perf_counter()
    if grid is not None and not isinstance(grid, Grid):
        raise ConfigError(f"grid = {grid!r}: give a "
                          "ppknn_reproductions.experiments.dptt_sweeps.Grid (Python API only)")
    if audit is not None and not isinstance(audit, AuditSettings):
        raise ConfigError(f"audit = {audit!r}: give a lepert.AuditSettings (Python API only)")
    if grid is None:
        grid = (Grid.quick(runtime=runtime, n_points=n_points, **QUICK_GRID) if quick
                else Grid(runtime=runtime, n_points=n_points))
        if n_points > 100_000:
            grid = replace(grid, sent_sizes=tuple(sorted({*grid.sent_sizes, grid.n_points})))
    settings = audit or (AuditSettings.quick() if quick else AuditSettings())
    output, report = Path(output), Path(report)
    output.mkdir(parents=True, exist_ok=True)
    fig_dir = report.parent / report.stem  # lepert.md -> lepert/: reports never share PNGs
    fig_dir.mkdir(parents=True, exist_ok=True)
    say = log or (lambda text: None)
    say(f"running the scenario grids ({'quick' if quick else 'full'} settings)")
    raw: dict[str, list[dict[str, Any]]] = {}
    def progress(done: int, total: int) -> None:
        if done == total or done % 50 == 0:
            say(f"{done} of {total} scenario runs")

    sweep = Sweep.run(grid, output / "data",
                      parallel="ray" if runtime == "ray" else "sequential", raw=raw,
                      progress=progress)
    write_grid_rows(raw, output / "grids")
    plots = build_figures(sweep)
    claims = check_claims(sweep)
    height = sweep.height(grid.dims[0])
    say("auditing the variants")
    audit_rows = audit_study(variants=settings.variants, epsilon=settings.epsilon,
                             n_samples=settings.n_samples, seed=settings.seed)
    extra = (_draws_section(sweep), _calibration_section(sweep, claims),
             _audit_section(audit_rows, settings.n_samples, settings.epsilon))
    audit_csv = audit_table(audit_rows).write_csv(output / "privacy_audit.csv")
    shutil.copy(audit_csv, fig_dir / audit_csv.name)
    title_run = f"{_command(quick, grid.n_points, fig_dir.name)}, {runtime} runtime"
    for p in plots:
        csv_path = p.table.write_csv(output / p.figure.csv)
        png = draw(p, output, title_run)
        shutil.copy(png, fig_dir / png.name)
        shutil.copy(csv_path, fig_dir / csv_path.name)  # the data beside the figure
    elapsed = time.perf_counter() - start
    doc = build_report(plots, [c for c in claims if not c.id.startswith("calibration")], grid,
                       height=height, quick=quick, elapsed_s=elapsed, fig_dir=fig_dir.name,
                       extra=extra, audit=settings)
    write_markdown(doc, output / "report.md")
    return write_markdown(doc, report)


__all__ = ["QUICK_GRID", "AuditSettings", "Plot", "audit_table", "build_figures", "build_report",
           "custom_plot", "draw", "run"]
