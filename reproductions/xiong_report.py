"""The report of the Xiong et al. reproduction, built from the run's tables.

:func:`build_report` turns the measured tables into a
:class:`~simulations.reporting.Report`: one section per figure of the paper
(its plot, a table of the measured points and the paper's claims as
:class:`~simulations.reporting.Claim` data, verdicts computed by the model),
the experiments beyond the paper, the run time and the deviations.
:func:`write_report` draws the figures, copies them and the CSV tables
beside the Markdown report and writes it.
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

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
    pct,
    plot,
    write,
)
from ppknn.simulations.reporting.formatting import number

PAPER = ("Xiong, Chitti & Liu, *Privacy-preserving kNN classification over multiple private "
         "databases*")
FIGURE_DIR = "xiong"

REFERENCE_POINTS = {"glass": (1, 5), "pima": (5,), "abalone": (5,)}
"""Where the report checks the run's non-private baseline (dataset -> k values) against an
independent estimate of the same accuracy: :func:`cv_reference`."""

REFERENCE_FOLDS = 10
REFERENCE_SEED = 0


def cv_reference(dataset: str, k: int, *, folds: int = REFERENCE_FOLDS,
                 seed: int = REFERENCE_SEED) -> tuple[float, float, float] | None:
    """Non-private kNN accuracy on the whole dataset by stratified ``folds``-fold CV.

    An estimate independent of the run's splits (every row is a test row once), computed
    here from the dataset as the run loads it (raw features, abalone's sex one-hot):
    scikit-learn's brute-force ``KNeighborsClassifier(k)``, folds shuffled by ``seed``.
    Returns the accuracy and its 95% Wilson interval over the rows, or ``None`` when the
    dataset cannot be loaded here (the report then says n/a).
    """
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.neighbors import KNeighborsClassifier

    from ppknn.core.errors import DataError
    from ppknn.core.leakage import wilson_interval
    from ppknn.simulations.prepare import load_scenario_dataset

    try:
        ds = load_scenario_dataset(dataset, None)
    except (DataError, OSError):
        return None
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # classes rarer than the folds (abalone's rings): expected
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        predicted = cross_val_predict(KNeighborsClassifier(n_neighbors=k, algorithm="brute"),
                                      ds.X, ds.y, cv=cv)
    correct = int((predicted == ds.y).sum())
    lo, hi = wilson_interval(correct, len(ds.y))
    return correct / len(ds.y), lo, hi


CLOSE = 0.03
"""Fig. 2's "very close", read as: within 3 accuracy points."""

# --------------------------------------------------------------------- figures
FIG2 = Figure(
    name="fig2_accuracy_vs_k", csv="accuracy.csv", x="k", panel_by="dataset",
    title="Fig. 2: accuracy of PP-kNN (r = 1, P0 = 1, d = 0.5) and kNN over k, 95% CI over "
          "splits",
    xlabel="k", ylabel="accuracy",
    series=(Series(label="PP-kNN (r=1, P0=1, d=0.5)", y="acc_ppknn", low="acc_ppknn_lo",
                   high="acc_ppknn_hi", where={"figure": "fig2"}),
            Series(label="kNN (scikit-learn)", y="acc_knn", low="acc_knn_lo", high="acc_knn_hi",
                   where={"figure": "fig2"}, dashed=True)))
FIG2_NO_CI = Figure(
    name="fig2_accuracy_vs_k", csv="accuracy.csv", x="k", panel_by="dataset",
    title="Fig. 2: accuracy of PP-kNN (r = 1, P0 = 1, d = 0.5) and kNN over k (tables from a "
          "run without per-point accuracy intervals; the differences' intervals are in the "
          "table)",
    xlabel="k", ylabel="accuracy",
    series=(Series(label="PP-kNN (r=1, P0=1, d=0.5)", y="acc_ppknn", where={"figure": "fig2"}),
            Series(label="kNN (scikit-learn)", y="acc_knn", where={"figure": "fig2"},
                   dashed=True)))
FIG3 = Figure(
    name="fig3_abs_difference_vs_rounds", csv="accuracy.csv", x="rounds", group_by="dataset",
    title="Fig. 3: mean |PP-kNN - kNN| accuracy over r (P0 = 1, d = 0.5, k = 5)",
    xlabel="rounds r", ylabel="|accuracy difference| (95% CI)",
    series=(Series(y="abs_diff", low="abs_diff_lo", high="abs_diff_hi",
                   where={"figure": "fig3"}),))
FIG4 = Figure(
    name="fig4_abs_difference_vs_d", csv="accuracy.csv", x="d", group_by="dataset",
    title="Fig. 4: mean |PP-kNN - kNN| accuracy over d (r = 2, P0 = 1, k = 5)",
    xlabel="randomisation factor d", ylabel="|accuracy difference| (95% CI)",
    series=(Series(y="abs_diff", low="abs_diff_lo", high="abs_diff_hi",
                   where={"figure": "fig4"}),))
FIG5 = Figure(
    name="fig5_accuracy_large_k", csv="fig5_large_k.csv", x="k", panel_by="dataset",
    logx=True, title="Fig. 5: accuracy over k up to the whole union (r = 1, P0 = 1, d = 0.5)",
    xlabel="k", ylabel="accuracy",
    series=(Series(label="PP-kNN (95% CI)", y="acc_ppknn", low="acc_ppknn_lo",
                   high="acc_ppknn_hi"),
            Series(label="kNN", y="acc_knn", dashed=True)))
FIG6 = Figure(
    name="fig6_disclosure", x="k", panel_by="adversary", group_by="n", logx=True,
    ylim=(0.0, 1.0), hlines=(("0.5", 0.5),),
    title="Fig. 6: mean per-node disclosure over k, one line per n (r = 2, P0 = 1, d = 0.5), "
          "95% CI; panels: the adversary",
    xlabel="k", ylabel="mean per-node disclosure",
    series=(Series(label="n", y="mean_probability", low="ci_low", high="ci_high"),))
READING_LABELS = {("r-1", "first"): "P0 d^(r-1), start first (used)",
                  ("r", "first"): "P0 d^r, start first",
                  ("r-1", "last"): "P0 d^(r-1), start last",
                  ("r", "last"): "P0 d^r, start last"}
FIG2_READINGS = Figure(
    name="fig2_readings", csv="fig2_readings.csv", x="k", panel_by="dataset",
    title="Fig. 2 under the two flagged readings (r = 1, P0 = 1, d = 0.5): PP-kNN accuracy "
          "(95% CI over splits), kNN dashed",
    xlabel="k", ylabel="accuracy",
    series=tuple(Series(label=label, y="acc_ppknn", low="acc_ppknn_lo", high="acc_ppknn_hi",
                        where={"schedule": sched, "start_step": start})
                 for (sched, start), label in READING_LABELS.items())
    + (Series(label="kNN (scikit-learn)", y="acc_knn",
              where={"schedule": "r-1", "start_step": "first"}, dashed=True),))
VOTE_LABELS = {"paper": "paper's rule (distance <= Delta)",
               "exact-k": "exact-k (distance in the final vector)",
               "k-weighted": "k-weighted (in the vector: 1; rest share k - matched)"}
VOTE_FIG = Figure(
    name="vote_rules", csv="vote_rules.csv", x="k", panel_by="dataset",
    title="Vote rules (r = 2, P0 = 1, d = 0.5): PP-kNN accuracy (95% CI over splits), "
          "kNN dashed",
    xlabel="k", ylabel="accuracy",
    series=tuple(Series(label=label, y="acc_ppknn", low="acc_ppknn_lo", high="acc_ppknn_hi",
                        where={"vote": rule}) for rule, label in VOTE_LABELS.items())
    + (Series(label="kNN (scikit-learn)", y="acc_knn", where={"vote": "paper"}, dashed=True),))
BOUND = Figure(
    name="correctness_bound", x="rounds", group_by="k",
    title="P(final vector = true top-k) by k (P0 = 1, d = 0.5); paper's bound dashed",
    xlabel="rounds r", ylabel="P(final vector = true top-k) (95% CI)",
    series=(Series(label="measured, k", y="measured", low="ci_low", high="ci_high"),
            Series(label="bound, k", y="bound", dashed=True)))
COLLUSION = Figure(
    name="collusion", kind="bar", x="label", panel_by="placement", ylim=(0.0, 1.0),
    title="Collusion: PP-TopK disclosure and sums' vote-vector recovery (95% CI), and the "
          "PP-TopK claims' precision, by coalition; panels: where the coalition sits",
    xlabel="protocol, adversary, coalition size c",
    ylabel="disclosure / recovery rate / precision",
    series=(Series(label="disclosure / recovery", y="disclosure", low="ci_low",
                   high="ci_high"),
            Series(label="precision (PP-TopK)", y="precision")))
MESSAGES = Figure(
    name="communication_messages", csv="communication.csv", x="n", group_by="protocol",
    title="Messages per batch over n (r = 2); the formula dashed",
    xlabel="n (r = 2)", ylabel="messages per batch",
    series=(Series(label="measured", y="messages", where={"rounds": 2}),
            Series(label="formula", y="expected_messages", where={"rounds": 2}, dashed=True)))
BYTES = Figure(
    name="communication_bytes", csv="communication.csv", x="n", group_by="protocol",
    title="Bytes per query over n (r = 2)", xlabel="n (r = 2)", ylabel="bytes per query",
    series=(Series(y="bytes_per_query", where={"rounds": 2}),))


def _collusion_plot_table(coll: Table) -> Table:
    """The collusion rows with a bar label (protocol, adversary, c)."""
    rows = [{"label": (r["protocol"] if "sum" in r["protocol"]
                       else f"{r['protocol']} {r['adversary']}") + f" c={r['c']}",
             **{c: r[c] for c in ("placement", "disclosure", "ci_low", "ci_high", "precision")}}
            for r in coll.rows]
    return Table.from_rows("collusion", rows)


def figures_and_tables(tables: dict[str, Table]) -> list[tuple[Figure, Table]]:
    """Every figure of the report with the table it is drawn from."""
    acc, comm = tables["accuracy"], tables["communication"]
    grid = [(f, tables[key]) for f, key in ((FIG2_READINGS, "readings"), (VOTE_FIG, "votes"))
            if key in tables]
    fig2 = FIG2 if "acc_ppknn_lo" in acc.columns else FIG2_NO_CI
    return grid + [(fig2, acc), (FIG3, acc), (FIG4, acc), (FIG5, tables["large_k"]),
            (FIG6, tables["disclosure"]), (BOUND, tables["bound"]),
            (COLLUSION, _collusion_plot_table(tables["collusion"])), (MESSAGES, comm),
            (BYTES, comm)]


# ------------------------------------------------------------------- helpers
def _ci(m: Any, lo: Any, hi: Any, *, percent: bool = False, signed: bool = False) -> str:
    """A value and its 95% interval as one table cell."""
    return (f"{number(m, percent=percent, signed=signed)} "
            f"{interval(lo, hi, percent=percent)}")


def _value(v: float) -> str:
    return f"{v:g}"


# ------------------------------------------------------------------ sections
def _exactness(acc: Table) -> Section:
    rows = []
    for name, ks in REFERENCE_POINTS.items():
        for k in ks:
            for r in acc.where(dataset=name, figure="fig2", k=k)[:1]:
                ref = cv_reference(name, k)
                with_ci = "acc_knn_lo" in acc.columns
                rows.append({
                    "dataset": name, "k": k,
                    f"{REFERENCE_FOLDS}-fold CV, whole dataset [95% CI]":
                        "n/a (dataset not available)" if ref is None else _ci(*ref),
                    "this run's scikit-learn [95% CI]" if with_ci else "this run's scikit-learn":
                        _ci(r["acc_knn"], r["acc_knn_lo"], r["acc_knn_hi"]) if with_ci
                        else number(r["acc_knn"]),
                    "PP-kNN at P0=0 vs scikit-learn: differing non-tied queries":
                        r["exact_knn_mismatch_non_tied"],
                    "queries tied at the k-th distance (excluded)": r["tied"]})
    mismatches = sum(r["exact_knn_mismatch_non_tied"] for r in acc.rows
                     if r["exact_knn_mismatch_non_tied"] >= 0)
    claim = Claim(
        id="exact-knn", where="Protocol, P0 = 0",
        statement="with P0 = 0 the protocol is exactly distributed kNN",
        quantity="non-tied test queries on which PP-kNN at P0 = 0 and scikit-learn disagree, "
                 "every dataset and Fig. 2 k",
        comparison="at_most", paper=0, measured=mismatches,
        explanation="queries tied at the k-th distance are excluded (either neighbour is right)")
    text = (f"A check of the run's non-private baseline: the accuracy of scikit-learn's "
            f"brute-force kNN estimated independently of this run's splits, by stratified "
            f"{REFERENCE_FOLDS}-fold cross-validation over the whole dataset (folds shuffled "
            f"with seed {REFERENCE_SEED}, every row a test row once; computed when this report "
            "is rendered, from the dataset as the run loads it), beside the baseline's mean "
            "over this run's splits (2/3 training rows, where the folds train on 9/10). Neither "
            "is the paper's: it prints no kNN accuracy (Fig. 2 plots it).",)
    return Section(heading="Non-private accuracy and the exact distributed kNN",
                   text=text if rows else (),
                   tables=(Table.from_rows("reference", rows),) if rows else (), claims=(claim,))


def _fig2(acc: Table) -> Section:
    points = acc.where(figure="fig2")
    with_ci = "acc_ppknn_lo" in acc.columns
    rows = [{"dataset": r["dataset"], "k": r["k"],
             "PP-kNN [95% CI]" if with_ci else "PP-kNN":
                 _ci(r["acc_ppknn"], r["acc_ppknn_lo"], r["acc_ppknn_hi"]) if with_ci
                 else r["acc_ppknn"],
             "kNN [95% CI]" if with_ci else "kNN":
                 _ci(r["acc_knn"], r["acc_knn_lo"], r["acc_knn_hi"]) if with_ci
                 else r["acc_knn"],
             "PP - kNN [95% CI]": _ci(r["diff"], r["diff_lo"], r["diff_hi"], percent=True,
                                      signed=True)} for r in points]
    claims: tuple[Claim, ...] = ()
    if points:
        worst = max(points, key=lambda r: r["abs_diff"])
        close = sum(r["abs_diff"] <= CLOSE for r in points)
        claims = (Claim(
            id="fig2-close", where="Fig. 2",
            statement="PP-kNN's accuracy is very close to kNN's even with one round, "
                      "sometimes higher",
            quantity="largest mean |PP - kNN| accuracy over datasets and k",
            comparison="at_most", paper=CLOSE, measured=worst["abs_diff"],
            interval=(worst["abs_diff_lo"], worst["abs_diff_hi"]), percent=True,
            explanation=f"at {worst['dataset']}, k = {worst['k']}; {close} of {len(points)} "
                        f"points are within {pct(CLOSE)} ('very close' read as that). With "
                        "P0 = 1 every node randomises in round 1, so after one round the "
                        "broadcast vector holds random fills, its k-th value over-estimates the "
                        "true k-th distance, and more points vote: the effect grows with k "
                        "(see Fig. 5)"),)
    return Section(heading="Fig. 2 - PP-kNN (r = 1, P0 = 1, d = 0.5) vs kNN over k",
                   figures=(FIG2 if with_ci else FIG2_NO_CI,),
                   tables=(Table.from_rows("fig2", rows),), claims=claims)


def _fig34(acc: Table, fig: Figure, key: str, heading: str, statement: str) -> Section:
    figname = fig.name[:4]
    rows = [{"dataset": r["dataset"], key: r[key],
             "mean abs(PP - kNN) [95% CI]": _ci(r["abs_diff"], r["abs_diff_lo"],
                                                r["abs_diff_hi"], percent=True)}
            for r in acc.where(figure=figname)]
    claims = []
    for name in dict.fromkeys(r["dataset"] for r in acc.rows):
        rr = acc.where(dataset=name, figure=figname)
        if len(rr) < 2:
            continue
        # most randomised end first: r = 1 (Fig. 3), the largest d (Fig. 4)
        first, last = (rr[0], rr[-1]) if key == "rounds" else (rr[-1], rr[0])
        at = "r" if key == "rounds" else "d"
        claims.append(Claim(
            id=f"{figname}-{name}", where=f"Fig. {figname[-1]}", statement=statement,
            quantity=f"{name}: mean |PP - kNN| at {at} = {_value(last[key])}; the paper column "
                     f"is its value at {at} = {_value(first[key])}",
            comparison="at_most", paper=first["abs_diff"], measured=last["abs_diff"],
            interval=(last["abs_diff_lo"], last["abs_diff_hi"]), percent=True))
    return Section(heading=heading, figures=(fig,), tables=(Table.from_rows(figname, rows),),
                   claims=tuple(claims))


def _fig5(large: Table) -> Section:
    order = ["glass", "pima", "abalone"]
    by_k = sorted(large.rows, key=lambda r: (order.index(r["dataset"]) if r["dataset"] in order
                                             else len(order), r["k"]))
    rows = [{"dataset": r["dataset"], "k": f"{r['k']} ({r['k_label']})", "splits": r["splits"],
             "PP-kNN [95% CI]": _ci(r["acc_ppknn"], r["acc_ppknn_lo"], r["acc_ppknn_hi"]),
             "kNN": r["acc_knn"]} for r in by_k]
    alls = [r for r in large.rows if r["k_label"] == "all"]
    same = all(abs(r["acc_ppknn"] - r["acc_knn"]) < 1e-9 for r in alls) if alls else None
    claim = Claim(
        id="fig5-all", where="Fig. 5",
        statement="at k = the whole union both classifiers agree (every point votes)",
        quantity="PP-kNN accuracy equals kNN's at k = all, every dataset",
        comparison="holds", measured=same,
        explanation="the paper also says accuracy drops for very large k and that a k with "
                    "good accuracy and privacy exists: see the table")
    return Section(heading="Fig. 5 - accuracy vs k, up to the whole union", figures=(FIG5,),
                   tables=(Table.from_rows("fig5", rows),), claims=(claim,))


def _fig6(disc: Table, s: Any) -> Section:
    rows = [{"n": r["n"], "k": r["k"], "adversary": r["adversary"],
             "disclosure [95% CI]": _ci(r["mean_probability"], r["ci_low"], r["ci_high"]),
             "precision": r["precision"], "exact": r["exact_attribution"]} for r in disc.rows]
    paper_rows = disc.where(adversary="paper")
    text = [
        f"Dataset {s.leak_dataset}, {s.leak_splits} splits per point. Definition: the successor "
        "of node p compares each vector it receives from p with the last vector it sent itself "
        "(round 1: the public initial vector) and claims every new value as p's; p is disclosed "
        "for a query if at least one claimed value really is p's (transcript provenance). The "
        "*informed* adversary also uses the public final vector: it keeps only new values that "
        "survive into it (random fills rarely do). *Precision* = claimed values that really are "
        "p's; *exact* = claims where every claimed value is p's."]
    inf = disc.where(adversary="informed")
    if inf and paper_rows:
        gp = np.mean([r["precision"] for r in paper_rows])
        gi = np.mean([r["precision"] for r in inf])
        ge = np.mean([r["exact_attribution"] for r in inf]) - np.mean(
            [r["exact_attribution"] for r in paper_rows])
        text.append(
            f"Gap between the adversaries: mean precision {fmt(gp)} (paper) vs {fmt(gi)} "
            f"(informed); exact attributions {pct(ge, signed=True).replace('%', ' points')}. "
            "The paper's measure counts a node as disclosed when any claimed value is right, "
            "which claiming every new value maximises; the informed adversary claims less but "
            "is right far more often, which is what a real attacker needs.")
    claims: list[Claim] = []
    if paper_rows:
        below = sum(r["ci_high"] < 0.5 for r in paper_rows)
        above = sum(r["ci_low"] > 0.5 for r in paper_rows)
        claims.append(Claim(
            id="fig6-below", where="Fig. 6",
            statement="per-node disclosure stays below 0.5 over a large range of k",
            quantity="share of (n, k) points with the upper 95% bound below 0.5 "
                     "(paper's adversary)",
            comparison="holds", measured=below / len(paper_rows),
            explanation=f"{below} of {len(paper_rows)} points significantly below 0.5, "
                        f"{len(paper_rows) - below - above} with 0.5 inside the interval, "
                        f"{above} significantly above"))
        ks = sorted({r["k"] for r in paper_rows})
        rising = all(
            disc.where(adversary="paper", n=n, k=ks[-1])[0]["mean_probability"]
            >= disc.where(adversary="paper", n=n, k=ks[0])[0]["mean_probability"]
            for n in sorted({r["n"] for r in paper_rows}))
        claims.append(Claim(
            id="fig6-rising", where="Fig. 6", statement="disclosure rises for very large k",
            quantity=f"disclosure at k = {ks[-1]} at least that at k = {ks[0]}, for every n "
                     "(paper's adversary)",
            comparison="holds", measured=rising))
    return Section(heading="Fig. 6 - per-node disclosure vs n and k (r = 2, P0 = 1, d = 0.5)",
                   text=tuple(text), figures=(FIG6,), tables=(Table.from_rows("fig6", rows),),
                   claims=tuple(claims))


def _bound(bound: Table, s: Any) -> Section:
    rows = [{"r": r["rounds"], "k": r["k"],
             "measured [95% CI]": _ci(r["measured"], r["ci_low"], r["ci_high"]),
             "bound": r["bound"], "bound holds": r["holds"]} for r in bound.rows]
    held = sum(bool(r["holds"]) for r in bound.rows)
    claim = Claim(
        id="bound", where="Correctness analysis", statement="P(final vector = true top-k) >= "
                                          "(1 - P0^r d^(r(r-1)/2))^k",
        quantity=f"share of (r, k) points on {s.leak_dataset} whose upper 95% limit is at or "
                 "above the bound",
        comparison="holds", measured=held / len(bound.rows) if bound.rows else None,
        explanation=f"{held} of {len(bound.rows)} points; the bound is loose, because a node "
                    "with nothing to insert never randomises")
    return Section(
        heading="Correctness bound: P(final vector = true top-k) >= (1 - P0^r d^(r(r-1)/2))^k",
        figures=(BOUND,), tables=(Table.from_rows("bound", rows),), claims=(claim,))


def _collusion(coll: Table, s: Any) -> Section:
    text = [
        "For each target node, a coalition of c other nodes pools its views: *neighbours* = "
        "successor (c=1), plus predecessor (c=2), plus the successor's successor (c=3); "
        "*random* = c random other nodes. PP-TopK: the coalition compares the vector leaving "
        "the target's stretch of the ring with the one that entered it. Secure sums: the "
        "coalition estimates the target's vote vector (ring: what the first member after "
        "received minus what the last member before sent; shared: the sum of the target's "
        "shares it holds); recovery = the estimate equals the vector exactly."]
    ring2 = coll.where(protocol="ring-sum", placement="neighbours", c=2)
    shared = [r["disclosure"] for r in coll.rows if r["protocol"] == "shared-sum"]
    if ring2 and shared:
        text.append(
            f"Two ring neighbours recover a node's vote vector in the ring sum for "
            f"{pct(ring2[0]['disclosure'])} of (node, query) pairs (all nodes but the start "
            f"node, whose vector is added last); in the secret-shared sum no coalition here "
            f"recovers any (max {fmt(max(shared))}).")
    rows = [{"protocol": r["protocol"], "placement": r["placement"], "c": r["c"],
             "adversary": r["adversary"],
             "disclosure / recovery [95% CI]": _ci(r["disclosure"], r["ci_low"], r["ci_high"]),
             "precision": r["precision"]} for r in coll.rows]
    return Section(heading=f"Beyond the paper: collusion (n = {s.coalition_n}, k = 5, r = 2)",
                   text=tuple(text), figures=(COLLUSION,),
                   tables=(Table.from_rows("collusion", rows),))


def _communication(comm: Table) -> Section:
    rows = [{"n": r["n"], "r": r["rounds"], "protocol": r["protocol"],
             "messages": r["messages"], "formula": r["expected_messages"],
             "bytes per query": r["bytes_per_query"]} for r in comm.rows]
    agree = sum(r["messages"] == r["expected_messages"] for r in comm.rows)
    claim = Claim(
        id="messages", where="Cost analysis",
        statement="PP-TopK sends Theta(n) messages per round; the ring secure sum about 2n",
        quantity="share of (n, r, protocol) points whose measured message count equals the "
                 "formula",
        comparison="holds", measured=agree / len(comm.rows) if comm.rows else None,
        explanation=f"{agree} of {len(comm.rows)} points")
    return Section(heading="Communication", text=(
        "Formulas: PP-TopK n*r ring messages plus n-1 for the final broadcast (Theta(n) per "
        "round); ring sum 2n-1 (the paper's 2n); secret-shared sum n(n-1) + 2(n-1). Every "
        "message carries the whole query batch, so messages do not grow with the number of "
        "queries; bytes per query grow linearly in n (and in k for PP-TopK).",),
        figures=(MESSAGES, BYTES), tables=(Table.from_rows("communication", rows),),
        claims=(claim,))


def _abs_interval(r: dict) -> tuple[float, float, float]:
    """|diff| and the interval of |diff| from the signed difference's interval."""
    lo, hi = r["diff_lo"], r["diff_hi"]
    if lo >= 0:
        return abs(r["diff"]), lo, hi
    if hi <= 0:
        return abs(r["diff"]), -hi, -lo
    return abs(r["diff"]), 0.0, max(-lo, hi)


def _paired(r: dict, col: str, *, percent: bool = False) -> str:
    """A paired difference to the reference point and its interval (or a dash)."""
    if r.get(col) is None or (isinstance(r[col], float) and np.isnan(r[col])):
        return "-"
    return _ci(r[col], r[f"{col}_lo"], r[f"{col}_hi"], percent=percent, signed=True)


def _cross_check(t: Table, acc: Table | None) -> tuple[str, ...]:
    """The readings grid's used reading against Fig. 2 (the same scenarios, more splits)."""
    if acc is None:
        return ()
    inside = total = 0
    for r in t.where(schedule="r-1", start_step="first"):
        b = acc.where(figure="fig2", dataset=r["dataset"], k=r["k"])
        if not b:
            continue
        total += 1
        inside += bool(r["acc_ppknn_lo"] <= b[0]["acc_ppknn"] <= r["acc_ppknn_hi"])
    if not total:
        return ()
    return (f"Consistency: the runs under the implementation's reading are the same "
            f"scenarios as Fig. 2's first {t.rows[0]['splits']} splits (same seeds); Fig. 2's "
            f"mean accuracy over all its splits lies inside this grid's 95% interval at "
            f"{inside} of {total} (dataset, k) points.",)


def _readings(t: Table, s: Any, acc: Table | None = None) -> Section:
    rows = [{"dataset": r["dataset"], "k": r["k"],
             "reading": READING_LABELS[(r["schedule"], r["start_step"])],
             "splits": r["splits"],
             "PP-kNN [95% CI]": _ci(r["acc_ppknn"], r["acc_ppknn_lo"], r["acc_ppknn_hi"]),
             "kNN": r["acc_knn"],
             "PP - kNN [95% CI]": _ci(r["diff"], r["diff_lo"], r["diff_hi"], percent=True,
                                      signed=True),
             "vs used reading, paired [95% CI]": _paired(r, "vs_ref", percent=True),
             "disclosure [95% CI]": _ci(r["disclosure"], r["disclosure_lo"],
                                        r["disclosure_hi"])} for r in t.rows]
    claims = []
    for (sched, start), label in READING_LABELS.items():
        pts = t.where(schedule=sched, start_step=start)
        if not pts:
            continue
        worst = max(pts, key=lambda r: abs(r["diff"]))
        m, lo, hi = _abs_interval(worst)
        close = sum(abs(r["diff"]) <= CLOSE for r in pts)
        claims.append(Claim(
            id=f"fig2-reading-{sched}-{start}", where="Fig. 2",
            statement="PP-kNN's accuracy is very close to kNN's even with one round "
                      f"[reading: {label}]",
            quantity="largest mean |PP - kNN| accuracy over datasets and k",
            comparison="at_most", paper=CLOSE, measured=m, interval=(lo, hi), percent=True,
            explanation=f"at {worst['dataset']}, k = {worst['k']}; {close} of {len(pts)} "
                        f"points within {pct(CLOSE)}"))
    text: tuple[str, ...] = (
        "Two readings of the paper are not certain, and the implementation picks one of each "
        "(flagged in `protocols/ppknn_ring/pp_topk.py`). (1) The randomisation probability is "
        "garbled in the text: the prose before Algorithm 2 reads P0 * d^r with the exponent "
        "lost, Algorithm 2's first line P0 * d^(r-1) half-legible. The implementation uses "
        "P_r = P0 d^(r-1), the only reading consistent with the correctness bound of §5.1 "
        "(the product of P_1..P_r); under P0 d^r the first round already randomises with "
        "probability P0 d, so Fig. 2's one-round runs are far less random. (2) The paper does "
        "not say whether the start node runs Algorithm 2 on the initial vector in round 1 "
        "(implemented: it is the first node of every round) or forwards the initial vector "
        "and runs Algorithm 2 when it comes back (the last node of every round). The grid "
        f"below runs Fig. 2 (r = 1, P0 = 1, d = 0.5) under all four combinations, "
        f"random splits per point: {s.reading_splits} (the same splits for every reading: "
        "`split_seed` = the seed), each split one `ppknn-ring` scenario run through the "
        "registry; intervals are 95% t intervals over the splits. Disclosure is the paper's "
        "successor attack (per-node mean) on the same runs.",)
    summary, close_by = [], {}
    for (sched, start), label in READING_LABELS.items():
        pts = t.where(schedule=sched, start_step=start)
        if pts:
            close_by[(sched, start)] = sum(abs(r["diff"]) <= CLOSE for r in pts)
            mean_dis = fmt(np.mean([r["disclosure"] for r in pts]))
            summary.append(f"{label}: {close_by[(sched, start)]} of {len(pts)} points within "
                           f"{pct(CLOSE)} of kNN, mean per-node disclosure {mean_dis}")
    if summary:
        fits = close_by.get(("r", "first"), 0) > close_by.get(("r-1", "first"), 0)
        text = text + ("Per reading: " + "; ".join(summary) + ". Under P0 d^(r-1) with r = 1 "
                       "every node that would insert randomises (P_1 = 1), so no real value is "
                       "ever inserted and the successor attack finds nothing, while accuracy "
                       "falls with k; under P0 d^r half of them insert. "
                       + ("The paper's 'very close even with one round' fits the P0 d^r "
                          "reading better." if fits else
                          "The P0 d^r reading does not fit the paper's Fig. 2 better.")
                       + " Starting last hides the start node's values from its successor in "
                         "round 1.",)
    return Section(heading="Fig. 2 under the alternative readings (scenario grid)",
                   text=text + _cross_check(t, acc), figures=(FIG2_READINGS,),
                   tables=(Table.from_rows("fig2_readings_table", rows),),
                   claims=tuple(claims))


def vote_decision(t: Table) -> dict[str, dict[str, int]]:
    """Per rule, how it compares with the paper's rule, point by point.

    On the same splits (paired): accuracy significantly better / worse when the 95%
    interval of the paired difference lies above / below 0; disclosure likewise.
    """
    out: dict[str, dict[str, int]] = {}
    for rule in VOTE_LABELS:
        if rule == "paper":
            continue
        c = {"acc_better": 0, "acc_worse": 0, "acc_same": 0, "dis_higher": 0, "dis_lower": 0,
             "dis_same": 0, "points": 0}
        for r in t.where(vote=rule):
            if r.get("vs_ref") is None:
                continue
            c["points"] += 1
            c["acc_better" if r["vs_ref_lo"] > 0 else
              "acc_worse" if r["vs_ref_hi"] < 0 else "acc_same"] += 1
            c["dis_higher" if r["dis_vs_ref_lo"] > 0 else
              "dis_lower" if r["dis_vs_ref_hi"] < 0 else "dis_same"] += 1
        out[rule] = c
    return out


def _votes(t: Table, s: Any) -> Section:
    rows = [{"dataset": r["dataset"], "k": r["k"], "r": r["rounds"], "rule": r["vote"],
             "splits": r["splits"],
             "PP-kNN [95% CI]": _ci(r["acc_ppknn"], r["acc_ppknn_lo"], r["acc_ppknn_hi"]),
             "kNN": r["acc_knn"],
             "PP - kNN [95% CI]": _ci(r["diff"], r["diff_lo"], r["diff_hi"], percent=True,
                                      signed=True),
             "vs paper's rule, paired [95% CI]": _paired(r, "vs_ref", percent=True),
             "voters [95% CI]": _ci(r["voters"], r["voters_lo"], r["voters_hi"]),
             "queries > k voters": r["queries_over_k_voters"],
             "disclosure [95% CI]": _ci(r["disclosure"], r["disclosure_lo"],
                                        r["disclosure_hi"])} for r in t.rows]
    decision = vote_decision(t)
    wins = [rule for rule, c in decision.items()
            if c["points"] and c["acc_worse"] == 0 and c["acc_better"] > 0
            and c["dis_higher"] == 0 and c["dis_lower"] > 0]
    lines = [
        "Beyond the paper. With P0 = 1 the broadcast vector can still hold random fills after "
        "the last round, so its k-th value Delta over-estimates the true k-th distance and "
        "the paper's rule (every point with distance <= Delta votes) admits more than k "
        "voters. Two rules offered as `[protocol] vote` (`protocols/ppknn_ring/votes.py`): "
        "*exact-k*: a point votes only if its distance occurs in the final vector (a node "
        "admits at most as many of its points at a value as the value occurs; its own ties "
        "in row order), so at most k vote, and random fills get no voter; *k-weighted*: those "
        "vote with weight 1 and the other points within Delta share the remaining k - matched "
        "votes (one secure sum of two class vectors and two counts; it reveals these "
        "aggregates beyond the paper's total). The vote happens after PP-TopK, so the "
        "PP-TopK messages - and the paper's disclosure measure on them - are identical under "
        "every rule for the same seed; the disclosure column measures it on each run. "
        f"Random splits per point: {s.vote_splits}, the same for every rule; 95% t intervals "
        "over the splits.",
    ]
    for rule, c in decision.items():
        lines.append(
            f"*{rule}* vs the paper's rule over {c['points']} (dataset, k, r) points: accuracy "
            f"significantly higher at {c['acc_better']}, lower at {c['acc_worse']}, not "
            f"distinguishable at {c['acc_same']}; disclosure higher at {c['dis_higher']}, "
            f"lower at {c['dis_lower']}, equal within the intervals at {c['dis_same']}.")
    gaps = {rule: float(np.mean([abs(r["diff"]) for r in t.where(vote=rule)]))
            for rule in VOTE_LABELS if t.where(vote=rule)}
    if gaps:
        lines.append("Mean |PP-kNN - kNN| over the points: " + ", ".join(
            f"{rule} {pct(g)}" for rule, g in gaps.items())
            + ". Closeness to kNN is not accuracy: where the paper's rule beats kNN (extra "
              "voters smooth the vote), a rule that is closer to kNN scores lower.")
    lines.append(
        "Default: `vote = \"paper\"` stays the default, because "
        + ("no rule wins on both accuracy and disclosure (the disclosure of PP-TopK does not "
           "depend on the vote rule, so no rule can lower it)." if not wins else
           f"although {', '.join(wins)} wins on both here, the default has not been switched "
           "in this version (it would change the quickstart's results)."))
    return Section(heading="Beyond the paper: vote rules that admit k voters (scenario grid)",
                   text=tuple(lines), figures=(VOTE_FIG,),
                   tables=(Table.from_rows("vote_rules_table", rows),))


def _run_time(timings: dict[str, float]) -> Section:
    rows = [{"experiment": k, "seconds": v} for k, v in timings.items()]
    if not rows:
        return Section(heading="Run time", text=("Not timed: this report was re-rendered from "
                                                 "CSV tables.",))
    return Section(heading="Run time", tables=(Table.from_rows("run_time", rows),))


def build_report(tables: dict[str, Table], settings: Any, *, quick: bool,
                 timings: dict[str, float], runtime: str, seed: int,
                 reused: tuple[str, tuple[str, ...]] | None = None,
                 notes: tuple[str, ...] = ()) -> Report:
    """The report of one run, from its tables (see the module docstring).

    ``settings`` is the run's :class:`ppknn_reproductions.xiong.Settings`;
    ``reused``: (folder, table names) read from an earlier run's CSVs, not re-run;
    ``notes``: paragraphs added to the introduction (how the run was made).
    """
    s = settings
    acc = tables["accuracy"]
    provenance = (
        "Where the numbers come from. Scenario grids (every point one `ppknn-ring` scenario "
        "run through the protocol registry, exactly as `ppknn run` runs it; per-run rows in "
        "`grids/` of the output folder, one run per split): grid - Figs. 2-4 and the exact-kNN "
        "check (grids `accuracy-<dataset>`), Fig. 5 (`large_k-<dataset>-<k>`), Fig. 6 "
        "(`disclosure`: each run's transcript attacked by both successor adversaries inside "
        "the plugin, counts pooled over the splits), the correctness bound (`bound`), "
        "communication (`communication`: the run's messages and bytes per protocol), Fig. 2 "
        "under the alternative readings (`readings-<dataset>`) and the vote rules "
        "(`votes-<dataset>`). Study - collusion: many coalitions (every target, c = 1-3, "
        "two placements, two adversaries) attack each recorded run of the grid `collusion` "
        "(registry runs, transcripts kept in memory; the secure-sum recovery is scored "
        "against each owner's private vote vector, recomputed by the owner's own code from "
        "its rows and the run's final vector); hits are pooled over the runs.")
    if reused is not None:
        folder, names = reused
        provenance += (
            f" NOT RE-RUN in this run: {', '.join(f'`{n}.csv`' for n in names)} were read "
            f"from the CSVs in `{folder}`: they are the numbers of the run that wrote that "
            "folder, made with its code and settings (see its report), not this run's. Only "
            "the scenario grids were run now.")
    return Report(
        title=f"Reproduction: {PAPER}",
        run=Run(command="ppknn reproduce xiong" + (" --quick" if quick else "")
                + (" --runtime ray" if runtime == "ray" else "")
                + (f" --set reuse={reused[0]}" if reused is not None else ""),
                runtime=runtime, quick=quick, seed=seed, seconds=timings.get("total")),
        intro=(
            f"Setting: {s.splits} random splits (2/3 training, 1/3 test) per point, training "
            f"rows partitioned IID over n = {s.n} owners (the paper does not state n for Figs. "
            "2-5), Euclidean distance on raw features (abalone's sex one-hot), unweighted votes, "
            "delta = 0.001, P_r = P0 * d^(r-1) as Algorithm 2 is read (a flagged reading: the "
            "formula is garbled; see the alternative readings), the start node running "
            "Algorithm 2 first in round 1 (also flagged), the paper's vote rule. Each split of "
            "a point is one `ppknn-ring` scenario run (`[run].seed` draws the split, the "
            "partition, the ring and the randomness). Non-private accuracy: scikit-learn's "
            "brute-force `KNeighborsClassifier` fitted on each split (the run's baseline). "
            f"Each figure's CSV is beside its PNG in `{FIGURE_DIR}/`.", provenance, *notes),
        settings=asdict(s),
        sections=(
            _exactness(acc),
            _fig2(acc),
            *((_readings(tables["readings"], s, acc),) if "readings" in tables else ()),
            _fig34(acc, FIG3, "rounds", "Fig. 3 - |accuracy difference| vs rounds",
                   "the accuracy difference shrinks to zero as r grows"),
            _fig34(acc, FIG4, "d", "Fig. 4 - |accuracy difference| vs randomisation factor d",
                   "the accuracy difference shrinks as d decreases"),
            _fig5(tables["large_k"]),
            _fig6(tables["disclosure"], s),
            _bound(tables["bound"], s),
            _collusion(tables["collusion"], s),
            _communication(tables["communication"]),
            *((_votes(tables["votes"], s),) if "votes" in tables else ()),
            _run_time(timings),
        ),
        deviations=(
            f"n for Figs. 2-5 is not given in the paper; {s.n} owners are used.",
            "The paper's Fig. 6 dataset is not stated; the disclosure sweep uses "
            f"{s.leak_dataset} with {s.leak_splits} splits per point.",
            "The ring order and start node (not specified for the experiments) are drawn per "
            "split from its seed; Fig. 6's per-node disclosure pools the splits by ring position "
            "from the start node.",
            "Fig. 5 uses fewer splits at very large k (the splits column), to bound the run's "
            "time and memory: k x test queries x splits is capped at "
            f"{s.large_k_budget:,} values per point.",
            "Distances are exact Euclidean on raw features; no normalisation (the paper does "
            "not say).",
            "Reading (flagged): P_r = P0 d^(r-1) where the paper's formula is garbled (P0 d^r "
            "in the prose); Fig. 2 is also reported under P0 d^r.",
            "Reading (flagged): the start node runs Algorithm 2 on the initial vector in round "
            "1 (the paper does not say); Fig. 2 is also reported with the start node "
            "forwarding the initial vector and closing every round.",
            "The initial value of the global vector (the paper: 'some number larger than the "
            "maximum distance between any query and any data point') is computed from bounds "
            "taken from the training rows and the public queries, never from test rows.",
        ),
        figure_dir=FIGURE_DIR)


def write_report(tables: dict[str, Table], settings: Any, *, output: Path, report: Path,
                 quick: bool, timings: dict[str, float], runtime: str, seed: int,
                 reused: tuple[str, tuple[str, ...]] | None = None,
                 notes: tuple[str, ...] = ()) -> Path:
    """Plots into ``output``, copies them and the CSVs beside ``report``, writes the Markdown."""
    output, report = Path(output), Path(report)
    figdir = report.parent / FIGURE_DIR
    figdir.mkdir(parents=True, exist_ok=True)
    run = f"ppknn reproduce xiong{' --quick' if quick else ''}, {runtime} runtime"
    for figure, table in figures_and_tables(tables):
        png = plot(figure, table, folder=output, run=run)
        shutil.copy(png, figdir / figure.png)
    for table in tables.values():
        table.write_csv(figdir / f"{table.name}.csv")
    return write(build_report(tables, settings, quick=quick, timings=timings, runtime=runtime,
                              seed=seed, reused=reused, notes=notes), report)


__all__ = ["build_report", "figures_and_tables", "write_report"]
