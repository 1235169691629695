"""The marks of :mod:`~simulations.reporting.svg`'s figures: text, markers, legend keys, ticks.

Each function returns SVG text in points (72 a inch) for a :class:`~.svg.Panel` or
:class:`~.svg.Figure` to place; nothing here lays a figure out. Text widths are
estimated (:data:`EM` of the font size a character), not measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

import numpy as np

COLOURS = {"tab:blue": "#1f77b4", "tab:orange": "#ff7f0e", "tab:green": "#2ca02c",
           "tab:red": "#d62728", "tab:purple": "#9467bd", "tab:brown": "#8c564b",
           "tab:pink": "#e377c2", "tab:gray": "#7f7f7f", "tab:grey": "#7f7f7f",
           "tab:olive": "#bcbd22", "tab:cyan": "#17becf", "gray": "#808080", "grey": "#808080",
           "black": "#000000", "white": "#ffffff", "red": "#ff0000", "blue": "#0000ff",
           "none": "none"}
CYCLE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
         "#7f7f7f", "#bcbd22", "#17becf"]
FONT = "DejaVu Sans, Arial, Helvetica, sans-serif"
EM = 0.6  # estimated width of a character, in font sizes
DASHES = {"--": "5,3", ":": "1.5,2.5", "-.": "6,2.5,1.5,2.5", "-": None, "": None}


def colour(c: Any) -> str:
    """An SVG colour for a matplotlib colour name (``"tab:red"``, ``"C1"``) or ``#rrggbb``."""
    c = str(c)
    if c.startswith("C") and c[1:].isdigit():
        return CYCLE[int(c[1:]) % len(CYCLE)]
    return COLOURS.get(c, c)


def text_size(s: str, size: float) -> tuple[float, float]:
    r"""Estimated (width, height) in points of ``s`` (lines split at ``\\n``) at ``size`` pt."""
    lines = str(s).split("\n")
    return max(len(x) for x in lines) * EM * size, len(lines) * 1.2 * size


def num(v: float) -> str:
    """``v`` with at most two decimals, trailing zeros dropped (SVG coordinates)."""
    return f"{v:.2f}".rstrip("0").rstrip(".")


def text(x: float, y: float, s: str, size: float, *, anchor: str = "middle",
          baseline: str = "auto", rotate: float = 0.0, fill: str = "#000000",
          weight: str = "normal") -> str:
    """An SVG ``<text>``; ``baseline`` ``top``/``center``/``bottom`` places its lines."""
    lines = str(s).split("\n")
    step = 1.2 * size
    first = {"top": 0.8 * size, "center": 0.35 * size - (len(lines) - 1) * step / 2,
             "bottom": -(len(lines) - 1) * step - 0.2 * size}.get(baseline, 0.0)
    rot = f' transform="rotate({num(rotate)} {num(x)} {num(y)})"' if rotate else ""
    bold = ' font-weight="bold"' if weight != "normal" else ""
    spans = "".join(f'<tspan x="{num(x)}" dy="{num(first if i == 0 else step)}">'
                    f"{escape(line)}</tspan>" for i, line in enumerate(lines))
    return (f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}" '
            f'text-anchor="{anchor}" fill="{fill}"{bold}{rot}>{spans}</text>')


@dataclass(frozen=True)
class Key:
    """One legend entry: a swatch (bar), a line, a marker, or a line with a marker."""

    label: str
    face: str = "none"
    edge: str = "none"
    line: str | None = None
    dash: str | None = None
    marker: str | None = None
    patch: bool = False

    def draw(self, x: float, y: float, size: float) -> str:
        """The swatch at (x, y) (its left, mid-height) and the label after it."""
        out = []
        if self.patch:
            out.append(f'<rect x="{num(x)}" y="{num(y - 0.35 * size)}" width="{num(1.6 * size)}"'
                       f' height="{num(0.7 * size)}" fill="{self.face}"/>')
        if self.line:
            dash = f' stroke-dasharray="{self.dash}"' if self.dash else ""
            out.append(f'<line x1="{num(x)}" y1="{num(y)}" x2="{num(x + 1.6 * size)}" '
                       f'y2="{num(y)}" stroke="{self.line}" stroke-width="1.2"{dash}/>')
        if self.marker:
            out.append(marker(self.marker, x + 0.8 * size, y, 0.35 * size, self.face, self.edge))
        out.append(text(x + 2.0 * size, y, self.label, size, anchor="start", baseline="center"))
        return "".join(out)

    def width(self, size: float) -> float:
        """Points the entry takes across at ``size`` pt."""
        return 2.0 * size + text_size(self.label, size)[0]


def marker(kind: str, x: float, y: float, r: float, face: str, edge: str) -> str:
    """A marker (``o`` circle, ``D`` diamond, ``|`` tick) of radius ``r`` centred at (x, y)."""
    stroke = f' stroke="{edge}" stroke-width="1"' if edge != "none" else ""
    if kind == "D":
        pts = f"{num(x)},{num(y - r)} {num(x + r)},{num(y)} {num(x)},{num(y + r)} " \
              f"{num(x - r)},{num(y)}"
        return f'<polygon points="{pts}" fill="{face}"{stroke}/>'
    if kind == "|":
        return (f'<line x1="{num(x)}" y1="{num(y - r)}" x2="{num(x)}" y2="{num(y + r)}" '
                f'stroke="{edge if edge != "none" else face}" stroke-width="1.6"/>')
    return f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" fill="{face}"{stroke}/>'


