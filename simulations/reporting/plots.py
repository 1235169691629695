"""The one plotting style of reports: a :class:`Figure` drawn from its :class:`Table`.

Every plot has labelled axes, a legend, and a title naming the run that
produced it; intervals (``low``/``high`` or ``err`` columns of a series)
are drawn as error bars or a band; a series keeps its colour across
panels. Drawing uses matplotlib's object API on an Agg canvas (no pyplot,
no global backend switch); matplotlib is imported only when a plot is
drawn.

Pass ``mpl_figure`` (a blank :class:`matplotlib.figure.Figure`) to draw
into a figure you keep, e.g. to inspect it; otherwise one is made and
dropped after saving.

The PNGs of runs, sweeps, reproductions and benchmarks go through
:func:`save_png`: the figure is rendered, then stored with a
256-colour palette (no dithering) and maximal zlib compression, about a
third of matplotlib's RGBA file with no visible change; the same figure
gives the same bytes. :func:`compact_png` does the same to a PNG's bytes.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppknn.core.errors import ConfigError
from ppknn.simulations.reporting.formatting import is_missing
from ppknn.simulations.reporting.model import Figure, Series, Table

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as MplFigure

Line = tuple[str, Series, list[dict[str, Any]]]


def _check(figure: Figure, table: Table, run: str) -> None:
    missing = [c for c in figure.columns if c not in table.columns]
    if missing:
        raise ConfigError(f"figure {figure.name!r}: columns {missing} are not in table "
                          f"{table.name!r} (columns {list(table.columns)})")
    if not run:
        raise ConfigError(f"figure {figure.name!r}: the title names the run; got run={run!r}")


def _panels(figure: Figure, table: Table) -> list[Any]:
    if figure.panel_by is None:
        return [None]
    return list(dict.fromkeys(r[figure.panel_by] for r in table.rows))


def _lines(figure: Figure, table: Table, panel: Any) -> list[Line]:
    """``(label, series, rows)`` per line of one panel, rows in x order."""
    out: list[Line] = []
    for s in figure.series:
        match = dict(s.where)
        if figure.panel_by is not None:
            match[figure.panel_by] = panel
        rows = [r for r in table.rows if all(r[k] == v for k, v in match.items())
                and not is_missing(r[s.y])]
        if all(isinstance(r[figure.x], Real) for r in rows):
            rows.sort(key=lambda r: r[figure.x])
        if figure.group_by is None:
            out.append((s.label or s.y, s, rows))
            continue
        for g in dict.fromkeys(r[figure.group_by] for r in rows):
            label = f"{s.label} ({g})" if s.label else str(g)
            out.append((label, s, [r for r in rows if r[figure.group_by] == g]))
    return [line for line in out if line[2]]


def _bounds(s: Series, rows: list[dict[str, Any]]) -> tuple[list[float], list[float]] | None:
    """The interval of each point, or ``None`` when the series has none."""
    def num(v: Any) -> float:
        return float("nan") if is_missing(v) else float(v)

    ys = [num(r[s.y]) for r in rows]
    if s.err is not None:
        errs = [0.0 if is_missing(r[s.err]) else float(r[s.err]) for r in rows]
        return [y - e for y, e in zip(ys, errs)], [y + e for y, e in zip(ys, errs)]
    if s.low is not None and s.high is not None:
        return [num(r[s.low]) for r in rows], [num(r[s.high]) for r in rows]
    return None


def _yerr(ys: Sequence[float], low: Sequence[float], high: Sequence[float]
          ) -> list[list[float]]:
    def pos(v: float) -> float:
        return v if v > 0 else 0.0  # NaN and negative (a bound on the wrong side) -> 0

    return [[pos(y - lo) for y, lo in zip(ys, low)], [pos(hi - y) for y, hi in zip(ys, high)]]


MAX_ROW = 4
"""Up to this many panels share one row; more wrap into rows of :data:`WRAP` panels."""
WRAP = 3


def _grid(n_panels: int) -> tuple[int, int]:
    """(rows, columns) of the panels."""
    cols = n_panels if n_panels <= MAX_ROW else WRAP
    return -(-n_panels // cols), cols


def _canvas(n_panels: int, mpl_figure: MplFigure | None) -> MplFigure:
    if mpl_figure is not None:
        return mpl_figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as NewFigure

    rows, cols = _grid(n_panels)
    fig = NewFigure(figsize=(max(6.0, 4.6 * cols), 4.4 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _colours(lines: Sequence[Line]) -> dict[str, str]:
    import matplotlib

    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    labels = list(dict.fromkeys(label for label, _, _ in lines))
    return {label: cycle[i % len(cycle)] for i, label in enumerate(labels)}


def _draw(figure: Figure, table: Table, run: str, mpl_figure: MplFigure | None,
          draw_panel: Any) -> MplFigure:
    _check(figure, table, run)
    panels = _panels(figure, table)
    per_panel = [_lines(figure, table, p) for p in panels]
    if not any(per_panel):
        raise ConfigError(f"figure {figure.name!r}: no rows of table {table.name!r} match "
                          "its series")
    colours = _colours([line for lines in per_panel for line in lines])
    fig = _canvas(len(panels), mpl_figure)
    rows, cols = _grid(len(panels))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, panel, lines in zip(axes, panels, per_panel):
        draw_panel(ax, lines, colours)
        for label, y in figure.hlines:
            ax.axhline(y, color="grey", ls=":", lw=1, label=label)
        if panel is not None:
            ax.set_title(str(panel))
        ax.set_xlabel(figure.xlabel)
        ax.set_ylabel(figure.ylabel)
        if figure.logx and figure.kind == "line":
            ax.set_xscale("log")
        if figure.logy:
            ax.set_yscale("log")
        if figure.ylim is not None:
            ax.set_ylim(*figure.ylim)
        if figure.categorical and figure.kind == "line":
            cats = _categories(figure, lines)
            ax.set_xticks(range(len(cats)), [_label(c) for c in cats])
        ax.grid(alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        refs = {label for label, _ in figure.hlines}
        order = sorted(range(len(labels)), key=lambda i: labels[i] in refs)  # references last
        ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7)
    title = figure.title
    if figure.ylim is not None and figure.ylim[0] > 0:  # a zoom: say so, with its range
        title += f" (y axis zoomed to {figure.ylim[0]:g}-{figure.ylim[1]:g})"
    fig.suptitle(textwrap.fill(title, 100) + f"\n{run}", fontsize=10)
    return fig


def _categories(figure: Figure, lines: Sequence[Line]) -> list[Any]:
    """The x values of a categorical axis, sorted (in first-seen order if they do not sort)."""
    cats = list(dict.fromkeys(r[figure.x] for _, _, rows in lines for r in rows))
    try:
        return sorted(cats)
    except TypeError:
        return cats


def _label(value: Any) -> str:
    """A category's tick label (``2`` for ``2.0``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


