r"""A run's figures as SVG, drawn in milliseconds: a :class:`Figure` of :class:`Panel`\\ s.

``ppknn run`` draws ``summary.svg`` and ``leakage.svg`` whenever a person will look
(a terminal), so they must cost little beside the protocol: matplotlib's import and
Agg drawing took about 1 s for the two. This module writes the same charts as text:
no import beyond the standard library and numpy, no rasterising, and a vector file
that any browser, notebook or editor shows and that scales for print.

A :class:`Panel` takes the subset of matplotlib's ``Axes`` calls the run figures and
the protocol plugins' own panels use (``bar``, ``bar_label``, ``errorbar``, ``scatter``,
``plot``, ``fill_between``, ``axhline``, ``text``, ticks, limits, labels, ``legend``,
``grid``, ``set_yscale("log")``), with the same meanings, so a plugin's
``plot(ax, outcome)`` reads as matplotlib code. Anything else raises
``AttributeError``. Text widths are estimated (0.6 em a character), so layouts leave
room rather than measure it. The marks (text, markers, legend keys, ticks) are drawn by
:mod:`~simulations.reporting.svgmarks`; this module lays panels and figures out.

>>> fig, (ax,) = Figure.grid(4.0, 3.0, rows=1, cols=1, title="run-1")
>>> bars = ax.bar([0, 1], [0.5, 0.8], label="accuracy")
>>> ax.bar_label(bars, fmt="%.2f")
>>> ax.set_ylabel("accuracy"); ax.legend()
>>> svg = fig.to_svg()
>>> svg.startswith("<svg") and "run-1" in svg and "0.80" in svg
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.simulations.reporting.svgmarks import (
    ANCHOR,
    CYCLE,
    DASHES,
    FONT,
    MAX_POINTS,
    Artist,
    Axis,
    Bars,
    Key,
    arr,
    colour,
    draw,
    keys_block,
    nice_ticks,
    num,
    span,
    text,
    text_size,
    thin,
    tick_label,
)


@dataclass
class Panel:
    """One chart: matplotlib ``Axes`` calls recorded, drawn by :meth:`Figure.to_svg`."""

    x: Axis = field(default_factory=Axis)
    y: Axis = field(default_factory=Axis)
    title: str = ""
    title_size: float = 11.0
    off: bool = False
    artists: list[Artist] = field(default_factory=list)
    texts: list[tuple[float, float, str, dict[str, Any]]] = field(default_factory=list)
    legend_at: tuple[str, int, float] | None = None
    _lines: int = 0
    _patches: int = 0

    def _next(self, which: str) -> str:
        n = getattr(self, which)
        setattr(self, which, n + 1)
        return CYCLE[n % len(CYCLE)]

    # -- drawing ----------------------------------------------------------------------
    def bar(self, x: Any, height: Any, width: float = 0.8, *, color: Any = None,
            label: str | None = None, **_: Any) -> Bars:
        """Vertical bars from 0; ``color`` one colour or one per bar."""
        xs = arr(x)
        hs = arr(height, xs.size)
        base = self._next("_patches") if color is None else None
        cols = ([colour(c) for c in color] if isinstance(color, (list, tuple)) else
                [colour(color) if color is not None else base] * xs.size)
        self.artists.append(Artist("bar", {"x": xs, "h": hs, "w": float(width), "c": cols}, 1,
                                    Key(label, face=cols[0], patch=True) if label else None))
        return Bars(xs, hs, float(width))

    def bar_label(self, bars: Bars, labels: Sequence[str] | None = None, *, fmt: str = "%g",
                  fontsize: float = 9.0, **_: Any) -> None:
        """Each bar's value (or ``labels``) just above it."""
        words = list(labels) if labels is not None else [
            "" if not math.isfinite(h) else fmt % h for h in bars.height]
        for x, h, w in zip(bars.x, bars.height, words):
            if w and math.isfinite(h):
                self.texts.append((float(x), float(h), w, {"size": fontsize, "above": True}))

    def errorbar(self, x: Any, y: Any, *, yerr: Any = None, xerr: Any = None, fmt: str = "",
                 capsize: float = 0.0, ecolor: Any = None, color: Any = None,
                 label: str | None = None, **_: Any) -> None:
        """Points with error bars: ``yerr``/``xerr`` one value or ``[below, above]``."""
        xs, ys = arr(x), arr(y)
        c = colour(color) if color is not None else self._next("_lines")
        spans = {}
        for axis, err in (("y", yerr), ("x", xerr)):
            if err is not None:
                e = np.asarray(err, dtype=np.float64)
                spans[axis] = (e[0], e[1]) if e.ndim == 2 else (arr(e, xs.size),) * 2
        marker = "o" if "o" in fmt and fmt != "none" else None
        self.artists.append(Artist("errorbar", {"x": xs, "y": ys, "spans": spans,
                                                 "cap": capsize, "e": colour(ecolor or c),
                                                 "c": c, "marker": marker}, 2,
                                    Key(label, face=c, edge=c, line=colour(ecolor or c),
                                        marker=marker) if label else None))

    def scatter(self, x: Any, y: Any, *, s: float = 36.0, c: Any = None, color: Any = None,
                marker: str = "o", facecolors: Any = None, edgecolors: Any = None,
                zorder: float = 1.0, label: str | None = None, **_: Any) -> None:
        """Markers (``o``, ``D``, ``|``) of area ``s`` pt²; ``c`` one colour per point."""
        xs, ys = arr(x), arr(y)
        base = colour(color) if color is not None else None
        if isinstance(c, (list, tuple)):
            faces = [colour(v) for v in c]
        else:
            faces = [colour(c) if c is not None else base or self._next("_patches")] * xs.size
        if facecolors is not None:
            faces = [colour(facecolors)] * xs.size
        edge = colour(edgecolors) if edgecolors is not None else "none"
        if marker == "|" and edge == "none":
            edge = faces[0]
        self.artists.append(Artist("scatter", {"x": xs, "y": ys, "r": math.sqrt(s) / 2,
                                                "faces": faces, "edge": edge, "m": marker},
                                    zorder, Key(label, face=faces[0], edge=edge, marker=marker)
                                    if label else None))

    def plot(self, x: Any, y: Any, *, lw: float = 1.5, color: Any = None, ls: str = "-",
             label: str | None = None, **_: Any) -> None:
        """A polyline through the finite points (thinned past :data:`MAX_POINTS`)."""
        c = colour(color) if color is not None else self._next("_lines")
        xs, ys = arr(x), arr(y)
        keep = thin(ys)
        self.artists.append(Artist("line", {"x": xs[keep], "y": ys[keep], "lw": lw, "c": c,
                                             "dash": DASHES.get(ls)}, 2,
                                    Key(label, line=c, dash=DASHES.get(ls)) if label else None))

    def fill_between(self, x: Any, y1: Any, y2: Any = 0.0, *, alpha: float = 1.0,
                     color: Any = None, label: str | None = None, **_: Any) -> None:
        """The band between ``y1`` and ``y2`` (thinned past :data:`MAX_POINTS`)."""
        xs = arr(x)
        lo, hi = arr(y1, xs.size), arr(y2, xs.size)
        keep = thin(lo, hi)
        c = colour(color) if color is not None else self._next("_patches")
        self.artists.append(Artist("band", {"x": xs[keep], "y1": lo[keep], "y2": hi[keep],
                                             "c": c, "a": alpha}, 1,
                                    Key(label, face=c, patch=True) if label else None))

    def axhline(self, y: float, *, color: Any = "black", ls: str = "-", lw: float = 1.2,
                label: str | None = None, **_: Any) -> None:
        """A horizontal line across the panel."""
        c = colour(color)
        self.artists.append(Artist("hline", {"y": float(y), "c": c, "dash": DASHES.get(ls),
                                              "lw": lw}, 2,
                                    Key(label, line=c, dash=DASHES.get(ls)) if label else None))

    def text(self, x: float, y: float, s: str, *, ha: str = "left", va: str = "baseline",
             fontsize: float = 10.0, **_: Any) -> None:
        """Text at data coordinates (0-1 on an empty panel)."""
        self.texts.append((float(x), float(y), str(s), {"size": fontsize, "ha": ha, "va": va}))

    def clear(self) -> None:
        """Forget everything drawn and set: a blank panel."""
        self.__dict__.update(Panel().__dict__)

    # -- axes -------------------------------------------------------------------------
    def set_xticks(self, ticks: Any, labels: Sequence[str] | None = None, *,
                   rotation: float = 0.0, fontsize: float = 9.0, **_: Any) -> None:
        """Ticks at ``ticks`` (labelled ``labels``, or their values), rotated by degrees."""
        self.x.ticks, self.x.labels = list(map(float, ticks)), \
            None if labels is None else [str(v) for v in labels]
        self.x.rotation, self.x.size = float(rotation), float(fontsize)

    def set_yticks(self, ticks: Any, labels: Sequence[str] | None = None, *,
                   fontsize: float = 9.0, **_: Any) -> None:
        """Ticks at ``ticks`` labelled ``labels`` (or their values)."""
        self.y.ticks, self.y.labels = list(map(float, ticks)), \
            None if labels is None else [str(v) for v in labels]
        self.y.size = float(fontsize)

    def set_xlim(self, left: float | None = None, right: float | None = None) -> None:
        """Fix one or both x limits (``left > right`` reverses the axis)."""
        self.x.lim = (left if left is not None else self.x.lim[0],
                      right if right is not None else self.x.lim[1])

    def set_ylim(self, bottom: float | None = None, top: float | None = None) -> None:
        """Fix one or both y limits (``bottom > top`` reverses the axis)."""
        self.y.lim = (bottom if bottom is not None else self.y.lim[0],
                      top if top is not None else self.y.lim[1])

    def set_xlabel(self, s: str, fontsize: float = 10.0, **_: Any) -> None:
        """The x axis's label."""
        self.x.label, self.x.label_size = str(s), float(fontsize)

    def set_ylabel(self, s: str, fontsize: float = 10.0, **_: Any) -> None:
        """The y axis's label."""
        self.y.label, self.y.label_size = str(s), float(fontsize)

    def set_title(self, s: str, fontsize: float = 11.0, **_: Any) -> None:
        """The panel's title (lines split at newlines)."""
        self.title, self.title_size = str(s), float(fontsize)

    def set_yscale(self, scale: str) -> None:
        """``"linear"`` or ``"log"`` (non-positive values are not drawn)."""
        if scale not in ("linear", "log"):
            raise ValueError(f"set_yscale({scale!r}): 'linear' or 'log'")
        self.y.log = scale == "log"

    def get_yscale(self) -> str:
        """``"linear"`` or ``"log"``."""
        return "log" if self.y.log else "linear"

    def set_axis_off(self) -> None:
        """No axes, ticks or frame: the panel holds text only."""
        self.off = True

    def grid(self, visible: bool = True, *, axis: str = "both", **_: Any) -> None:
        """Light lines at the ticks of ``axis`` (``"x"``, ``"y"`` or ``"both"``)."""
        for a in ((self.x,) if axis == "x" else (self.y,) if axis == "y" else (self.x, self.y)):
            a.grid = visible

    def legend(self, *, loc: str = "upper right", ncol: int = 1, fontsize: float = 8.5,
               **_: Any) -> None:
        """A legend of the labelled artists, inside the panel at ``loc`` (top only)."""
        self.legend_at = (loc, ncol, fontsize)

    # -- layout -----------------------------------------------------------------------
    def _limits(self) -> tuple[tuple[float, float], tuple[float, float]]:
        xs: list[np.ndarray] = []
        ys: list[np.ndarray] = []
        sticky_y0 = False
        for a in self.artists:
            d = a.data
            if a.kind == "bar":
                xs += [d["x"] - d["w"] / 2, d["x"] + d["w"] / 2]
                ys += [d["h"], np.zeros(1)]
                sticky_y0 = True
            elif a.kind == "errorbar":
                xs.append(d["x"])
                ys.append(d["y"])
                for axis, (lo, hi) in d["spans"].items():
                    (xs if axis == "x" else ys).extend([d[axis] - lo, d[axis] + hi])
            elif a.kind in ("scatter", "line"):
                xs.append(d["x"])
                ys.append(d["y"])
            elif a.kind == "band":
                xs.append(d["x"])
                ys += [d["y1"], d["y2"]]
            elif a.kind == "hline":
                ys.append(np.array([d["y"]]))
        for x, y, _, _ in self.texts:
            xs.append(np.array([x]))
            ys.append(np.array([y]))
        return (span(xs, self.x, False), span(ys, self.y, sticky_y0))

    def _margins(self) -> tuple[float, float, float, float]:
        """(left, right, top, bottom) in points around the plotting area."""
        if self.off:
            top = text_size(self.title, self.title_size)[1] + 6 if self.title else 4
            return 6.0, 6.0, top, 6.0
        (xl, yl) = self._limits()
        ylabels = self.y.labels or [tick_label(v) for v in self._ticks(self.y, yl)]
        left = max([text_size(s, self.y.size)[0] for s in ylabels] + [0]) + 8
        if self.y.label:
            left += text_size(self.y.label, self.y.label_size)[1] + 4
        xlabels = self.x.labels or [tick_label(v) for v in self._ticks(self.x, xl)]
        sizes = [text_size(s, self.x.size) for s in xlabels] or [(0.0, 0.0)]
        if self.x.rotation:
            th = math.radians(self.x.rotation)
            bottom = max(w * math.sin(th) + h * math.cos(th) for w, h in sizes) + 8
        else:
            bottom = max(h for _, h in sizes) + 8
        if self.x.label:
            bottom += text_size(self.x.label, self.x.label_size)[1] + 4
        top = text_size(self.title, self.title_size)[1] + 8 if self.title else 6
        return left, 12.0, top, bottom

    @staticmethod
    def _ticks(axis: Axis, lim: tuple[float, float]) -> list[float]:
        if axis.ticks is not None:
            return axis.ticks
        return nice_ticks(*lim, log=axis.log)

    def _svg(self, box: tuple[float, float, float, float], uid: int) -> str:
        """The panel drawn with its plotting area at ``box`` = (x, y, width, height)."""
        x0, y0, w, h = box
        out: list[str] = []
        if self.title:
            out.append(text(x0 + w / 2, y0 - 6, self.title, self.title_size,
                             baseline="bottom"))
        if self.off:
            for x, y, s, o in self.texts:
                out.append(text(x0 + x * w, y0 + (1 - y) * h, s, o["size"],
                                 anchor=ANCHOR[o.get("ha", "left")], baseline="center"))
            return "".join(out)
        (xl, yl) = self._limits()

        def px(v: np.ndarray | float) -> Any:
            return x0 + (np.asarray(v, dtype=np.float64) - xl[0]) / (xl[1] - xl[0]) * w

        def py(v: np.ndarray | float) -> Any:
            v = np.asarray(v, dtype=np.float64)
            if self.y.log:
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = np.log10(np.where(v > 0, v, np.nan))
                lo, hi = math.log10(yl[0]), math.log10(yl[1])
            else:
                lo, hi = yl
            return y0 + h - (v - lo) / (hi - lo) * h

        out.append(f'<clipPath id="c{uid}"><rect x="{num(x0)}" y="{num(y0)}" '
                   f'width="{num(w)}" height="{num(h)}"/></clipPath>')
        out += self._axes_svg(px, py, xl, yl, box)
        out.append(f'<g clip-path="url(#c{uid})">')
        for a in sorted(self.artists, key=lambda a: a.z):
            out.append(draw(a, px, py, x0, w, y0 + h if self.y.log else None))
        out.append("</g>")
        for x, y, s, o in self.texts:
            if o.get("above"):
                out.append(text(float(px(x)), float(py(y)) - 2, s, o["size"],
                                 baseline="bottom"))
            else:
                out.append(text(float(px(x)), float(py(y)), s, o["size"],
                                 anchor=ANCHOR[o.get("ha", "left")], baseline="center"))
        out.append(f'<rect x="{num(x0)}" y="{num(y0)}" width="{num(w)}" height="{num(h)}" '
                   'fill="none" stroke="#000000" stroke-width="0.8"/>')
        keys = [a.key for a in self.artists if a.key is not None]
        if self.legend_at and keys:
            loc, ncol, size = self.legend_at
            centre = x0 + w / 2 if "center" in loc else None
            width = max(k.width(size) for k in keys) * min(ncol, len(keys)) + 2 * size
            mid = centre if centre is not None else (
                x0 + w - width / 2 - 4 if "right" in loc else x0 + width / 2 + 4)
            block, _ = keys_block(keys, mid, y0 + 4, size, ncol, frame=True)
            out.append(block)
        return "".join(out)

    def _axes_svg(self, px: Any, py: Any, xl: tuple[float, float], yl: tuple[float, float],
                  box: tuple[float, float, float, float]) -> list[str]:
        """Ticks, tick labels, grid lines and axis labels around the plotting area."""
        x0, y0, w, h = box
        out: list[str] = []
        for axis, lim, place in ((self.x, xl, px), (self.y, yl, py)):
            for i, v in enumerate(self._ticks(axis, lim)):
                if not min(lim) - 1e-9 <= v <= max(lim) + 1e-9:
                    continue
                at = float(place(v))
                label = axis.labels[i] if axis.labels and i < len(axis.labels) else \
                    tick_label(v)
                out += self._tick(axis is self.x, at, label, box)
        left, _, _, bottom = self._margins()
        if self.x.label:
            out.append(text(x0 + w / 2, y0 + h + bottom - 2, self.x.label, self.x.label_size,
                            baseline="bottom"))
        if self.y.label:
            out.append(text(x0 - left + 2, y0 + h / 2, self.y.label, self.y.label_size,
                            baseline="top", rotate=-90))
        return out

    def _tick(self, on_x: bool, at: float, label: str,
              box: tuple[float, float, float, float]) -> list[str]:
        """One tick at ``at`` (points) on the x (``on_x``) or y axis: grid line, mark, label."""
        x0, y0, w, h = box
        axis = self.x if on_x else self.y
        # (grid from, grid to, mark from, mark to) as (x1, y1, x2, y2)
        grid = (at, y0, at, y0 + h) if on_x else (x0, at, x0 + w, at)
        mark = (at, y0 + h, at, y0 + h + 3.5) if on_x else (x0 - 3.5, at, x0, at)
        out = []
        for (x1, y1, x2, y2), stroke, width, drawn in ((grid, "#b0b0b0", "0.6", axis.grid),
                                                       (mark, "#000000", "0.8", True)):
            if drawn:
                out.append(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" '
                           f'y2="{num(y2)}" stroke="{stroke}" stroke-width="{width}"/>')
        if not on_x:
            out.append(text(x0 - 5, at, label, axis.size, anchor="end", baseline="center"))
        elif axis.rotation:
            out.append(text(at, y0 + h + 6, label, axis.size, anchor="end", baseline="top",
                            rotate=-axis.rotation))
        else:
            out.append(text(at, y0 + h + 5, label, axis.size, baseline="top"))
        return out