def keys_block(keys: Sequence[Key], x_mid: float, y_top: float, size: float, ncol: int,
                frame: bool) -> tuple[str, float]:
    """Legend keys in ``ncol`` columns centred on ``x_mid`` from ``y_top``; (svg, height)."""
    ncol = max(1, min(ncol, len(keys)))
    rows = math.ceil(len(keys) / ncol)
    col_w = [max(k.width(size) for k in keys[c::ncol]) + size for c in range(ncol)]
    width, height = sum(col_w) + 0.6 * size, rows * 1.5 * size + 0.4 * size
    left = x_mid - width / 2
    out = [f'<rect x="{num(left)}" y="{num(y_top)}" width="{num(width)}" '
           f'height="{num(height)}" fill="#ffffff" fill-opacity="0.85" stroke="#cccccc"/>'
           ] if frame else []
    for i, k in enumerate(keys):
        r, c = divmod(i, ncol)
        out.append(k.draw(left + 0.4 * size + sum(col_w[:c]),
                          y_top + (r + 0.5) * 1.5 * size + 0.2 * size, size))
    return "".join(out), height


@dataclass
class Artist:
    """One drawn thing of a panel: its kind, its data, its z-order and its legend key."""

    kind: str
    data: dict[str, Any]
    z: float
    key: Key | None = None


@dataclass
class Bars:
    """What :meth:`Panel.bar` returns: the bars' centres, heights and width (for ``bar_label``)."""

    x: np.ndarray
    height: np.ndarray
    width: float


def arr(v: Any, n: int | None = None) -> np.ndarray:
    """``v`` as a 1-D float array; a single value repeated ``n`` times when ``n`` is given."""
    a = np.atleast_1d(np.asarray(v, dtype=np.float64))
    return np.broadcast_to(a, (n,)).copy() if n is not None and a.size == 1 else a


MAX_POINTS = 4000
"""Points a line or band keeps: past it, each bucket keeps its lowest and highest point."""


