"""Reproduction of Xiong, Chitti & Liu, section 6, and leakage beyond it.

``ppknn reproduce xiong [--quick] [--runtime ray]`` re-runs the paper's experiments
on the ring data owners and writes one CSV and one PNG per figure plus the
report (see :mod:`ppknn_reproductions.xiong_report`).

Setting (paper §6.1): random splits, 2/3 training and 1/3 test, the
training rows partitioned IID over ``n`` owners (the paper does not give
``n`` for Figs. 2-5; 4 is used), Euclidean distance on the raw features,
unweighted votes. Every figure is a set of scenario grids
(:func:`all_grids`): each split of each point is one ``ppknn-ring`` scenario
run through the protocol registry, exactly as ``ppknn run`` runs it, and the
figure's table is a function of the grid's rows (:func:`study_tables`,
:func:`grid_summaries`). Non-private accuracy is scikit-learn's brute-force
kNN fitted on each split (the run's baseline); the framework's own exact
distributed kNN (P0 = 0) is checked against it on the same splits. The one
study is collusion: many coalitions attack every recorded run of the grid
:func:`collusion_grid` (registry runs, transcripts kept in memory), and the
secure-sum attacks are scored against the owners' private vote vectors
(:func:`owner_votes`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.data import load_dataset
from ppknn.core.leakage import Claims, score_attribution, wilson_interval
from ppknn.core.transcript import View
from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL as TOPK
from ppknn.protocols.ppknn_ring.pp_topk_attacks import (
    coalition_attribution,
)
from ppknn.protocols.ppknn_ring.secure_sum_attacks import (
    recovery_rate,
    ring_sum_estimate,
    shared_sum_estimate,
)
from ppknn.simulations.reporting import Table
from ppknn_reproductions.experiments.ring import (
    mean_ci,
)

DESCRIPTION = "Xiong, Chitti & Liu: PP-kNN over a ring (Figs. 2-6, bound, collusion, cost)"
"""One line for ``ppknn reproduce``'s list of reproductions."""


@dataclass(frozen=True)
class Settings:
    """Sizes of the reproduction (full and quick)."""

    splits: int
    datasets: tuple[str, ...]
    n: int
    fig2_k: tuple[int, ...]
    fig3_r: tuple[int, ...]
    fig4_d: tuple[float, ...]
    fig5_k: tuple[int | str, ...]
    fig6_n: tuple[int, ...]
    fig6_k: tuple[int, ...]
    leak_splits: int
    leak_dataset: str
    bound_r: tuple[int, ...]
    bound_k: tuple[int, ...]
    coalition_n: int
    comm_n: tuple[int, ...]
    comm_r: tuple[int, ...]
    large_k_budget: int = 50_000_000  # Fig. 5: fewer splits when k x queries exceeds this
    # scenario grids (run through the registry's ppknn-ring plugin, one run per split)
    reading_k: tuple[int, ...] = (1, 3, 5, 7, 9, 11, 15, 21)
    reading_splits: int = 10
    vote_k: tuple[int, ...] = (1, 5, 11, 21)
    vote_rounds: tuple[int, ...] = (2,)
    vote_splits: int = 10
    grid_datasets: tuple[str, ...] | None = None  # None: the same as ``datasets``


FULL = Settings(splits=100, datasets=("glass", "pima", "abalone"), n=4,
                fig2_k=(1, 3, 5, 7, 9, 11, 15, 21), fig3_r=(1, 2, 3, 4, 5),
                fig4_d=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
                fig5_k=(1, 5, 10, 25, 50, 100, 250, "half", "all"),
                fig6_n=(4, 8, 16, 32), fig6_k=(1, 2, 5, 10, 20, 50, 100),
                leak_splits=20, leak_dataset="pima", bound_r=(1, 2, 3, 4, 5),
                bound_k=(1, 2, 5, 10, 20), coalition_n=8, comm_n=(4, 8, 16, 32),
                comm_r=(1, 2, 3, 4, 5))
QUICK = Settings(splits=3, datasets=("glass", "pima", "abalone"), n=4, fig2_k=(1, 5),
                 fig3_r=(1, 3), fig4_d=(0.2, 0.8), fig5_k=(1, 25, "all"), fig6_n=(4, 8),
                 fig6_k=(1, 10), leak_splits=2, leak_dataset="glass", bound_r=(2, 3),
                 bound_k=(1, 5), coalition_n=6, comm_n=(4, 8), comm_r=(1, 2),
                 reading_k=(1, 11), reading_splits=1, vote_k=(5,), vote_splits=1,
                 grid_datasets=("glass", "pima"))
SEED = 2024

READINGS = (("r-1", "first"), ("r", "first"), ("r-1", "last"), ("r", "last"))
"""(schedule, start_step) of Fig. 2 under the two flagged readings; the first is the
implementation's (P_r = P0 d^(r-1), the start node runs Algorithm 2 first in round 1)."""

