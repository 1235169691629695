"""The results folder of a run: tables, summary, transcript and a plot.

Layout::

    OUTPUT/
      scenario.json      the resolved scenario (every default filled in)
      public.json        public facts of the run (ring, start node, max distance, ...)
      predictions.csv    per query: label, PP-kNN, non-private kNN, tie at k-th, exact top-k
      disclosure.csv     per node: disclosure probability, 95% interval, claim precision
      summary.json       accuracies, disclosure, communication, timings, randomness mode
      summary.png        accuracy, per-node disclosure with intervals, communication
      transcript/        every message (Parquet parts) and totals.json
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from core.leakage import DisclosureReport
from simulations.runner import RunOutcome

MAX_LABELLED_PARTIES = 40
"""Up to this many parties the summary plot labels each one; beyond, it plots sorted curves."""


def summary_of(outcome: RunOutcome) -> dict[str, Any]:
    """The run's headline figures as plain JSON."""
    p = outcome.prepared
    s = p.scenario
    q = len(p.queries)
    n = len(p.party_names)
    non_tie = ~outcome.ties
    lo, hi = outcome.disclosure.pooled_interval
    params = p.config.params
    return {
        "run_id": p.run_id,
        "runtime": outcome.runtime,
        "randomness_mode": s.run.mode,
        "channels": "on" if s.runtime.channels else "off",
        "dataset": p.dataset.name,
        "parties": n,
        "queries": q,
        "k": params.k, "p0": params.p0, "d": params.d, "rounds": params.rounds,
        "delta": params.delta, "weighting": p.config.weighting,
        "secure_sum": p.config.secure_sum,
        "accuracy_ppknn": outcome.accuracy,
        "accuracy_knn": outcome.knn_accuracy,
        "agreement_with_knn": float(np.mean(outcome.predictions == outcome.knn_predictions)),
        "agreement_with_knn_excluding_ties": float(
            np.mean((outcome.predictions == outcome.knn_predictions)[non_tie])
        ) if non_tie.any() else float("nan"),
        "queries_with_tie_at_kth": int(outcome.ties.sum()),
        "topk_exact_fraction": float(outcome.topk_exact.mean()),
        "topk_correctness_bound": params.correctness_bound(),
        "disclosure": {
            "adversary": outcome.disclosure.adversary,
            "definition": "fraction of queries where the node's successor correctly attributes "
                          "at least one value of the vector it received from the node to it",
            "mean_probability": outcome.disclosure.mean_probability,
            "pooled_ci95": [lo, hi],
        },
        "communication": {
            "messages": outcome.communication.get("messages"),
            "bytes": outcome.communication.get("bytes"),
            "messages_per_query_batch": outcome.communication.get("messages"),
            "by_protocol": outcome.communication.get("by_protocol"),
            "direction_note": outcome.communication.get("direction_note"),
        },
        "timings_s": outcome.timings,
    }


def write_results(outcome: RunOutcome, output: str | Path) -> Path:
    """Write the results folder (see module docstring); returns its path."""
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    p = outcome.prepared
    (out / "scenario.json").write_text(json.dumps(p.scenario.model_dump(), indent=1))
    (out / "public.json").write_text(json.dumps(p.public(), indent=1))
    classes = p.dataset.classes
    with (out / "predictions.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["query", "label", "ppknn", "knn", "tie_at_kth", "topk_exact"])
        for i in range(len(p.queries)):
            w.writerow([i, classes[p.query_labels[i]], classes[outcome.predictions[i]],
                        classes[outcome.knn_predictions[i]], int(outcome.ties[i]),
                        int(outcome.topk_exact[i])])
    write_disclosure_csv(outcome.disclosure, out / "disclosure.csv")
    summary = summary_of(outcome)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    plot_summary(outcome, out / "summary.png")
    return out


def write_disclosure_csv(report: DisclosureReport, path: Path) -> None:
    """One row per node."""
    rows = report.as_rows()
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["party"])
        w.writeheader()
        w.writerows(rows)


def plot_summary(outcome: RunOutcome, path: Path) -> None:
    """Accuracy, per-node disclosure with 95% intervals, and communication per node."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = outcome.prepared
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    bars = ax.bar(["PP-kNN", "kNN (union)"], [outcome.accuracy, outcome.knn_accuracy],
                  color=["tab:blue", "tab:gray"])
    ax.bar_label(bars, fmt="%.3f")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    params = p.config.params
    name = p.dataset.name if len(p.dataset.name) <= 48 else p.dataset.name[:47] + "…"
    ax.set_title(f"{name}\nk={params.k}, r={params.rounds}, P0={params.p0}, d={params.d}",
                 fontsize=10)

    ax = axes[1]
    d = outcome.disclosure.parties
    probs = np.array([x.probability for x in d])
    ci = np.array([x.interval for x in d]).reshape(len(d), 2)
    if len(d) <= MAX_LABELLED_PARTIES:  # one labelled point per node
        x = np.arange(len(d))
        ax.errorbar(x, probs, yerr=[np.maximum(probs - ci[:, 0], 0),
                                    np.maximum(ci[:, 1] - probs, 0)], fmt="o", capsize=3)
        ax.set_xticks(x, [x.party for x in d], rotation=60, fontsize=7)
        ax.set_title("successor attribution per node")
    else:  # thousands of nodes: the sorted curve with its band
        order = np.argsort(probs, kind="stable")
        x = np.arange(len(d))
        ax.plot(x, probs[order], lw=1)
        ax.fill_between(x, ci[order, 0], ci[order, 1], alpha=0.3, lw=0)
        ax.set_xlabel(f"{len(d):,} nodes, sorted by disclosure")
        ax.set_title("successor attribution, every node (sorted)")
    ax.axhline(outcome.disclosure.mean_probability, color="tab:red", ls="--",
               label=f"mean {outcome.disclosure.mean_probability:.3f}")
    ax.set_ylim(0, 1)
    ax.set_ylabel("disclosure probability (95% CI)")
    ax.legend()

    ax = axes[2]
    per = outcome.communication.get("per_party", {})
    names = list(per)
    sent = np.array([per[n]["sent_bytes"] / 1024 for n in names])
    recv = np.array([per[n]["received_bytes"] / 1024 for n in names])
    x = np.arange(len(names))
    if len(names) <= MAX_LABELLED_PARTIES:
        ax.bar(x - 0.2, sent, 0.4, label="sent")
        ax.bar(x + 0.2, recv, 0.4, label="received")
        ax.set_xticks(x, names, rotation=60, fontsize=7)
    else:
        ax.plot(x, np.sort(sent), label="sent")
        ax.plot(x, np.sort(recv), label="received")
        ax.set_yscale("log")
        ax.set_xlabel(f"{len(names):,} parties, each curve sorted")
    ax.set_ylabel("KiB on the wire")
    ax.set_title(f"communication: {outcome.communication.get('messages')} messages")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["plot_summary", "summary_of", "write_disclosure_csv", "write_results"]