def thin(*ys: np.ndarray) -> Any:
    """Indices of the points a line through ``ys`` keeps (all of them up to ``MAX_POINTS``).

    The points are cut into ``MAX_POINTS // 2`` buckets in order; each keeps the
    index of its lowest and its highest value of every ``y`` (and the first and last
    point stay), so the drawn line has the same extremes, bucket by bucket, as the whole.

    >>> y = np.sin(np.linspace(0, 20, 100_000)); keep = thin(y)
    >>> len(keep) <= MAX_POINTS + 2, float(y[keep].max()) == float(y.max())
    (True, True)
    """
    n = ys[0].size
    if n <= MAX_POINTS:
        return slice(None)
    b = math.ceil(n / (MAX_POINTS // 2))
    m = math.ceil(n / b)
    starts = np.arange(m) * b
    picks = [np.array([0, n - 1])]
    for y in ys:
        finite = np.isfinite(y)
        for fill, pick in ((np.inf, np.argmin), (-np.inf, np.argmax)):
            padded = np.full(m * b, fill)
            padded[:n] = np.where(finite, y, fill)
            picks.append(np.minimum(pick(padded.reshape(m, b), axis=1) + starts, n - 1))
    return np.unique(np.concatenate(picks))


def nice_ticks(lo: float, hi: float, *, log: bool = False, most: int = 6) -> list[float]:
    """Round tick values covering [lo, hi] (decades on a log axis).

    >>> nice_ticks(0.0, 1.05)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> nice_ticks(3.0, 2000.0, log=True)
    [10.0, 100.0, 1000.0]
    """
    lo, hi = min(lo, hi), max(lo, hi)
    if log:
        a, b = math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9)
        step = max(1, math.ceil((b - a + 1) / most))
        return [10.0 ** e for e in range(a, b + 1, step)] or [lo]
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / most
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    out = [round(i * step, 12) for i in range(first, int(math.floor(hi / step + 1e-9)) + 1)]
    return [0.0 if v == 0 else v for v in out]


def tick_label(v: float) -> str:
    """A tick's value as text (six significant digits at most)."""
    return f"{v:.6g}"


@dataclass
class Axis:
    """One axis of a panel: limits, scale, ticks and their labels, its label, its grid."""

    lim: tuple[float | None, float | None] = (None, None)
    log: bool = False
    ticks: list[float] | None = None
    labels: list[str] | None = None
    rotation: float = 0.0
    size: float = 9.0
    label: str = ""
    label_size: float = 10.0
    grid: bool = False


ANCHOR = {"left": "start", "center": "middle", "right": "end"}


def span(parts: list[np.ndarray], axis: Axis, sticky0: bool) -> tuple[float, float]:
    """The axis limits: the set ones, else the finite data with 5% margins (log: >0 only)."""
    v = np.concatenate(parts) if parts else np.zeros(0)
    v = v[np.isfinite(v)]
    if axis.log:
        v = v[v > 0]
    if v.size == 0:
        lo, hi = (1.0, 10.0) if axis.log else (0.0, 1.0)
    else:
        lo, hi = float(v.min()), float(v.max())
        if axis.log:
            a, b = math.log10(lo), math.log10(hi)
            pad = 0.05 * (b - a) if b > a else 0.5
            lo, hi = 10 ** (a - pad), 10 ** (b + pad)
        else:
            pad = 0.05 * (hi - lo) if hi > lo else max(abs(hi) * 0.05, 0.5)
            lo, hi = (lo if sticky0 and lo == 0 else lo - pad), hi + pad
    lo = axis.lim[0] if axis.lim[0] is not None else lo
    hi = axis.lim[1] if axis.lim[1] is not None else hi
    if lo == hi:
        hi = lo + 1.0
    return float(lo), float(hi)


def points(xs: Any, ys: Any) -> str:
    """An SVG ``points`` list of the finite (x, y) pairs."""
    return " ".join(f"{num(a)},{num(b)}" for a, b in zip(xs, ys)
                    if math.isfinite(a) and math.isfinite(b))


def draw(a: Artist, px: Any, py: Any, x0: float, w: float, bottom: float | None) -> str:
    """One artist as SVG; ``bottom``: the bottom edge in points on a log axis, else None."""
    d = a.data
    if a.kind == "bar":
        left, right = px(d["x"] - d["w"] / 2), px(d["x"] + d["w"] / 2)
        top = py(d["h"])
        # a log axis has no 0: its bars stand on the panel's bottom edge
        zero = np.full(d["h"].shape, float(py(0.0)) if bottom is None else bottom)
        return "".join(
            f'<rect x="{num(lf)}" y="{num(min(t, z))}" width="{num(rt - lf)}" '
            f'height="{num(abs(z - t))}" fill="{c}"/>'
            for lf, rt, t, z, c in zip(left, right, top, zero, d["c"])
            if math.isfinite(t) and math.isfinite(z))
    if a.kind == "errorbar":
        out = []
        X, Y = px(d["x"]), py(d["y"])
        for axis, (lo, hi) in d["spans"].items():
            if axis == "y":
                A, B = py(d["y"] - lo), py(d["y"] + hi)
                segs = [(x, p, x, q) for x, p, q in zip(X, A, B)]
            else:
                A, B = px(d["x"] - lo), px(d["x"] + hi)
                segs = [(p, y, q, y) for y, p, q in zip(Y, A, B)]
            cap = d["cap"]
            for x1, y1, x2, y2 in segs:
                if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
                    continue
                out.append(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" '
                           f'y2="{num(y2)}" stroke="{d["e"]}" stroke-width="1"/>')
                if cap:
                    for (cx, cy) in ((x1, y1), (x2, y2)):
                        dx, dy = (cap, 0) if axis == "y" else (0, cap)
                        out.append(f'<line x1="{num(cx - dx)}" y1="{num(cy - dy)}" '
                                   f'x2="{num(cx + dx)}" y2="{num(cy + dy)}" '
                                   f'stroke="{d["e"]}" stroke-width="1"/>')
        if d["marker"]:
            out += [marker("o", x, y, 3.0, d["c"], d["c"]) for x, y in zip(X, Y)
                    if math.isfinite(x) and math.isfinite(y)]
        return "".join(out)
    if a.kind == "scatter":
        return "".join(marker(d["m"], x, y, d["r"], f, d["edge"])
                       for x, y, f in zip(px(d["x"]), py(d["y"]), d["faces"])
                       if math.isfinite(x) and math.isfinite(y))
    if a.kind == "line":
        dash = f' stroke-dasharray="{d["dash"]}"' if d["dash"] else ""
        return (f'<polyline points="{points(px(d["x"]), py(d["y"]))}" fill="none" '
                f'stroke="{d["c"]}" stroke-width="{num(d["lw"])}"{dash}/>')
    if a.kind == "band":
        X = px(d["x"])
        pts = points(np.concatenate([X, X[::-1]]),
                   np.concatenate([py(d["y1"]), py(d["y2"])[::-1]]))
        return f'<polygon points="{pts}" fill="{d["c"]}" fill-opacity="{num(d["a"])}"/>'
    y = float(py(d["y"]))  # hline
    dash = f' stroke-dasharray="{d["dash"]}"' if d["dash"] else ""
    return (f'<line x1="{num(x0)}" y1="{num(y)}" x2="{num(x0 + w)}" y2="{num(y)}" '
            f'stroke="{d["c"]}" stroke-width="{num(d["lw"])}"{dash}/>')


__all__ = ["ANCHOR", "COLOURS", "CYCLE", "DASHES", "EM", "FONT", "MAX_POINTS", "Artist", "Axis",
           "Bars", "Key", "arr", "colour", "draw", "keys_block", "marker", "nice_ticks", "num",
           "points", "span", "text", "text_size", "thin", "tick_label"]