VOTES = ("paper", "exact-k", "k-weighted")
"""The vote rules compared (the paper's first)."""


def grid_base(dataset: str, n: int) -> dict:
    """The scenario every grid point starts from: the paper's setting (§6.1) on ``dataset``.

    A random 2/3-1/3 split per seed (``split_seed`` = the seed, so every reading or
    rule sees the same splits), IID over ``n`` owners, raw features, public bounds from
    the training rows (the paper does not say; flagged), unweighted votes, plain
    channels. ``score`` (which attacks each run scores) is set per grid: ``"none"``
    where a figure needs accuracy only.
    """
    return {"data": {"dataset": dataset, "test_fraction": 1 / 3, "scale": "none",
                     "bounds": "data"},
            "parties": {"n": n, "partition": "iid"},
            "protocol": {"name": "ppknn-ring", "p0": 1.0, "d": 0.5, "delta": 1e-3,
                         "weighting": "uniform", "secure_sum": "ring"},
            # plain channels: the protocol's messages and bytes as the paper counts them
            # (no channel encryption); the outputs do not depend on it
            "runtime": {"channels": False}}


def grids(s: Settings) -> list:
    """The reproduction's scenario grids: Fig. 2 under the readings, and the vote rules."""
    from ppknn.simulations.grids import Grid

    seeds_r = tuple(SEED + i for i in range(s.reading_splits))
    seeds_v = tuple(SEED + i for i in range(s.vote_splits))
    out = []
    for name in s.grid_datasets or s.datasets:
        out.append(Grid(f"readings-{name}", base=grid_base(name, s.n) | {
            "protocol": grid_base(name, s.n)["protocol"] | {"rounds": 1}},
            axes={"protocol.k": list(s.reading_k),
                  ("protocol.schedule", "protocol.start_step"): [list(r) for r in READINGS]},
            seeds=seeds_r))
        out.append(Grid(f"votes-{name}", base=grid_base(name, s.n),
                        axes={"protocol.k": list(s.vote_k),
                              "protocol.rounds": list(s.vote_rounds),
                              "protocol.vote": list(VOTES)},
                        seeds=seeds_v))
    return out


def summarise_grid(rows: list[dict], keys: tuple[str, ...], name: str,
                   reference: dict[str, Any] | None = None) -> Table:
    """Mean and 95% t interval over the seeds (splits) of each point of a grid.

    Columns: the point's keys, ``splits``, PP-kNN and kNN accuracy, their paired
    difference, mean per-node disclosure and mean voters, each with its interval. With
    ``reference`` (dotted key -> value, e.g. ``{"protocol.vote": "paper"}``) also the
    paired differences to the reference point on the same splits: ``vs_ref`` (accuracy)
    and ``dis_vs_ref`` (disclosure), with intervals.
    """
    points: dict[tuple, list[dict]] = {}
    for r in rows:
        points.setdefault(tuple(r[k] for k in keys), []).append(r)
    t = Table(name=name, columns=(*[k.split(".")[-1] for k in keys], "splits",
                                  "acc_ppknn", "acc_ppknn_lo", "acc_ppknn_hi", "acc_knn",
                                  "diff", "diff_lo", "diff_hi", "disclosure", "disclosure_lo",
                                  "disclosure_hi", "voters", "voters_lo", "voters_hi",
                                  "queries_over_k_voters", "vs_ref", "vs_ref_lo", "vs_ref_hi",
                                  "dis_vs_ref", "dis_vs_ref_lo", "dis_vs_ref_hi"))
    for point, rr in points.items():
        acc = np.array([r["accuracy_ppknn"] for r in rr])
        knn = np.array([r["accuracy_knn"] for r in rr])
        a, alo, ahi = mean_ci(acc)
        dm, dlo, dhi = mean_ci(acc - knn)
        dis, dislo, dishi = mean_ci(np.array([r["disclosure_mean"] for r in rr]))
        v, vlo, vhi = mean_ci(np.array([r["voters_mean"] for r in rr]))
        paired: dict[str, float] = {}
        if reference is not None:
            ref_point = tuple(reference.get(k, value) for k, value in zip(keys, point))
            by_seed = {r["seed"]: r for r in points.get(ref_point, [])}
            mine = [r for r in rr if r["seed"] in by_seed]
            if mine:
                for col, metric in (("vs_ref", "accuracy_ppknn"),
                                    ("dis_vs_ref", "disclosure_mean")):
                    m, lo, hi = mean_ci(np.array([r[metric] - by_seed[r["seed"]][metric]
                                                  for r in mine]))
                    paired |= {col: m, f"{col}_lo": lo, f"{col}_hi": hi}
        t.add(**{k.split(".")[-1]: val for k, val in zip(keys, point)}, splits=len(rr),
              acc_ppknn=a, acc_ppknn_lo=alo, acc_ppknn_hi=ahi, acc_knn=float(knn.mean()),
              diff=dm, diff_lo=dlo, diff_hi=dhi, disclosure=dis, disclosure_lo=dislo,
              disclosure_hi=dishi, voters=v, voters_lo=vlo, voters_hi=vhi,
              queries_over_k_voters=int(sum(r["queries_over_k_voters"] for r in rr)),
              **paired)
    return t