PNG_COLOURS = 256
"""Palette size of :func:`save_png` (the light 95% bands and grid lines need more than 32)."""


def compact_png(data: bytes, path: Path | str) -> Path:
    """Store the PNG (or any image Pillow reads) ``data`` at ``path`` as a compact PNG.

    The image is flattened to RGB and mapped to a :data:`PNG_COLOURS`-colour
    palette (fast octree, no dithering: flat areas stay flat, so the file
    compresses well), then written with zlib's best compression. Pure
    function of ``data``: the same input gives the same bytes.

    Returns
    -------
    Path
        ``path``.
    """
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        rgb = image.convert("RGB")
    return _store(rgb, Path(path))


def _store(rgb: Any, path: Path) -> Path:
    """Write the RGB Pillow image ``rgb`` at ``path`` as :func:`compact_png` describes."""
    from PIL import Image

    palette = rgb.quantize(PNG_COLOURS, method=Image.Quantize.FASTOCTREE,
                           dither=Image.Dither.NONE)
    palette.save(path, format="PNG", optimize=True)
    return path


def save_png(fig: MplFigure, path: Path | str, *, dpi: int = 100) -> Path:
    """Save the matplotlib figure ``fig`` as a compact PNG at ``path`` (see :func:`compact_png`).

    The figure is rendered once by Agg and its pixels go straight to the palette
    (the bytes are those of ``compact_png`` applied to matplotlib's own PNG of
    the figure, without encoding and decoding that intermediate PNG).

    Parameters
    ----------
    fig
        The figure (the object API's or pyplot's).
    path
        The PNG to write; its folder is made if missing.
    dpi
        Pixels per inch of the rendering.

    Returns
    -------
    Path
        ``path``.
    """
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="rgba", dpi=dpi)  # Agg's RGBA pixels, no PNG in between
    width, height = _pixel_size(fig, dpi)
    pixels = buffer.getbuffer()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if len(pixels) != 4 * width * height:  # a canvas that sizes itself otherwise
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi)
        return compact_png(buffer.getvalue(), path)
    rgb = Image.frombuffer("RGBA", (width, height), pixels, "raw", "RGBA", 0, 1).convert("RGB")
    return _store(rgb, path)


