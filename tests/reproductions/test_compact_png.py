"""Every PNG is written by ``save_png``: a 256-colour palette, deterministic, and smaller."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from ppknn.simulations.reporting import Figure, Series, Table, line_plot, save_png
from ppknn.simulations.reporting import plots as plots_module
from ppknn.simulations.reporting.plots import compact_png

ROOT = Path(__file__).resolve().parents[2]


def banded_figure(tmp_path: Path, name: str, mpl=None) -> Path:
    """A two-panel plot with light 95% bands, error-free lines and a legend (the report style)."""
    t = Table(name="acc", columns=("panel", "x", "method", "acc", "lo", "hi"))
    rng = np.random.default_rng(3)
    for panel in ("raw", "top-5"):
        for method in ("DIS E2", "DIS E4", "GEO (E2)", "GEO (E4)"):
            for x in (1, 10, 100, 1000, 10000):
                a = float(rng.uniform(0.1, 0.9))
                t.add(panel=panel, x=x, method=method, acc=a, lo=a - 0.05, hi=a + 0.05)
    fig = Figure(name=name, title="Accuracy against the radius", xlabel="radius",
                 ylabel="accuracy (95% band)", x="x", logx=True, panel_by="panel",
                 group_by="method", series=(Series(y="acc", low="lo", high="hi", band=True),))
    return line_plot(fig, t, folder=tmp_path, run="ppknn reproduce demo --quick", mpl_figure=mpl)


def rgb(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.int16)


def test_the_same_figure_gives_the_same_bytes(tmp_path):
    a = banded_figure(tmp_path / "a", "f")
    b = banded_figure(tmp_path / "b", "f")
    assert a.read_bytes() == b.read_bytes()
    with Image.open(a) as image:
        assert image.mode == "P" and len(image.getcolors()) <= 256


def render_both(tmp_path: Path) -> tuple[bytes, Path]:
    """matplotlib's own PNG of the banded figure, and the one ``save_png`` wrote."""
    from matplotlib.figure import Figure as MplFigure

    canvas = MplFigure()
    path = banded_figure(tmp_path, "f", mpl=canvas)
    buffer = io.BytesIO()
    canvas.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue(), path


def far_off(plain: bytes, path: Path) -> float:
    """Share of pixels more than 16 (of 255) off matplotlib's colour in some channel."""
    before, after = rgb(plain), rgb(path.read_bytes())
    assert before.shape == after.shape
    return float((np.abs(before - after).max(axis=-1) > 16).mean())


def test_compact_png_is_smaller_and_looks_the_same(tmp_path):
    """At most 45% of matplotlib's bytes (measured: 30%), and at most 0.5% of the pixels
    more than 16 off (measured: 0.12%; the light bands and grid keep their tints)."""
    plain, path = render_both(tmp_path)
    assert path.stat().st_size <= 0.45 * len(plain), (path.stat().st_size, len(plain))
    assert far_off(plain, path) <= 0.005


def test_a_coarse_palette_fails_the_look_check(tmp_path, monkeypatch):
    """The check above can fail: 32 colours put 15% of the pixels far off, 128 colours 0.8%."""
    for colours in (32, 128):
        monkeypatch.setattr(plots_module, "PNG_COLOURS", colours)
        assert far_off(*render_both(tmp_path / str(colours))) > 0.005, colours


def test_save_png_makes_the_folder_and_takes_pyplot_figures(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [3, 1, 2], label="a")
    ax.legend()
    try:
        path = save_png(fig, tmp_path / "new" / "p.png", dpi=80)
    finally:
        plt.close(fig)
    with Image.open(path) as image:
        assert image.mode == "P" and image.size == (512, 384)  # 6.4 x 4.8 in at 80 dpi


def test_compact_png_rejects_what_is_not_an_image(tmp_path):
    with pytest.raises(OSError):
        compact_png(b"not a png", tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


WRITERS = ("reproductions", "benchmarks", "simulations/reporting", "simulations/results.py",
           "simulations/sweep.py")


def test_every_png_writer_goes_through_save_png():
    """The reproductions, the benchmarks, a run's and a sweep's plots call ``save_png``;
    only ``plots.py`` calls matplotlib's ``savefig``."""
    callers = set()
    for entry in WRITERS:
        root = ROOT / entry
        for path in ([root] if root.is_file() else sorted(root.rglob("*.py"))):
            if re.search(r"\.savefig\(", path.read_text(encoding="utf-8")):
                callers.add(path.relative_to(ROOT).as_posix())
    assert callers == {"simulations/reporting/plots.py"}