def grid_summaries(rows: dict[str, list[dict]]) -> dict[str, Table]:
    """The readings' and the vote rules' tables from the grids' rows (``{grid: rows}``)."""
    readings = [r for name, rr in rows.items() if name.startswith("readings-") for r in rr]
    votes = [r for name, rr in rows.items() if name.startswith("votes-") for r in rr]
    return {
        "readings": summarise_grid(readings, ("dataset", "protocol.k", "protocol.schedule",
                                              "protocol.start_step"), "fig2_readings",
                                   reference={"protocol.schedule": "r-1",
                                              "protocol.start_step": "first"}),
        "votes": summarise_grid(votes, ("dataset", "protocol.k", "protocol.rounds",
                                        "protocol.vote"), "vote_rules",
                                reference={"protocol.vote": "paper"}),
    }


def grid_summaries_from(folder: Path, settings: Settings | None = None) -> dict[str, Table]:
    """:func:`grid_summaries` from the ``grid-*.csv`` files an earlier run wrote.

    Grids in the order :func:`grids` declares them for ``settings`` (default: FULL).
    """
    from ppknn.simulations.reporting.csvio import read_rows

    s = settings or FULL
    order = [g.name for g in all_grids(s)]
    paths = {p.stem.removeprefix("grid-"): p for p in Path(folder).glob("grid-*.csv")}
    names = sorted(paths, key=lambda n: (order.index(n) if n in order else len(order), n))
    rows = {n: read_rows(paths[n]) for n in names}
    return grid_summaries(rows) | study_tables(rows, s)


def union_size(dataset: str, test_fraction: float = 1 / 3) -> int:
    """Training rows of one random split of ``dataset`` (the union of the owners' data)."""
    n = len(load_dataset(dataset).y)
    return n - max(1, int(round(n * test_fraction)))


def accuracy_points(s: Settings) -> dict[tuple[int, int, float, float], list[str]]:
    """Figs. 2-4 and the exact-kNN check: ``(k, rounds, d, p0)`` -> the figures it serves.

    A point two figures share (Fig. 2 at k = 5 is Fig. 3 at r = 1; Fig. 3 at r = 2 is
    Fig. 4 at d = 0.5) runs once. ``"exact"``: P0 = 0 at every Fig. 2 k.
    """
    out: dict[tuple[int, int, float, float], list[str]] = {}
    for fig, pts in (("fig2", [(k, 1, 0.5) for k in s.fig2_k]),
                     ("fig3", [(5, r, 0.5) for r in s.fig3_r]),
                     ("fig4", [(5, 2, d) for d in s.fig4_d])):
        for k, r, d in pts:
            out.setdefault((int(k), int(r), float(d), 1.0), []).append(fig)
    for k in s.fig2_k:
        out.setdefault((int(k), 1, 0.5, 0.0), []).append("exact")
    return out