@dataclass
class Figure:
    """Panels in a grid under a title and an optional figure-wide legend."""

    width: float
    heights: list[float]
    cols: int
    panels: list[Panel]
    title: str = ""
    title_size: float = 12.0
    keys: list[Key] = field(default_factory=list)
    keys_ncol: int = 1
    keys_size: float = 8.0

    @classmethod
    def grid(cls, width_in: float, height_in: float, *, rows: int, cols: int,
             height_ratios: Sequence[float] | None = None, title: str = ""
             ) -> tuple[Figure, list[Panel]]:
        """A ``width_in`` × ``height_in`` inch figure of ``rows`` × ``cols`` panels."""
        if rows < 1 or cols < 1:
            raise ValueError(f"a figure has at least one row and column; got {rows} x {cols}")
        ratios = list(height_ratios or [1.0] * rows)
        if len(ratios) != rows:
            raise ValueError(f"height_ratios has {len(ratios)} values for {rows} rows")
        total = sum(ratios)
        panels = [Panel() for _ in range(rows * cols)]
        fig = cls(width_in * 72, [height_in * 72 * r / total for r in ratios], cols, panels,
                  title=title)
        return fig, panels

    def legend(self, keys: Sequence[Key], *, ncol: int = 1, fontsize: float = 8.0) -> None:
        """A legend of ``keys`` under the title, across the figure."""
        self.keys, self.keys_ncol, self.keys_size = list(keys), ncol, fontsize

    def to_svg(self) -> str:
        """The figure as one SVG document; rows keep their heights, margins align."""
        rows = len(self.heights)
        head = text_size(self.title, self.title_size)[1] + 10 if self.title else 4
        out: list[str] = []
        if self.title:
            out.append(text(self.width / 2, 6, self.title, self.title_size, baseline="top",
                             weight="bold"))
        if self.keys:
            block, height = keys_block(self.keys, self.width / 2, head, self.keys_size,
                                        self.keys_ncol, frame=False)
            out.append(block)
            head += height + 4
        margins = [p._margins() for p in self.panels]
        col_w = self.width / self.cols
        left = [max(margins[r * self.cols + c][0] for r in range(rows)) for c in range(self.cols)]
        y = head
        for r, height in enumerate(self.heights):
            top = max(margins[r * self.cols + c][2] for c in range(self.cols))
            bottom = max(margins[r * self.cols + c][3] for c in range(self.cols))
            for c in range(self.cols):
                i = r * self.cols + c
                x = c * col_w + left[c]
                w = max(col_w - left[c] - margins[i][1], 10.0)
                h = max(height - top - bottom, 10.0)
                out.append(self.panels[i]._svg((x, y + top, w, h), i))
            y += height
        total = y + 4
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(self.width)}pt" '
                f'height="{num(total)}pt" viewBox="0 0 {num(self.width)} {num(total)}" '
                f'font-family="{FONT}"><rect width="100%" height="100%" fill="#ffffff"/>'
                + "".join(out) + "</svg>\n")

    def _repr_svg_(self) -> str:
        """What Jupyter and IPython show for the figure: the SVG itself."""
        return self.to_svg()

    def save(self, path: Path | str) -> Path:
        """Write the SVG at ``path`` (its folder is made if missing); returns ``path``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_svg(), encoding="utf-8")
        return path


__all__ = ["MAX_POINTS", "Bars", "Figure", "Key", "Panel", "colour", "nice_ticks", "text_size",
           "thin"]
