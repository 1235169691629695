"""A run's figures are SVG drawn without matplotlib: valid, placed where their data says."""

from __future__ import annotations

import math
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from ppknn.simulations.reporting import svg
from ppknn.simulations.reporting.svg import Figure, Key, nice_ticks
from tests.helpers import SVG, figure_texts


def _root(fig: Figure) -> ET.Element:
    return ET.fromstring(fig.to_svg())


def _circles(root: ET.Element) -> list[tuple[float, float]]:
    return [(float(c.get("cx")), float(c.get("cy"))) for c in root.iter(SVG + "circle")]


def _bars(root: ET.Element, fill: str) -> list[tuple[float, float, float, float]]:
    return [tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))
            for r in root.iter(SVG + "rect") if r.get("fill") == fill]


@pytest.mark.parametrize("lo,hi,log,expected", [
    (0.0, 1.05, False, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    (-3.0, 7.0, False, [-2.0, 0.0, 2.0, 4.0, 6.0]),
    (0.031, 0.043, False, [0.032, 0.034, 0.036, 0.038, 0.04, 0.042]),
    (3.0, 2000.0, True, [10.0, 100.0, 1000.0]),
    (1.0, 1.0, False, [1.0]),
])
def test_nice_ticks_are_round_and_cover_the_range(lo, hi, log, expected):
    assert nice_ticks(lo, hi, log=log) == pytest.approx(expected)


def test_bars_stand_on_zero_with_heights_in_proportion():
    fig, (ax,) = Figure.grid(4, 3, rows=1, cols=1)
    ax.bar([0, 1, 2], [0.2, 0.4, 0.8], color="tab:green")
    ax.set_ylim(0, 1)
    bars = _bars(_root(fig), svg.colour("tab:green"))
    assert len(bars) == 3
    bottoms = {round(y + h, 6) for _, y, _, h in bars}
    assert len(bottoms) == 1  # every bar stands on the same zero line
    heights = [h for *_, h in bars]
    assert heights[1] == pytest.approx(2 * heights[0], rel=1e-3)
    assert heights[2] == pytest.approx(4 * heights[0], rel=1e-3)
    lefts = [x for x, *_ in bars]
    assert lefts == sorted(lefts)


def test_a_reversed_axis_puts_the_first_row_on_top_and_skips_what_is_not_finite():
    fig, (ax,) = Figure.grid(4, 3, rows=1, cols=1)
    ax.scatter([0.1, 0.5, math.nan, 0.9], [0, 1, 2, 3], c=["tab:red"] * 4)
    ax.set_ylim(3.6, -0.6)  # as leakage.svg: row 0 at the top
    points = _circles(_root(fig))
    assert len(points) == 3  # the NaN point is not drawn
    ys = [y for _, y in points]
    xs = [x for x, _ in points]
    assert ys == sorted(ys) and xs == sorted(xs)  # row 0 highest on the page, x grows right


def test_a_log_axis_draws_positive_values_and_decade_ticks():
    fig, (ax,) = Figure.grid(4, 3, rows=1, cols=1)
    ax.plot([0, 1, 2, 3], [10.0, 100.0, 0.0, 1000.0], label="sent")
    ax.set_yscale("log")
    ax.legend()
    root = _root(fig)
    (line,) = [p for p in root.iter(SVG + "polyline")]
    assert len(line.get("points").split()) == 3  # 0 has no place on a log axis
    words = "\n".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
    assert {"10", "100", "1000", "sent"} <= set(words.split("\n"))
    with pytest.raises(ValueError, match="'symlog'"):
        ax.set_yscale("symlog")


def test_text_is_escaped_and_multiline_titles_keep_their_lines():
    fig, (ax,) = Figure.grid(4, 3, rows=1, cols=1, title="run <a&b>")
    ax.bar([0], [1.0])
    ax.set_title("first line\nsecond & last")
    ax.set_xticks([0], ["x < y"])
    root = _root(fig)  # parses: nothing unescaped
    texts = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
    assert "run <a&b>" in texts and "x < y" in texts
    assert "first linesecond & last" in texts  # two <tspan> lines of one title


def test_every_legend_key_is_drawn_with_its_label():
    fig, (ax,) = Figure.grid(6, 3, rows=1, cols=1)
    ax.bar([0, 1], [1, 2], label="bars")
    ax.errorbar([0, 1], [1, 2], yerr=[[0.1, 0.1], [0.2, 0.2]], fmt="o", label="points")
    ax.axhline(1.5, ls="--", label="cap")
    ax.legend(ncol=3)
    fig.legend([Key("figure-wide", marker="D", edge="#000000")], ncol=1)
    words = figure_texts_of(fig)
    assert {"bars", "points", "cap", "figure-wide"} <= set(words)
    dashed = [e for e in _root(fig).iter(SVG + "line") if e.get("stroke-dasharray")]
    assert len(dashed) == 2  # the line and its legend key


def figure_texts_of(fig: Figure) -> list[str]:
    return ["".join(t.itertext()) for t in _root(fig).iter(SVG + "text")]


def test_panels_in_a_column_share_their_left_edge():
    fig, axes = Figure.grid(6, 4, rows=2, cols=1, height_ratios=[1, 3])
    axes[0].set_yticks([0], ["short"])
    axes[1].set_yticks([0], ["a much longer row label than the first"])
    for ax in axes:
        ax.scatter([1.0], [0.0])
    frames = [r for r in _root(fig).iter(SVG + "rect")
              if r.get("fill") == "none" and r.get("stroke") == "#000000"]
    assert len(frames) == 2
    assert float(frames[0].get("x")) == float(frames[1].get("x"))
    assert float(frames[1].get("height")) > 2 * float(frames[0].get("height"))


def test_an_unknown_axes_call_fails_loudly():
    _, (ax,) = Figure.grid(4, 3, rows=1, cols=1)
    with pytest.raises(AttributeError):
        ax.set_facecolor("white")


def test_a_plugin_panel_calling_what_the_panel_lacks_loses_its_panel_not_the_run(
        tmp_path, monkeypatch):
    """The broken variant: a plugin's plot written against a matplotlib call the panel lacks."""
    from ppknn.protocols.ppknn_ring.plugin import PPKNNRing
    from ppknn.simulations.pipeline import run_scenario
    from ppknn.simulations.scenario import parse_scenario

    def plot(self, ax, outcome):
        ax.set_title("half drawn")
        ax.set_facecolor("white")
        return True

    monkeypatch.setattr(PPKNNRing, "plot", plot)
    sc = parse_scenario({"run": {"name": "broken-panel"}, "data": {"dataset": "glass",
                                                                  "max_queries": 20},
                         "parties": {"n": 3}, "runtime": {"kind": "inprocess"}})
    with pytest.warns(RuntimeWarning, match="'ppknn-ring': its summary panel was not drawn"):
        run_scenario(sc, stage=tmp_path / "o", plot=True)
    words = figure_texts(tmp_path / "o" / "summary.svg")
    assert "half drawn" not in words and "no per-party privacy measure" in words
    assert (tmp_path / "o" / "summary.json").is_file()


def test_run_plots_import_no_matplotlib(tmp_path):
    """``ppknn run --plot``'s figures come without matplotlib's import (about 0.3 s)."""
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from ppknn.simulations.pipeline import run_scenario\n"
        "from ppknn.simulations.scenario import parse_scenario\n"
        "sc = parse_scenario({'run': {'name': 'm'}, 'data': {'dataset': 'glass', "
        "'max_queries': 20}, 'parties': {'n': 3}, 'runtime': {'kind': 'inprocess'}})\n"
        f"run_scenario(sc, stage=Path({str(tmp_path / 'o')!r}), plot=True)\n"
        "print('matplotlib' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr
    assert "leakage: m-" in figure_texts(tmp_path / "o" / "leakage.svg")


def test_leakage_figure_draws_each_shown_row_its_bound_and_baseline(tmp_path):
    from dataclasses import replace

    from ppknn.simulations.leakage.table import LeakageRow, plot_table

    base = LeakageRow(protocol="p", observer="a", target="t", attack="x", quantity="q",
                      value=0.5, ci_low=0.4, ci_high=0.6, trials=100)
    rows = [replace(base, target="t0", bound=0.1, value=0.7, ci_low=0.6, ci_high=0.8),
            replace(base, target="t1", advantage=0.2, baseline=0.3),
            replace(base, target="t2", value=math.nan, ci_low=math.nan, ci_high=math.nan)]
    plot_table(rows, tmp_path / "leakage.svg", title="run-7")
    root = ET.parse(tmp_path / "leakage.svg").getroot()
    reds = [c for c in root.iter(SVG + "circle") if c.get("fill") == svg.colour("tab:red")]
    blues = [c for c in root.iter(SVG + "circle") if c.get("fill") == svg.colour("tab:blue")]
    assert len(reds) == 1 + 1 and len(blues) == 1 + 1  # row t0 above bound, t1 within; keys
    words = figure_texts(tmp_path / "leakage.svg")
    assert "leakage: run-7" in words and "promised bound" in words
    assert "a → t1 adv. +0.2" in words and "a → t0" in words and "a → t2" in words
    diamonds = list(root.iter(SVG + "polygon"))
    assert len(diamonds) == 1 + 1  # t1's baseline and its legend key
    assert np.isfinite([float(c.get("cx")) for c in reds + blues]).all()


def test_a_long_curve_is_thinned_keeping_its_extremes():
    """100,000 parties' sorted curves: a bounded file with the same lowest and highest points."""
    from ppknn.simulations.reporting.svg import MAX_POINTS, thin

    rng = np.random.default_rng(0)
    y = np.sort(rng.exponential(size=100_000))
    y[50_000] = np.nan
    fig, (ax,) = Figure.grid(5, 3, rows=1, cols=1)
    ax.plot(np.arange(y.size), y)
    ax.fill_between(np.arange(y.size), y * 0.9, y * 1.1, alpha=0.3)
    text = fig.to_svg()
    assert len(text) < 400_000
    (line,) = list(ET.fromstring(text).iter(SVG + "polyline"))
    assert len(line.get("points").split()) <= MAX_POINTS + 2
    keep = thin(y)
    assert np.nanmax(y[keep]) == np.nanmax(y) and np.nanmin(y[keep]) == np.nanmin(y)
    assert keep[0] == 0 and keep[-1] == y.size - 1
    noise = rng.normal(size=100_000)  # not monotone: every bucket keeps its own extremes
    kept = np.zeros(noise.size, dtype=bool)
    kept[thin(noise)] = True
    width = -(-noise.size // (MAX_POINTS // 2))
    for start in range(0, noise.size, width):
        part, mask = noise[start:start + width], kept[start:start + width]
        assert part[mask].max() == part.max() and part[mask].min() == part.min()
    assert isinstance(thin(y[:MAX_POINTS]), slice)  # short curves keep every point


def test_a_row_label_shows_rounding_noise_in_the_advantage_as_zero():
    from dataclasses import replace

    from ppknn.simulations.leakage.table import LeakageRow, _row_label

    base = LeakageRow(protocol="p", observer="a", target="t", attack="x", quantity="q",
                      value=0.5, ci_low=0.4, ci_high=0.6, trials=100)
    assert _row_label(replace(base, advantage=-4.44e-18)) == "a → t (x) adv. +0"
    assert _row_label(replace(base, advantage=-0.0123)) == "a → t (x) adv. -0.0123"


def test_a_result_shows_its_figures_inline_without_writing(tmp_path, monkeypatch):
    import ppknn
    from ppknn.core.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    result = ppknn.run({"run": {"name": "inline"}, "data": {"dataset": "glass",
                                                             "max_queries": 20},
                        "parties": {"n": 3}, "runtime": {"kind": "inprocess"}})
    summary = result.figure()
    assert ET.fromstring(summary._repr_svg_()).tag == SVG + "svg"
    run_id = result.run.prepared.run_id
    assert f"{run_id}: " in "".join(figure_texts_of(summary))
    leak = result.figure("leakage")
    assert f"leakage: {run_id}" in figure_texts_of(leak)
    assert list(tmp_path.iterdir()) == []  # nothing written
    with pytest.raises(ConfigError, match="figure\\('tables'\\): 'summary' or 'leakage'"):
        result.figure("tables")