def large_k_values(s: Settings, dataset: str) -> list[tuple[str, int, int]]:
    """Fig. 5's ``(label, k, splits)`` of ``dataset``; k above the union is skipped.

    Very large k: fewer splits, so k x test queries x splits stays within
    ``large_k_budget`` (at least 5 splits).
    """
    union = union_size(dataset)
    n = len(load_dataset(dataset).y)
    queries = n - union
    out = []
    for label in s.fig5_k:
        k = union if label == "all" else union // 2 if label == "half" else int(label)
        if k > union:
            continue
        splits = int(min(s.splits, max(5, s.large_k_budget // (k * queries))))
        out.append((str(label), k, splits))
    return out


def _seeds(n: int) -> tuple[int, ...]:
    return tuple(SEED + i for i in range(n))


def study_grids(s: Settings) -> list:
    """The figures' scenario grids (every point a ``ppknn-ring`` registry run per split).

    ``accuracy-<dataset>`` (Figs. 2-4 and the exact-kNN check, ``splits`` splits),
    ``large_k-<dataset>-<label>`` (Fig. 5), ``disclosure`` (Fig. 6, ``leak_splits``
    splits, transcripts attacked by both successor adversaries), ``bound`` (the
    correctness bound over r and k) and ``communication`` (one split per (n, r), both
    secure sums). A split is ``[run].seed`` (the grids' ``split_seed`` follows it), so
    every point of a figure sees the same splits.
    """
    from ppknn.simulations.grids import Grid

    out = []
    acc = list(accuracy_points(s))
    for name in s.datasets:
        base = _scored(grid_base(name, s.n), "none")
        out.append(Grid(f"accuracy-{name}", base=base,
                        axes={("protocol.k", "protocol.rounds", "protocol.d", "protocol.p0"):
                              [list(p) for p in acc]},
                        seeds=_seeds(s.splits)))
    for name in s.datasets:
        for label, k, splits in large_k_values(s, name):
            base = _scored(grid_base(name, s.n), "none")
            out.append(Grid(f"large_k-{name}-{label}", base=base | {
                "protocol": base["protocol"] | {"k": k, "rounds": 1}}, seeds=_seeds(splits)))
    union = union_size(s.leak_dataset)
    base = _scored(grid_base(s.leak_dataset, s.n), "detail")
    out.append(Grid("disclosure", base=base | {"protocol": base["protocol"] | {"rounds": 2}},
                    axes={"parties.n": list(s.fig6_n),
                          "protocol.k": [k for k in s.fig6_k if k <= union]},
                    seeds=_seeds(s.leak_splits)))
    base = _scored(grid_base(s.leak_dataset, s.n), "none")
    out.append(Grid("bound", base=base, axes={"protocol.k": list(s.bound_k),
                                              "protocol.rounds": list(s.bound_r)},
                    seeds=_seeds(s.splits)))
    out.append(Grid("communication", base=base | {"protocol": base["protocol"] | {"k": 5}},
                    axes={("parties.n", "protocol.rounds"): [list(p) for p in comm_pairs(s)],
                          "protocol.secure_sum": ["ring", "shared"]},
                    seeds=(SEED,)))
    return out


def _scored(base: dict, score: str) -> dict:
    return base | {"protocol": base["protocol"] | {"score": score}}


def comm_pairs(s: Settings) -> list[tuple[int, int]]:
    """(n, r) of the communication table: every n at r = 2, every r at one n (8)."""
    n_sweep_r = 8 if 8 in s.comm_n else s.comm_n[0]
    return [(n, 2) for n in s.comm_n] + [(n_sweep_r, r) for r in s.comm_r if r != 2]


def _col(rows: list[dict], key: str) -> np.ndarray:
    return np.array([float(r[key]) for r in rows])


def _ints(value: Any) -> list[int]:
    import json

    return [int(v) for v in (json.loads(value) if isinstance(value, str) else value)]


def _group(rows: list[dict], keys: tuple[str, ...]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(tuple(_num(r[k]) for k in keys), []).append(r)
    return out


def _num(v: Any) -> Any:
    """CSV round trip: numbers back to numbers."""
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return v
        return int(f) if f.is_integer() and "." not in v else f
    return v


def accuracy_table(rows: dict[str, list[dict]], s: Settings) -> Table:
    """Figs. 2-4 and the exact-kNN check from the ``accuracy-<dataset>`` grids' rows.

    Per figure point: PP-kNN and kNN accuracy per split (the registry run's PP-kNN and
    its scikit-learn baseline on the same split), mean |PP - kNN| and the mean paired
    difference with 95% t intervals over the splits. ``exact_knn_mismatch_non_tied``:
    at each Fig. 2 k (on its row), queries where the exact protocol (P0 = 0) disagrees
    with scikit-learn outside ties at the k-th distance, summed over the splits; ``tied``:
    queries with such a tie.
    """
    t = Table(name="accuracy", columns=(
        "dataset", "figure", "k", "rounds", "p0", "d", "acc_ppknn", "acc_knn", "abs_diff",
        "abs_diff_lo", "abs_diff_hi", "diff", "diff_lo", "diff_hi",
        "exact_knn_mismatch_non_tied", "tied", "acc_ppknn_lo", "acc_ppknn_hi",
        "acc_knn_lo", "acc_knn_hi"))
    keys = ("protocol.k", "protocol.rounds", "protocol.d", "protocol.p0")
    points = accuracy_points(s)
    for name in s.datasets:
        by = _group(rows.get(f"accuracy-{name}", []), keys)
        exact: dict[int, tuple[int, int]] = {}
        for (k, r, d, p0), figs in points.items():
            if "exact" in figs and (k, r, d, p0) in by:
                rr = by[(k, r, d, p0)]
                ties = _col(rr, "queries_with_tie_at_kth")
                agree = _col(rr, "agreement_with_knn_excluding_ties")
                q = _col(rr, "queries")
                mism = np.round(np.nan_to_num(1 - agree) * (q - ties))
                exact[k] = (int(mism.sum()), int(ties.sum()))
        for fig, pts in (("fig2", [(int(k), 1, 0.5, 1.0) for k in s.fig2_k]),
                         ("fig3", [(5, int(r), 0.5, 1.0) for r in s.fig3_r]),
                         ("fig4", [(5, 2, float(d), 1.0) for d in s.fig4_d])):
            for k, r, d, p0 in pts:  # each figure's rows in its declared order
                if (k, r, d, p0) not in by:
                    continue
                rr = by[(k, r, d, p0)]
                acc_pp, acc_sk = _col(rr, "accuracy_ppknn"), _col(rr, "accuracy_knn")
                m, lo, hi = mean_ci(np.abs(acc_pp - acc_sk))
                dm, dlo, dhi = mean_ci(acc_pp - acc_sk)
                _, plo, phi = mean_ci(acc_pp)
                _, klo, khi = mean_ci(acc_sk)
                mism, tied = exact.get(k, (-1, 0)) if fig == "fig2" else (-1, exact.get(
                    k, (0, 0))[1])
                t.add(dataset=name, figure=fig, k=k, rounds=r, p0=p0, d=d,
                      acc_ppknn=acc_pp.mean(), acc_knn=acc_sk.mean(), abs_diff=m,
                      abs_diff_lo=max(lo, 0), abs_diff_hi=hi, diff=dm, diff_lo=dlo,
                      diff_hi=dhi, exact_knn_mismatch_non_tied=mism, tied=tied,
                      acc_ppknn_lo=plo, acc_ppknn_hi=phi, acc_knn_lo=klo, acc_knn_hi=khi)
    return t


def large_k_table(rows: dict[str, list[dict]], s: Settings) -> Table:
    """Fig. 5 from the ``large_k-<dataset>-<label>`` grids' rows (95% t over splits)."""
    t = Table(name="fig5_large_k", columns=("dataset", "k", "k_label", "splits", "acc_ppknn",
                                            "acc_knn", "acc_ppknn_lo", "acc_ppknn_hi"))
    for name in s.datasets:
        for label, k, _ in large_k_values(s, name):
            rr = rows.get(f"large_k-{name}-{label}", [])
            if not rr:
                continue
            m, lo, hi = mean_ci(_col(rr, "accuracy_ppknn"))
            t.add(dataset=name, k=k, k_label=label, splits=len(rr), acc_ppknn=m,
                  acc_knn=float(_col(rr, "accuracy_knn").mean()), acc_ppknn_lo=lo,
                  acc_ppknn_hi=hi)
    return t


def disclosure_table(rows: list[dict], s: Settings) -> Table:
    """Fig. 6 from the ``disclosure`` grid's rows: both adversaries, pooled over splits.

    Per (n, k): the per-node disclosure probability pooled over the splits (a node is a
    ring position counted from the start node), its mean over nodes, the Wilson 95%
    interval over every (node, query) trial, the smallest and largest node, precision
    (right claimed values / claimed values) and exact attributions (claimed rows whose
    every claimed value is the target's).
    """
    t = Table(name="fig6_disclosure", columns=(
        "dataset", "n", "k", "adversary", "mean_probability", "ci_low", "ci_high",
        "min_node", "max_node", "precision", "exact_attribution"))
    for (n, k), rr in _group(rows, ("parties.n", "protocol.k")).items():
        trials = int(sum(int(_num(r["disclosure_trials"])) for r in rr))
        for adversary, prefix in (("paper", "disclosure"), ("informed", "informed")):
            per_pos = np.sum([_ints(r[f"{prefix}_by_position"]) for r in rr], axis=0)
            probs = per_pos / trials
            lo, hi = wilson_interval(int(per_pos.sum()), trials * len(per_pos))
            claimed = sum(int(_num(r[f"{prefix}_claimed"])) for r in rr)
            correct = sum(int(_num(r[f"{prefix}_correct"])) for r in rr)
            ex_rows = sum(int(_num(r[f"{prefix}_exact_rows"])) for r in rr)
            ex_hits = sum(int(_num(r[f"{prefix}_exact_hits"])) for r in rr)
            t.add(dataset=s.leak_dataset, n=n, k=k, adversary=adversary,
                  mean_probability=float(probs.mean()), ci_low=lo, ci_high=hi,
                  min_node=float(probs.min()), max_node=float(probs.max()),
                  precision=correct / claimed if claimed else float("nan"),
                  exact_attribution=ex_hits / ex_rows if ex_rows else float("nan"))
    return t


def bound_table(rows: list[dict], s: Settings) -> Table:
    """P(final vector = true top-k) per (r, k) from the ``bound`` grid's rows, vs the bound.

    Pooled over every query of every split, Wilson 95% interval.
    """
    t = Table(name="correctness_bound", columns=("dataset", "rounds", "k", "measured",
                                                 "ci_low", "ci_high", "bound", "holds"))
    by = _group(rows, ("protocol.k", "protocol.rounds"))
    for k in s.bound_k:
        for r in s.bound_r:
            rr = by.get((k, r), [])
            if not rr:
                continue
            q = _col(rr, "queries")
            hits = int(np.round(_col(rr, "topk_exact_fraction") * q).sum())
            lo, hi = wilson_interval(hits, int(q.sum()))
            bound = float(_num(rr[0]["topk_correctness_bound"]))
            t.add(dataset=s.leak_dataset, rounds=r, k=k, measured=hits / q.sum(), ci_low=lo,
                  ci_high=hi, bound=bound, holds=bool(hi >= bound))
    return t


def communication_table(rows: list[dict], s: Settings) -> Table:
    """Messages and bytes per query from the ``communication`` grid's rows.

    Against Θ(n) per round (n r + n - 1 messages for PP-TopK with the final broadcast)
    and 2n - 1 for the ring's secure sum (n (n - 1) + 2 (n - 1) for the shared one).
    """
    t = Table(name="communication", columns=("n", "rounds", "protocol", "messages",
                                             "expected_messages", "bytes_per_query",
                                             "queries"))
    by = _group(rows, ("parties.n", "protocol.rounds", "protocol.secure_sum"))
    for n, r in comm_pairs(s):
        found: list[tuple[str, int, int, int, int]] = []
        for kind in ("ring", "shared"):
            rr = by.get((n, r, kind))
            if not rr:
                continue
            row = rr[0]
            q = int(_num(row["queries"]))
            if kind == "ring":
                found.append((TOPK, int(_num(row["messages_topk"])),
                              int(_num(row["bytes_topk"])), n * r + (n - 1), q))
            sum_name, expected = (("secure-sum", 2 * n - 1) if kind == "ring"
                                  else ("shared-sum", n * (n - 1) + 2 * (n - 1)))
            found.append((sum_name, int(_num(row["messages_sum"])),
                          int(_num(row["bytes_sum"])), expected, q))
        for proto, msgs, nbytes, expected, q in sorted(found):
            t.add(n=n, rounds=r, protocol=proto, messages=msgs, expected_messages=expected,
                  bytes_per_query=nbytes / q, queries=q)
    return t


def study_tables(rows: dict[str, list[dict]], s: Settings) -> dict[str, Table]:
    """Every grid-built figure table from the grids' rows (``{grid name: rows}``)."""
    return {"accuracy": accuracy_table(rows, s), "large_k": large_k_table(rows, s),
            "disclosure": disclosure_table(rows.get("disclosure", []), s),
            "bound": bound_table(rows.get("bound", []), s),
            "communication": communication_table(rows.get("communication", []), s)}


def all_grids(s: Settings) -> list:
    """Every scenario grid of the reproduction: :func:`grids` and :func:`study_grids`."""
    return grids(s) + study_grids(s)


class Xiong:
    """Runs the experiments; each method returns a :class:`Table`."""

    def __init__(self, settings: Settings, runtime: str = "inprocess",
                 grids_from: str | None = None) -> None:
        self.s = settings
        self.runtime = runtime
        self.grids_from = grids_from
        self.timings: dict[str, float] = {}

    def collusion(self) -> Table:
        """Coalitions of c = 1, 2, 3 around each node or at random: PP-TopK and both sums.

        A study over the runs of :func:`collusion_grid` (each one registry run, as
        ``ppknn run`` runs it, transcript kept in memory): every coalition attacks every
        run's transcript; hits and trials are pooled over the runs.
        """
        s = self.s
        t = Table(name="collusion", columns=("protocol", "placement", "c", "adversary",
                                             "disclosure", "ci_low", "ci_high", "precision"))
        rng = np.random.default_rng(SEED)
        runs: dict[str, list[tuple[Any, dict[str, np.ndarray], dict]]] = {"ring": [], "shared": []}
        for point, result in recorded_runs(collusion_grid(s)):
            outcome = result.outcome
            assert result.transcript is not None
            runs[point["protocol.secure_sum"]].append(
                (result.transcript.messages(with_provenance=True), owner_votes(outcome),
                 dict(outcome.plan.public)))
        tally: dict[tuple, list[int]] = {}
        for i in range(len(runs["ring"])):
            msgs, _, public = runs["ring"][i]
            ring, start = public["ring"], public["start"]
            topk_msgs = [m for m in msgs if m.protocol == TOPK]
            for placement in ("neighbours", "random"):
                for c in (1, 2, 3):
                    coalitions = {p: _coalition(ring, p, c, placement, rng) for p in ring}
                    for informed in (False, True):
                        claims = Claims("coalition+informed" if informed else "coalition")
                        for p, members in coalitions.items():
                            view = View.of(topk_msgs, members)
                            claims.items.extend(coalition_attribution(
                                view, target=p, ring=ring, start=start,
                                max_distance=public["max_distance"], informed=informed).items)
                        rep = score_attribution(claims, topk_msgs, public["party_index"],
                                                int(public["n_queries"]))
                        acc = tally.setdefault(("pp-topk", placement, c, claims.adversary),
                                               [0, 0, 0, 0])
                        acc[0] += sum(d.disclosed for d in rep.parties)
                        acc[1] += sum(d.trials for d in rep.parties)
                        acc[2] += sum(d.correct for d in rep.parties)
                        acc[3] += sum(d.claimed for d in rep.parties)
                    for kind in ("ring", "shared"):
                        kmsgs, votes, kpub = runs[kind][i]
                        acc = tally.setdefault((f"{kind}-sum", placement, c,
                                                "vote-vector recovery"), [0, 0, 0, 0])
                        for p, members in _same_positions(coalitions, ring, kpub["ring"]):
                            view = View.of(kmsgs, members)
                            est = (ring_sum_estimate(view, target=p, ring=kpub["ring"],
                                                     start=kpub["start"]) if kind == "ring"
                                   else shared_sum_estimate(view, target=p))
                            rec = recovery_rate(est, votes[p])
                            acc[0] += int(rec.sum())
                            acc[1] += len(rec)
        for (proto, placement, c, adversary), (hits, trials, correct, claimed) in tally.items():
            lo, hi = wilson_interval(hits, trials)
            t.add(protocol=proto, placement=placement, c=c, adversary=adversary,
                  disclosure=hits / trials if trials else float("nan"), ci_low=lo, ci_high=hi,
                  precision=(correct / claimed if claimed else float("nan"))
                  if proto == "pp-topk" else float("nan"))
        return t

    def grid_studies(self, output: Path | None = None, log=None) -> dict[str, Table]:
        """Run every scenario grid (:func:`all_grids`); the tables built from their rows.

        Every point is one ``ppknn-ring`` scenario run through the registry, exactly as
        ``ppknn run`` runs it, one run per split. The long per-run rows go to
        ``output/grids/``. On the Ray runtime the runs fan out as Ray tasks. ``log(text)``
        is told at every tenth of the runs.
        """
        from ppknn.simulations.grids import run_grids, write_grid_rows

        if self.grids_from is not None:
            folder = Path(self.grids_from)
            if not list(folder.glob("grid-*.csv")):
                from ppknn.core.errors import ConfigError

                raise ConfigError(f"grids_from = {self.grids_from!r}: no grid-*.csv there; give "
                                  "the grids/ folder of an earlier run")
            if output is not None and folder.resolve() != (Path(output) / "grids").resolve():
                import shutil

                shutil.copytree(folder, Path(output) / "grids", dirs_exist_ok=True)
            return grid_summaries_from(folder, self.s)
        t0 = time.perf_counter()
        told = [0]

        def progress(done: int, total: int) -> None:
            if log is not None and done * 10 // total > told[0]:
                told[0] = done * 10 // total
                log(f"grids: {done:,} of {total:,} runs, {time.perf_counter() - t0:.0f} s")

        rows = run_grids(all_grids(self.s), parallel="ray" if self.runtime == "ray"
                         else "sequential", progress=progress)
        if output is not None:
            write_grid_rows(rows, Path(output) / "grids")
        return grid_summaries(rows) | study_tables(rows, self.s)

    def run_all(self, log=None, output: Path | None = None) -> dict[str, Table]:
        """Every experiment, timed: the grids, then the collusion study.

        ``log(text)`` is told as each one ends, and its tables are written to
        ``output`` at once.
        """
        t0 = time.perf_counter()
        tables = self.grid_studies(output, log)
        self.timings["grids"] = time.perf_counter() - t0
        if output is not None:
            for t in tables.values():
                t.write_csv(output / f"{t.name}.csv")
        if log is not None:
            log(f"grids: {self.timings['grids']:.1f} s")
        t0 = time.perf_counter()
        tables["collusion"] = self.collusion()
        self.timings["collusion"] = time.perf_counter() - t0
        if output is not None:
            tables["collusion"].write_csv(output / "collusion.csv")
        if log is not None:
            log(f"collusion: {self.timings['collusion']:.1f} s")
        return tables


def collusion_grid(s: Settings):
    """The collusion study's runs (a grid run point by point, transcripts kept).

    ``leak_splits`` splits of ``leak_dataset`` over ``coalition_n`` owners, k = 5,
    r = 2, P0 = 1, d = 0.5, each secure sum.
    """
    from ppknn.simulations.grids import Grid

    base = _scored(grid_base(s.leak_dataset, s.coalition_n), "none")
    return Grid("collusion", base=base | {"protocol": base["protocol"] | {"k": 5, "rounds": 2}},
                axes={"protocol.secure_sum": ["ring", "shared"]},
                seeds=_seeds(s.leak_splits))


def recorded_runs(grid) -> list[tuple[dict, Any]]:
    """Every point of ``grid`` run as ``ppknn run`` runs it, transcript kept in memory."""
    import warnings

    from ppknn.core.errors import PrivacyLeakWarning
    from ppknn.simulations.pipeline import run_scenario

    out = []
    for point, scenario in grid.scenarios():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            out.append((point, run_scenario(scenario).run))
    return out


def owner_votes(outcome) -> dict[str, np.ndarray]:
    """Every owner's private vote vector of a ``ppknn-ring`` run (the scorer's ground truth).

    Recomputed outside the run by each owner's own code on its own rows, the public
    set-up and the run's final vector: what the owner fed into the secure sum.
    """
    from ppknn.protocols.ppknn_ring.config import RingSetup

    plan = outcome.plan
    public = plan.public
    setup = RingSetup(ring=tuple(public["ring"]), start=public["start"],
                      params=plan.config.params, weighting=plan.config.weighting,
                      vote=plan.config.vote)
    final = np.asarray(outcome.result.detail.final_vector, dtype=np.float64)
    votes = {}
    for spec in plan.specs:
        owner = spec.factory(**spec.kwargs)
        owner.configure(setup)
        owner.load_queries(plan.queries)
        owner.final_g = final
        votes[spec.party_id] = owner.local_votes()
    return votes


def _same_positions(coalitions: dict[str, list[str]], ring: list[str], other: list[str]
                    ) -> list[tuple[str, list[str]]]:
    """The coalitions of one ring moved to the same ring positions of another ring."""
    where = {p: i for i, p in enumerate(ring)}
    return [(other[where[p]], [other[where[m]] for m in members])
            for p, members in coalitions.items()]


def _coalition(ring: list[str], target: str, c: int, placement: str,
               rng: np.random.Generator) -> list[str]:
    n = len(ring)
    i = ring.index(target)
    if placement == "neighbours":
        around = [ring[(i + 1) % n], ring[(i - 1) % n], ring[(i + 2) % n]]
        return around[:c]
    others = [p for p in ring if p != target]
    return [others[j] for j in rng.choice(len(others), size=c, replace=False)]


TABLES = {"accuracy": "accuracy", "large_k": "fig5_large_k", "disclosure": "fig6_disclosure",
          "bound": "correctness_bound", "collusion": "collusion", "communication": "communication",
          "readings": "fig2_readings", "votes": "vote_rules"}


GRID_TABLES = ("readings", "votes", "accuracy", "large_k", "disclosure", "bound",
               "communication")
"""Tables built from scenario grids (every point a registry run); the others are studies
(collusion: many coalitions attack one recorded run)."""


def report_from_tables(output: Path, *, quick: bool, runtime: str, report: Path,
                       timings: dict[str, float], reused: Path | None = None,
                       notes: tuple[str, ...] = ()) -> Path:
    """Rebuild plots and report from the CSV tables of an earlier run in ``output``.

    ``reused``: a folder (e.g. the committed ``docs/reproductions/xiong``) from which the
    tables that ``output`` lacks are read; the report names them. ``notes``: paragraphs
    for the report's introduction (how the run was made).
    """
    from ppknn_reproductions.xiong_report import write_report

    tables, taken = {}, []
    for key, name in TABLES.items():
        path = Path(output) / f"{name}.csv"
        if not path.is_file() and reused is not None:
            path = Path(reused) / f"{name}.csv"
            taken.append(name)
        tables[key] = Table.read_csv(path)
    return write_report(tables, QUICK if quick else FULL, output=Path(output), report=report,
                        quick=quick, timings=timings, runtime=runtime, seed=SEED,
                        reused=(str(reused), tuple(taken)) if taken else None, notes=notes)


def run(output: Path, *, quick: bool, runtime: str, report: Path, log=None,
        reuse: str | None = None, grids_from: str | None = None) -> Path:
    """Run everything, write tables, plots and the report (see the package docstring).

    ``reuse``: run only the scenario grids and read the other tables from this folder
    of an earlier run's CSVs (``--set reuse=docs/reproductions/xiong``); the report says
    which tables were reused. ``grids_from``: read the grids' per-run rows from this
    folder of an earlier run (its ``grids/``) instead of running them again; the batched
    studies run as usual.
    """
    from ppknn_reproductions.xiong_report import write_report

    settings = QUICK if quick else FULL
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    xp = Xiong(settings, runtime=runtime, grids_from=grids_from)
    t0 = time.perf_counter()
    if reuse is not None:
        if not (Path(reuse) / "accuracy.csv").is_file():
            from ppknn.core.errors import ConfigError

            raise ConfigError(f"reuse = {reuse!r}: no accuracy.csv there; give the folder of "
                              "an earlier run's CSVs (e.g. docs/reproductions/xiong)")
        tables = xp.grid_studies(output)
        xp.timings["grids"] = time.perf_counter() - t0
        for t in tables.values():
            t.write_csv(output / f"{t.name}.csv")
        return report_from_tables(output, quick=quick, runtime=runtime, report=Path(report),
                                  timings=xp.timings | {"total": time.perf_counter() - t0},
                                  reused=Path(reuse))
    tables = xp.run_all(log, output)
    total = time.perf_counter() - t0
    for table in tables.values():  # (also written as each experiment ends)
        table.write_csv(output / f"{table.name}.csv")
    return write_report(tables, settings, output=output, report=Path(report), quick=quick,
                        timings=xp.timings | {"total": total}, runtime=runtime, seed=SEED)


__all__ = ["FULL", "GRID_TABLES", "QUICK", "READINGS", "VOTES", "Settings", "Xiong",
           "accuracy_points", "accuracy_table", "all_grids", "bound_table", "comm_pairs",
           "communication_table", "disclosure_table", "grid_base", "grid_summaries",
           "grid_summaries_from", "grids", "large_k_table", "large_k_values",
           "report_from_tables", "run", "study_grids", "study_tables", "summarise_grid",
           "union_size"]
