"""What a reader sees: sweep tables with intervals and privacy, axes that start at 0, levels as
categories."""

from __future__ import annotations

import math

import pytest

from ppknn.simulations.reporting import Figure, Series, Table


def _sweep_rows(protocol: str, eps: float | None) -> list[dict]:
    return [{"protocol.k": k, "seed": seed, "protocol": protocol, "accuracy": acc,
             "baseline_accuracy": 1.0, "epsilon_spent": eps}
            for k, accs in ((1, (0.98, 1.0, 0.99)), (5, (0.99, 0.99, 0.99)))
            for seed, acc in enumerate(accs)]


def _printed(rows, title="t") -> str:
    from ppknn import terminal

    width = terminal.out._width
    try:
        with terminal.out.capture() as captured:
            terminal.out.width = 200
            terminal.print_sweep(rows, title)
    finally:
        terminal.out._width = width
    return captured.get()


def test_the_sweep_table_shows_95_percent_intervals_over_seeds_and_the_privacy_column():
    from ppknn.simulations.reporting.intervals import t_interval

    text = _printed(_sweep_rows("dp-nb", 2.0))
    m, lo, hi = t_interval([0.98, 1.0, 0.99], clip=(0.0, 1.0))
    assert f"{m:.4f} [{lo:.4f}, {hi:.4f}]" in text, text
    assert "0.9900 [0.9900, 0.9900]" in text and "ε = 2" in text, text
    assert "mean over seeds [95% interval]" in text


def test_a_protocol_without_dp_says_so_in_the_privacy_column():
    text = _printed(_sweep_rows("ppknn-ring", math.nan))
    assert "no DP: per-node disclosure probability" in text, text


def test_one_seed_gives_no_interval_and_says_so():
    text = _printed(_sweep_rows("dp-nb", 1.0)[:1])
    assert "0.9800 (1 seed)" in text, text


def test_the_sweep_plot_draws_accuracy_on_a_0_to_1_axis(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ppknn.simulations.sweep import _plot

    kept = []
    monkeypatch.setattr(plt, "close", kept.append)
    rows = [{**r, "disclosure_mean": 0.3} for r in _sweep_rows("ppknn-ring", math.nan)]
    _plot(rows, tmp_path / "sweep.png", ["protocol.k"], "s")
    acc, privacy = kept[0].axes
    assert acc.get_ylim() == (0.0, 1.05) and privacy.get_ylim() == (0.0, 1.05)
    assert "95% interval over seeds" in acc.get_title()
    assert (tmp_path / "sweep.png").stat().st_size > 0
    for fig in kept:
        fig.clf()


def _levels_table() -> Table:
    table = Table(name="levels", columns=("level_rank", "accuracy", "protocol"))
    for rank, acc in ((1, 0.5), (2, 0.7), (10, 0.9)):
        table.add(level_rank=rank, accuracy=acc, protocol="p")
    return table


def test_ordinal_levels_are_evenly_spaced_categories(tmp_path):
    from matplotlib.figure import Figure as MplFigure

    from ppknn.simulations.reporting.plots import line_plot

    fig = MplFigure()
    figure = Figure(name="lv", title="Accuracy at each level", xlabel="level", ylabel="accuracy",
                    x="level_rank", categorical=True, ylim=(0.0, 1.05),
                    series=(Series(label="p", y="accuracy"),))
    line_plot(figure, _levels_table(), folder=tmp_path, run="run-x", mpl_figure=fig)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "10"]
    assert list(ax.lines[0].get_xdata()) == [0, 1, 2]  # not 1, 2, 10 on a number line
    assert ax.get_ylim() == (0.0, 1.05)


def test_a_zoomed_axis_states_its_range_in_the_title(tmp_path):
    from matplotlib.figure import Figure as MplFigure

    from ppknn.simulations.reporting.plots import line_plot

    fig = MplFigure()
    figure = Figure(name="z", title="Accuracy", xlabel="level", ylabel="accuracy",
                    x="level_rank", ylim=(0.9, 1.0), series=(Series(label="p", y="accuracy"),))
    line_plot(figure, _levels_table(), folder=tmp_path, run="run-x", mpl_figure=fig)
    assert "y axis zoomed to 0.9-1" in fig._suptitle.get_text()


def test_a_categorical_axis_cannot_be_logarithmic():
    from ppknn.core.errors import ConfigError

    with pytest.raises(ConfigError, match="categorical x axis cannot be logarithmic"):
        Figure(name="x", title="t", xlabel="x", ylabel="y", x="a", categorical=True, logx=True,
               series=(Series(y="b"),))


def test_the_comparisons_accuracy_figures_start_at_0_and_levels_are_categories():
    import inspect

    from ppknn.simulations import compare

    source = inspect.getsource(compare.write_report)
    assert 'ylim=(0.0, 1.05)' in source
    level = source[source.index('"utility_vs_privacy_level"'):]
    assert "categorical=True" in level[:300]