def _pixel_size(fig: MplFigure, dpi: float) -> tuple[int, int]:
    """Width and height in pixels of ``fig`` rendered at ``dpi`` (as Agg sizes its canvas)."""
    width, height = fig.get_size_inches() * dpi
    return int(width), int(height)


def _save(fig: MplFigure, figure: Figure, folder: Path | str) -> Path:
    return save_png(fig, Path(folder) / figure.png)


def line_plot(figure: Figure, table: Table, *, folder: Path | str, run: str,
              mpl_figure: MplFigure | None = None) -> Path:
    """Draw ``figure`` from ``table`` as lines and save it as ``folder / figure.png``.

    Parameters
    ----------
    figure
        What to draw.
    table
        The rows it is drawn from (the figure's CSV).
    folder
        Where the PNG goes.
    run
        Names the run in the title (``"ppknn reproduce xiong --quick, inprocess"``).
    mpl_figure
        A blank matplotlib figure to draw into (kept open for the caller).

    Returns
    -------
    Path
        The PNG's path.

    Raises
    ------
    ConfigError
        The table lacks a column the figure reads, no row matches, or ``run`` is empty.
    """
    def draw(ax: Axes, lines: list[Line], colours: dict[str, str]) -> None:
        cats = _categories(figure, lines) if figure.categorical else None
        for label, s, rows in lines:
            xs = [r[figure.x] for r in rows] if cats is None else \
                [cats.index(r[figure.x]) for r in rows]
            ys = [float(r[s.y]) for r in rows]
            bounds = _bounds(s, rows)
            style: dict[str, Any] = {"color": colours[label], "ls": "--" if s.dashed else "-",
                                     "marker": "o", "ms": 3, "label": label}
            if bounds is None:
                ax.plot(xs, ys, **style)
            elif s.band:
                ax.plot(xs, ys, **style)
                ax.fill_between(xs, bounds[0], bounds[1], color=colours[label], alpha=0.2,
                                lw=0)
            else:
                ax.errorbar(xs, ys, yerr=_yerr(ys, *bounds), capsize=2, **style)

    return _save(_draw(figure, table, run, mpl_figure, draw), figure, folder)


def bar_plot(figure: Figure, table: Table, *, folder: Path | str, run: str,
             mpl_figure: MplFigure | None = None) -> Path:
    """Draw ``figure`` from ``table`` as grouped bars (one group per x value) and save it.

    Parameters and result as :func:`line_plot`; intervals are error bars.
    """
    def draw(ax: Axes, lines: list[Line], colours: dict[str, str]) -> None:
        cats = list(dict.fromkeys(r[figure.x] for _, _, rows in lines for r in rows))
        width = 0.8 / len(lines)
        for i, (label, s, rows) in enumerate(lines):
            at = [cats.index(r[figure.x]) + (i - (len(lines) - 1) / 2) * width for r in rows]
            ys = [float(r[s.y]) for r in rows]
            bounds = _bounds(s, rows)
            ax.bar(at, ys, width, color=colours[label], label=label,
                   yerr=None if bounds is None else _yerr(ys, *bounds), capsize=2)
        long = any(len(str(c)) > 6 for c in cats) or len(cats) > 8
        ax.set_xticks(range(len(cats)), [str(c) for c in cats], rotation=30 if long else 0,
                      ha="right" if long else "center", fontsize=7 if long else None)

    return _save(_draw(figure, table, run, mpl_figure, draw), figure, folder)


def plot(figure: Figure, table: Table, *, folder: Path | str, run: str,
         mpl_figure: MplFigure | None = None) -> Path:
    """:func:`line_plot` or :func:`bar_plot`, as ``figure.kind`` says."""
    draw = line_plot if figure.kind == "line" else bar_plot
    return draw(figure, table, folder=folder, run=run, mpl_figure=mpl_figure)


__all__ = ["bar_plot", "line_plot", "plot"]
