"""``save_png`` takes Agg's pixels straight to the palette: the same bytes as ``compact_png``
applied to matplotlib's own PNG of the figure, for every kind of figure it is given."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from ppknn.simulations.reporting import plots as plots_module
from ppknn.simulations.reporting.plots import compact_png, save_png


def _through_png(fig, path, dpi):
    """The route that encodes and decodes an intermediate PNG."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return compact_png(buffer.getvalue(), path)


def _pyplot_summary_like(size):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=size)
    rng = np.random.default_rng(0)
    for i, ax in enumerate(axes):
        x = np.arange(12)
        ax.bar(x - 0.2, rng.uniform(1, 9, 12), 0.4, label="sent")
        ax.bar(x + 0.2, rng.uniform(1, 9, 12), 0.4, label="received")
        ax.set_xticks(x, [f"owner-{j:02d}" for j in x], rotation=60, fontsize=7)
        ax.fill_between(x, 0.5, 2.5, alpha=0.2, lw=0)
        ax.set_ylabel("KiB on the wire")
        ax.set_title(f"panel {i}")
        ax.legend()
    fig.suptitle("run-0: the run's name")
    fig.tight_layout()
    return plt, fig


@pytest.mark.parametrize(("size", "dpi"), [((15, 4.2), 110), ((6.33, 4.77), 97),
                                           ((3.01, 2.99), 90)])
def test_pyplot_figure_gives_the_bytes_of_the_png_route(tmp_path, size, dpi):
    plt, fig = _pyplot_summary_like(size)
    try:
        fast = save_png(fig, tmp_path / "fast.png", dpi=dpi)
        slow = _through_png(fig, tmp_path / "slow.png", dpi)
    finally:
        plt.close(fig)
    assert fast.read_bytes() == slow.read_bytes()
    with Image.open(fast) as image:
        assert image.mode == "P"
        assert image.size == tuple(int(v) for v in np.array(size) * dpi)


def test_object_api_figure_without_a_canvas_of_its_own(tmp_path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.3), layout="constrained")
    ax = fig.subplots()
    ax.errorbar([1, 2, 3], [0.2, 0.5, 0.4], yerr=0.05, label="measured", capsize=2)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend()
    fig.suptitle("ppknn run demo")
    fast = save_png(fig, tmp_path / "a" / "fast.png", dpi=100)
    slow = _through_png(fig, tmp_path / "slow.png", 100)
    assert fast.read_bytes() == slow.read_bytes()
    assert save_png(fig, tmp_path / "again.png", dpi=100).read_bytes() == fast.read_bytes()


def test_a_canvas_of_another_size_takes_the_png_route(tmp_path, monkeypatch):
    """When the pixels do not fill width x height, the PNG route gives the same file."""
    plt, fig = _pyplot_summary_like((6.0, 4.0))
    try:
        slow = _through_png(fig, tmp_path / "slow.png", 80).read_bytes()
        real = plots_module._pixel_size
        monkeypatch.setattr(plots_module, "_pixel_size",
                            lambda f, dpi: tuple(v + 1 for v in real(f, dpi)))
        fast = save_png(fig, tmp_path / "fast.png", dpi=80).read_bytes()
    finally:
        plt.close(fig)
    assert fast == slow
