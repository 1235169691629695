"""The reporting model, its Markdown/CSV/plot writers and their validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppknn.core.errors import ConfigError
from ppknn.simulations.reporting import (
    Claim,
    Figure,
    Report,
    Run,
    Section,
    Series,
    Table,
    bar_plot,
    fmt,
    interval,
    line_plot,
    pct,
    plot,
    read_rows,
    render,
    summary,
    write,
    write_rows,
)
from ppknn.simulations.reporting.markdown import claim_lines


def claim(comparison: str = "at_least", **kw) -> Claim:
    base = dict(id="c", where="Fig. 1", statement="the paper says so", quantity="q",
                comparison=comparison)
    return Claim(**(base | kw))


# ------------------------------------------------------------------ verdicts
@pytest.mark.parametrize(("measured", "iv", "margin", "verdict"), [
    (0.9, None, 0.0, "reproduced"),
    (0.85, None, 0.0, "reproduced"),              # the bound itself is accepted
    (0.8, None, 0.0, "differs"),
    (0.8, None, 0.05, "partly"),                  # misses by exactly the margin
    (0.79, None, 0.05, "differs"),
    (0.9, (0.85, 0.95), 0.0, "reproduced"),       # whole interval meets the claim
    (0.9, (0.84, 0.95), 0.0, "partly"),           # interval straddles the bound
    (0.8, (0.70, 0.85), 0.0, "partly"),           # value misses, interval reaches
    (0.8, (0.70, 0.84), 0.0, "differs"),
    (0.8, (0.70, 0.84), 0.01, "partly"),          # interval within the margin
])
def test_at_least(measured, iv, margin, verdict):
    c = claim("at_least", paper=0.85, measured=measured, interval=iv, margin=margin)
    assert c.verdict == verdict


@pytest.mark.parametrize(("measured", "iv", "verdict"), [
    (0.25, None, "reproduced"),
    (0.5, None, "reproduced"),
    (0.75, None, "differs"),
    (0.4, (0.3, 0.49), "reproduced"),
    (0.4, (0.3, 0.51), "partly"),
    (0.6, (0.51, 0.7), "differs"),
    (-math.inf, None, "reproduced"),
    (math.inf, None, "differs"),
])
def test_at_most(measured, iv, verdict):
    assert claim("at_most", paper=0.5, measured=measured, interval=iv).verdict == verdict


@pytest.mark.parametrize(("kw", "measured", "iv", "verdict"), [
    ({"abs_tol": 0.25}, 0.5, None, "reproduced"),
    ({"abs_tol": 0.25}, 0.75, None, "reproduced"),      # boundary, inclusive
    ({"abs_tol": 0.25}, 0.25, None, "reproduced"),
    ({"abs_tol": 0.25}, 0.76, None, "differs"),
    ({"abs_tol": 0.25}, 0.7, (0.6, 0.8), "partly"),
    ({"abs_tol": 0.25}, 0.9, (0.76, 1.0), "differs"),
    ({"rel_tol": 0.1}, 0.55, None, "reproduced"),       # 10% of 0.5 = 0.05
    ({"rel_tol": 0.1}, 0.56, None, "differs"),
    ({"abs_tol": 0.01, "rel_tol": 0.1}, 0.55, None, "reproduced"),  # the larger tolerance
    ({}, 0.5, None, "reproduced"),                      # no tolerance: equality
    ({}, 0.5000001, None, "differs"),
])
def test_within(kw, measured, iv, verdict):
    assert claim("within", paper=0.5, measured=measured, interval=iv, **kw).verdict == verdict


def test_within_boundary_survives_rounding():
    # 0.3 + 0.05 is 0.35000000000000003 in floating point
    assert claim("within", paper=0.3, abs_tol=0.05, measured=0.35).verdict == "reproduced"
    assert claim("within", paper=0.3, abs_tol=0.05, measured=0.25).verdict == "reproduced"


@pytest.mark.parametrize(("measured", "iv", "margin", "verdict"), [
    (7.5, None, 0.0, "reproduced"),
    (5.0, None, 0.0, "reproduced"),
    (10.0, None, 0.0, "reproduced"),
    (11.0, None, 0.0, "differs"),
    (11.0, None, 1.0, "partly"),
    (4.0, None, 0.5, "differs"),
    (9.0, (6.0, 11.0), 0.0, "partly"),
    (7.0, (6.0, 9.0), 0.0, "reproduced"),
    (12.0, (11.0, 13.0), 0.0, "differs"),
])
def test_between(measured, iv, margin, verdict):
    c = claim("between", paper=(5, 10), measured=measured, interval=iv, margin=margin)
    assert c.verdict == verdict


@pytest.mark.parametrize(("measured", "iv", "verdict"), [
    (True, None, "reproduced"),
    (False, None, "differs"),
    (np.bool_(True), None, "reproduced"),
    (1.0, None, "reproduced"),
    (0.0, None, "differs"),
    (0.6, None, "partly"),
    (1.0, (0.9, 1.0), "partly"),
    (0.0, (0.0, 0.0), "differs"),
])
def test_holds(measured, iv, verdict):
    assert claim("holds", measured=measured, interval=iv).verdict == verdict


@pytest.mark.parametrize("measured", [None, float("nan"), np.float64("nan")])
def test_not_measured(measured):
    c = claim("at_least", paper=0.5, measured=measured)
    assert c.verdict == "not measured"
    assert c.gap is None


def test_not_measured_keeps_a_nan_interval():
    c = claim("at_most", paper=0.5, measured=float("nan"), interval=(math.nan, math.nan))
    assert c.verdict == "not measured"


@pytest.mark.parametrize(("comparison", "paper", "measured", "gap"), [
    ("at_least", 0.85, 0.9, 0.05),
    ("at_most", 0.5, 0.4, -0.1),
    ("within", 0.71, 0.64, -0.07),
    ("between", (5.0, 10.0), 7.0, 0.0),
    ("between", (5.0, 10.0), 12.0, 2.0),
    ("between", (5.0, 10.0), 3.0, -2.0),
])
def test_gap_is_measured_minus_paper(comparison, paper, measured, gap):
    assert claim(comparison, paper=paper, measured=measured).gap == pytest.approx(gap)


def test_holds_has_no_gap():
    assert claim("holds", measured=True).gap is None


def test_numpy_values_are_plain_floats():
    c = claim("at_least", paper=np.float64(0.5), measured=np.float32(0.75),
              interval=(np.float64(0.7), np.float64(0.8)))
    assert type(c.measured) is float and type(c.paper) is float
    assert c.interval == (0.7, 0.8)


# ------------------------------------------------------------------ bad input
def test_unknown_comparison_is_named():
    with pytest.raises(ConfigError, match="'approximately'"):
        claim("approximately", paper=0.5, measured=0.5)


@pytest.mark.parametrize("paper", [0.5, (0.5,), (0.5, 0.6, 0.7), ("a", "b"), None, "5-10"])
def test_between_needs_two_bounds(paper):
    with pytest.raises(ConfigError, match="between") as err:
        claim("between", paper=paper, measured=0.5)
    assert repr(paper) in str(err.value)


def test_between_bounds_in_order():
    with pytest.raises(ConfigError, match=r"\(10, 5\)"):
        claim("between", paper=(10, 5), measured=7)


@pytest.mark.parametrize("field", ["abs_tol", "rel_tol", "margin"])
def test_negative_tolerance_is_named(field):
    with pytest.raises(ConfigError, match=f"{field}.*-0.25"):
        claim("within", paper=0.5, measured=0.5, **{field: -0.25})


def test_nan_tolerance_rejected():
    with pytest.raises(ConfigError, match="abs_tol.*nan"):
        claim("within", paper=0.5, measured=0.5, abs_tol=float("nan"))


def test_tolerance_only_for_within():
    with pytest.raises(ConfigError, match="abs_tol=0.1"):
        claim("at_least", paper=0.5, measured=0.5, abs_tol=0.1)


@pytest.mark.parametrize("comparison", ["at_least", "at_most", "within"])
def test_numeric_comparison_needs_a_number(comparison):
    with pytest.raises(ConfigError, match="'high'"):
        claim(comparison, paper="high", measured=0.5)


def test_holds_takes_the_paper_as_true():
    with pytest.raises(ConfigError, match="paper=True.*False"):
        claim("holds", paper=False, measured=True)


def test_holds_share_in_unit_range():
    with pytest.raises(ConfigError, match="1.5"):
        claim("holds", measured=1.5)


def test_bool_measured_only_for_holds():
    with pytest.raises(ConfigError, match="True"):
        claim("at_least", paper=0.5, measured=True)


@pytest.mark.parametrize("iv", [(0.9, 0.8), (0.8,), "wide", (math.nan, 0.9)])
def test_bad_interval_is_named(iv):
    with pytest.raises(ConfigError, match="interval"):
        claim("at_least", paper=0.5, measured=0.85, interval=iv)


def test_config_error_is_a_value_error():
    with pytest.raises(ValueError):
        claim("nearly", paper=0.5, measured=0.5)


def test_claim_ids_unique_in_a_report():
    c = claim("at_least", paper=0.5, measured=0.6)
    with pytest.raises(ConfigError, match="'c'"):
        Report(title="t", sections=(Section(heading="a", claims=(c, c)),))


def test_claim_is_frozen_and_keyword_only():
    c = claim("at_least", paper=0.5, measured=0.6)
    with pytest.raises(AttributeError):
        c.measured = 0.1  # type: ignore[misc]
    with pytest.raises(TypeError):
        Claim("c", "Fig. 1", "s", "q", "at_least")  # type: ignore[misc]


# ------------------------------------------------------------------ formatting
@pytest.mark.parametrize(("value", "text"), [
    (0.71234, "0.712"), (0.5, "0.500"), (9.9996, "10.0"), (123456.7, "123,457"),
    (1e9, "1.00e+09"), (0.00012345, "1.23e-04"), (0.001, "0.00100"), (-2.5, "-2.50"),
    (0.0, "0"), (7, "7"), (100000, "100,000"), (np.int64(3), "3"), (None, "n/a"),
    (math.nan, "n/a"), (math.inf, "∞"), (-math.inf, "-∞"), (False, "no"), ("x", "x"),
])
def test_fmt(value, text):
    assert fmt(value) == text


def test_fmt_signed_and_digits():
    assert fmt(0.05, signed=True) == "+0.0500"
    assert fmt(-0.05, signed=True) == "-0.0500"
    assert fmt(3.14159, 5) == "3.1416"


def test_pct_and_interval():
    assert pct(0.7134) == "71.3%"
    assert pct(1.0) == "100.0%"
    assert pct(0.0004) == "0.0400%"
    assert pct(0.012, signed=True) == "+1.2%"
    assert pct(None) == "n/a"
    assert interval(0.05, 0.1, percent=True) == "[5.0%, 10.0%]"
    assert interval(0.701, 0.723) == "[0.701, 0.723]"


# ------------------------------------------------------------------ markdown
def demo_report(**kw) -> Report:
    claims = (
        claim("at_least", id="a", paper=0.85, measured=0.9, interval=(0.88, 0.92),
              percent=True),
        claim("within", id="b", paper=0.71, abs_tol=0.02, measured=0.64,
              explanation="the split differs"),
        claim("between", id="c", paper=(5, 10), measured=11.0, margin=2.0),
        claim("holds", id="d", measured=0.6),
        claim("at_most", id="e", paper=0.5, measured=None),
    )
    table = Table(name="acc", columns=("n", "accuracy", "note"))
    table.add(n=100000, accuracy=0.71234567, note="a|b")
    table.add(n=5, accuracy=float("nan"), note="")
    fig = Figure(name="fig2", title="Accuracy against k", xlabel="k", ylabel="accuracy",
                 x="n", series=(Series(label="PP-kNN", y="accuracy"),))
    base = dict(title="Reproduction: demo", intro=("First paragraph.",),
                settings={"splits": 20, "k": (1, 5), "delta": 0.001, "seed": 2017},
                run=Run(command="ppknn reproduce demo --quick", quick=True, seed=2017,
                        seconds=200.0),
                sections=(Section(heading="Fig. 2", text=("Paper: close.",), figures=(fig,),
                                  tables=(table,), claims=claims),),
                deviations=("n is not given; 4 owners are used.",), figure_dir="demo")
    return Report(**(base | kw))


def test_summary_line_counts_verdicts():
    text = render(demo_report())
    assert "Claims: 1 reproduced, 2 partly, 1 differ, 1 not measured." in text


def test_summary_without_unmeasured():
    assert summary([claim("holds", measured=True)]) == "1 reproduced, 0 partly, 0 differ"


def test_claim_rows():
    text = "\n".join(claim_lines(demo_report().claims))
    assert text.startswith("| claim | paper | measured [95% CI] | verdict | gap / explanation |")
    assert ("| Fig. 1: the paper says so (*q*) | ≥ 85.0% | 90.0% [88.0%, 92.0%] | "
            "**reproduced** | +5.0 pts |") in text
    assert "| 0.710 ± 0.0200 | 0.640 | **differs** | -0.0700; the split differs |" in text
    assert "| 5.00 to 10.0 | 11.0 | **partly** | +1.00 |" in text
    assert "| holds | in 60.0% of cases | **partly** |  |" in text
    assert "| ≤ 0.500 | n/a | **not measured** |  |" in text


def test_report_layout():
    text = render(demo_report())
    lines = text.splitlines()
    assert lines[0] == "# Reproduction: demo"
    assert lines[2].startswith("Generated by `ppknn reproduce demo --quick` (quick settings, "
                               "inprocess runtime, seed 2017) in 3.3 min.")
    assert "**Quick mode" in lines[2]
    assert "| splits | 20 |" in text and "| k | 1, 5 |" in text
    assert "| delta | 0.001 |" in text and "| seed | 2017 |" in text
    assert "![Accuracy against k](demo/fig2.png)" in text
    assert "*Accuracy against k* (data: `fig2.csv`)" in text
    assert "| 100,000 | 0.712 | a\\|b |" in text
    assert "| 5 | n/a |  |" in text
    assert text.index("## Fig. 2") < text.index("## Where this differs from the paper")
    assert "- n is not given; 4 owners are used." in text
    assert "\n\n\n" not in text and text.endswith("4 owners are used.\n")


def test_report_without_claims_has_no_summary():
    text = render(Report(title="t", sections=(Section(heading="s", text=("p",)),)))
    assert "Claims:" not in text
    assert text == "# t\n\n## s\n\np\n"


def test_section_text_must_be_paragraphs():
    with pytest.raises(ConfigError, match="tuple of paragraphs"):
        Section(heading="s", text="one string")  # type: ignore[arg-type]


def test_write_creates_folders(tmp_path):
    path = write(demo_report(), tmp_path / "docs" / "demo.md")
    assert path.read_text() == render(demo_report())


# ------------------------------------------------------------------ CSV
MIXED = [
    {"dataset": "glass", "k": 5, "acc": 0.71234567, "p0": 1.0, "ok": True},
    {"dataset": "pima", "k": 10, "acc": float("nan"), "big": 1234567.0, "small": 1.5e-07},
    {"k": np.int64(3), "acc": np.float64(0.5), "note": "a, \"quoted\"", "ok": None},
    {"dataset": "x", "acc": float("inf"), "neg": -0.000123456789},
]


def test_write_rows_golden_bytes(tmp_path):
    write_rows(tmp_path / "t.csv", MIXED)
    assert (tmp_path / "t.csv").read_bytes() == (
        b"dataset,k,acc,p0,ok,big,small,note,neg\r\n"
        b"glass,5,0.712346,1,True,,,,\r\n"
        b"pima,10,nan,,,1.23457e+06,1.5e-07,,\r\n"
        b",3,0.5,,,,,\"a, \"\"quoted\"\"\",\r\n"
        b"x,,inf,,,,,,-0.000123457\r\n")


def test_read_rows_parses_cells(tmp_path):
    write_rows(tmp_path / "t.csv", MIXED)
    rows = read_rows(tmp_path / "t.csv")
    assert rows[0] == {"dataset": "glass", "k": 5, "acc": 0.712346, "p0": 1, "ok": True,
                       "big": None, "small": None, "note": None, "neg": None}
    assert math.isnan(rows[1]["acc"]) and rows[1]["big"] == 1.23457e06
    assert rows[2]["note"] == 'a, "quoted"' and rows[3]["acc"] == math.inf


def test_write_rows_with_columns_rejects_unknown_keys(tmp_path):
    with pytest.raises(ConfigError, match="'extra'"):
        write_rows(tmp_path / "t.csv", [{"a": 1, "extra": 2}], columns=("a",))


def test_table_csv_round_trip(tmp_path):
    t = Table(name="acc", columns=("dataset", "k", "acc", "holds"))
    t.add(dataset="glass", k=np.int64(5), acc=np.float64(0.712345678), holds=np.bool_(True))
    t.add(dataset="pima", k=10, acc=0.25, holds=False)
    back = Table.read_csv(t.write_csv(tmp_path / "acc.csv"))
    assert back == t
    assert back.column("acc", dataset="glass") == [0.712346]


def test_table_add_checks_columns():
    t = Table(name="acc", columns=("k", "acc"))
    with pytest.raises(ConfigError, match=r"missing columns \['acc'\].*unknown columns \['x'\]"):
        t.add(k=1, x=2)


def test_table_from_rows_fills_missing_keys():
    t = Table.from_rows("t", [{"a": 1}, {"a": 2, "b": "x"}])
    assert t.columns == ("a", "b") and t.rows == [{"a": 1, "b": None}, {"a": 2, "b": "x"}]


def test_table_rejects_repeated_columns():
    with pytest.raises(ConfigError, match="'k', 'k'"):
        Table(name="t", columns=("k", "k"))


# ------------------------------------------------------------------ plots
def accuracy_table() -> Table:
    t = Table(name="acc", columns=("dataset", "k", "method", "acc", "lo", "hi", "sd"))
    for ds in ("glass", "pima"):
        for k in (5, 1, 3):
            for method, shift in (("PP-kNN", 0.0), ("kNN", 0.05)):
                a = 0.6 + 0.01 * k + shift
                t.add(dataset=ds, k=k, method=method, acc=a, lo=a - 0.02, hi=a + 0.03, sd=0.01)
    return t


def mpl_figure():
    from matplotlib.figure import Figure as MplFigure

    return MplFigure()


def test_line_plot_labels_title_legend_and_intervals(tmp_path):
    fig = Figure(name="fig2", title="Accuracy against k", xlabel="k", ylabel="accuracy",
                 x="k", series=(Series(y="acc", low="lo", high="hi"),), group_by="method",
                 panel_by="dataset", hlines=(("chance", 0.5),))
    canvas = mpl_figure()
    path = line_plot(fig, accuracy_table(), folder=tmp_path, run="demo --quick", mpl_figure=canvas)
    assert path == tmp_path / "fig2.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert canvas.get_suptitle() == "Accuracy against k\ndemo --quick"
    axes = canvas.get_axes()
    assert [ax.get_title() for ax in axes] == ["glass", "pima"]
    for ax in axes:
        assert ax.get_xlabel() == "k" and ax.get_ylabel() == "accuracy"
        legend = ax.get_legend()
        assert legend is not None
        assert [t.get_text() for t in legend.get_texts()] == ["PP-kNN", "kNN", "chance"]
        assert len(ax.containers) == 2  # one error-bar container per line
    line = axes[0].containers[0].lines[0]
    assert list(line.get_xdata()) == [1, 3, 5]  # sorted by x
    assert list(line.get_ydata()) == pytest.approx([0.61, 0.63, 0.65])


def test_line_plot_band_and_symmetric_error(tmp_path):
    fig = Figure(name="f", title="t", xlabel="k", ylabel="acc", x="k",
                 series=(Series(label="PP", y="acc", err="sd", band=True,
                                where={"method": "PP-kNN", "dataset": "glass"}),))
    canvas = mpl_figure()
    line_plot(fig, accuracy_table(), folder=tmp_path, run="r", mpl_figure=canvas)
    ax = canvas.get_axes()[0]
    assert len(ax.collections) == 1 and not ax.containers  # a band, no error bars
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["PP"]


def test_line_plot_series_label_prefixes_groups(tmp_path):
    fig = Figure(name="f", title="t", xlabel="k", ylabel="acc", x="k",
                 series=(Series(label="accuracy", y="acc", where={"dataset": "pima"}),),
                 group_by="method")
    canvas = mpl_figure()
    line_plot(fig, accuracy_table(), folder=tmp_path, run="r", mpl_figure=canvas)
    texts = [t.get_text() for t in canvas.get_axes()[0].get_legend().get_texts()]
    assert texts == ["accuracy (PP-kNN)", "accuracy (kNN)"]


def test_bar_plot(tmp_path):
    fig = Figure(name="bars", title="Accuracy by dataset", xlabel="dataset",
                 ylabel="accuracy", x="dataset", kind="bar",
                 series=(Series(label="PP-kNN", y="acc", low="lo", high="hi",
                                where={"method": "PP-kNN", "k": 5}),
                         Series(label="kNN", y="acc", where={"method": "kNN", "k": 5})))
    canvas = mpl_figure()
    path = plot(fig, accuracy_table(), folder=tmp_path, run="demo", mpl_figure=canvas)
    ax = canvas.get_axes()[0]
    assert path.exists() and len(ax.patches) == 4
    assert [t.get_text() for t in ax.get_xticklabels()] == ["glass", "pima"]
    assert ax.get_xlabel() == "dataset" and ax.get_ylabel() == "accuracy"
    assert canvas.get_suptitle() == "Accuracy by dataset\ndemo"


def test_plot_without_a_given_figure_writes_the_png(tmp_path):
    fig = Figure(name="f", title="t", xlabel="k", ylabel="acc", x="k",
                 series=(Series(y="acc", where={"dataset": "glass", "method": "kNN"}),))
    path = bar_plot(fig, accuracy_table(), folder=tmp_path / "out", run="r")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_plot_names_a_missing_column(tmp_path):
    fig = Figure(name="f", title="t", xlabel="k", ylabel="acc", x="k",
                 series=(Series(y="accuracy_mean"),))
    with pytest.raises(ConfigError, match="'accuracy_mean'"):
        line_plot(fig, accuracy_table(), folder=tmp_path, run="r")


def test_plot_needs_rows_and_a_run(tmp_path):
    fig = Figure(name="f", title="t", xlabel="k", ylabel="acc", x="k",
                 series=(Series(y="acc", where={"dataset": "iris"}),))
    with pytest.raises(ConfigError, match="no rows"):
        line_plot(fig, accuracy_table(), folder=tmp_path, run="r")
    with pytest.raises(ConfigError, match="run=''"):
        line_plot(fig, accuracy_table(), folder=tmp_path, run="")


def test_figure_validation():
    with pytest.raises(ConfigError, match="'pie'"):
        Figure(name="f", title="t", xlabel="x", ylabel="y", x="k", series=(Series(y="a"),),
               kind="pie")
    with pytest.raises(ConfigError, match="ylabel=''"):
        Figure(name="f", title="t", xlabel="x", ylabel="", x="k", series=(Series(y="a"),))
    with pytest.raises(ConfigError, match="low='lo', high=None"):
        Series(y="a", low="lo")
    with pytest.raises(ConfigError, match="err='sd'"):
        Series(y="a", err="sd", low="lo", high="hi")


def test_figure_file_names_default_to_its_name():
    fig = Figure(name="fig2", title="t", xlabel="x", ylabel="y", x="k", series=(Series(y="a"),))
    assert (fig.csv, fig.png) == ("fig2.csv", "fig2.png")


def test_a_resumed_report_says_which_runs_it_kept():
    from ppknn.simulations.reporting.markdown import run_line
    from ppknn.simulations.reporting.model import Run

    fresh = run_line(Run(command="ppknn reproduce zafarani", seconds=60.0))
    assert "Every number below comes from that run." in fresh and "resumed" not in fresh
    resumed = run_line(Run(command="ppknn reproduce zafarani", seconds=60.0, reused=1200))
    assert "1,200 of its runs were kept" in resumed
    assert "Every number below comes from that run." not in resumed
