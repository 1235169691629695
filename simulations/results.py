"""The results folder of a run, the same shape for every protocol.

Layout::

    OUTPUT/
      scenario.json      the resolved scenario (every default filled in)
      public.json        public facts of the run, per protocol (ring order, tree height, ...)
      predictions.csv    per query: label, then per protocol its prediction, its
                         non-private baseline's, and its own per-query columns
      parties.csv        per party: role, messages and bytes sent/received, privacy
                         spent, the protocol's per-party measures (e.g. disclosure)
      summary.json       per protocol: accuracy, baseline, privacy spent, metrics;
                         communication, the phases' timings (``timings_s``: prepare,
                         start-up, protocol, recorded: writing the public facts and
                         ground truth, measure, leakage scoring, write, plots),
                         randomness mode
      summary.svg        (when plotted) accuracy vs baseline, the protocol's own panel,
                         bytes per party
      transcript/        every message (Parquet parts) and totals.json; each protocol's
                         ground truth for the scorers (truth-PROTOCOL.npz)
      disclosure.csv     (ppknn-ring) per node: disclosure probability, 95% interval
      leakage.csv        every protocol: one row per (observer, target, attack): measured
                         quantity, 95% interval, promised bound, verdict (also the
                         ``leakage`` section of summary.json, and leakage.svg when plotted)

Plots are drawn by ``ppknn run`` (unless ``--no-plot``) and
:func:`simulations.pipeline.write_results` by default, or later from the folder
(``ppknn show --plot``); sweeps and the Python API draw none unless asked.

With one protocol, its figures are also at the top level of ``summary.json``
(``accuracy_ppknn``, ``topk_exact_fraction``, ...).

``scenario.json``, ``public.json``, the ground truth, and ``predictions.csv``,
``parties.csv`` and ``summary.json`` without what measuring adds, are written
as soon as the protocols complete (:func:`write_recorded`), before anything
is measured: a run that fails while measuring or scoring keeps a folder
``ppknn show`` reads and ``ppknn leakage`` scores (:mod:`simulations.output`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.leakage import DisclosureReport
from ppknn.core.rng import describe as describe_randomness
from ppknn.simulations.reporting import jsonio
from ppknn.simulations.reporting.csvio import write_rows
from ppknn.simulations.runner import RunResult

MAX_LABELLED_PARTIES = 40
"""Up to this many parties the summary plot labels each one; beyond, it plots sorted curves."""


def _parties_count(result: RunResult) -> int:
    return len(result.prepared.specs())


def summary_of(result: RunResult) -> dict[str, Any]:
    """The run's headline figures as plain JSON."""
    p = result.prepared
    s = p.scenario
    out: dict[str, Any] = {
        "run_id": p.run_id,
        "protocols": [o.name for o in result.outcomes],
        "runtime": result.runtime,
        "randomness_mode": s.run.mode,
        "randomness": describe_randomness(s.run.mode),
        "channels": "on" if s.runtime.channels else "off",
        "dataset": p.data.dataset.name,
        "parties": _parties_count(result),
        "queries": int(len(p.data.queries)),
        "results": {o.name: o.summary() for o in result.outcomes},
        "communication": {
            "messages": result.communication.get("messages"),
            "bytes": result.communication.get("bytes"),
            "by_protocol": result.communication.get("by_protocol"),
            "direction_note": result.communication.get("direction_note"),
        },
        "timings_s": dict(result.timings),
    }
    if p.data.dataset.missing:  # rows dropped / values imputed under [data] missing
        out["missing_values"] = dict(p.data.dataset.missing)
    if s.network is not None:
        from ppknn.simulations.network import predicted

        out["network"] = predicted(out, s.network, result.transcript)
    if len(result.outcomes) == 1:  # one protocol: its figures at the top level too
        for key, value in result.outcome.summary().items():
            out.setdefault(key, value)
    return out


def _class_names(result: RunResult, values: np.ndarray) -> list[str]:
    classes = result.prepared.data.dataset.classes
    return [str(classes[v]) if v >= 0 else "" for v in values]


def prediction_rows(result: RunResult) -> list[dict[str, Any]]:
    """One row per query: label, then each protocol's prediction, baseline and extras."""
    data = result.prepared.data
    columns: dict[str, list[Any]] = {"query": list(range(len(data.queries))),
                                     "label": _class_names(result, data.query_labels)}
    for o in result.outcomes:
        columns[o.name] = _class_names(result, o.predictions)
        columns[f"{o.name}:baseline"] = _class_names(result, o.baseline.predictions)
        measured = o.measured.per_query if o.measured is not None else {}
        for name, col in {**o.result.per_query, **measured}.items():
            columns[f"{o.name}:{name}"] = np.asarray(col).tolist()
    keys = list(columns)
    return [{k: columns[k][i] for k in keys} for i in range(len(data.queries))]


def party_rows(result: RunResult) -> list[dict[str, Any]]:
    """One row per party: roles, communication, privacy spent, per-party measures."""
    per = result.communication.get("per_party", {})
    rows: dict[str, dict[str, Any]] = {}
    for spec in result.prepared.specs():
        rows[spec.party_id] = {"party": spec.party_id, "roles": "", "protocols": ""}
    for o in result.outcomes:
        for role, names in o.plan.roles.items():
            for name in names:
                row = rows.setdefault(name, {"party": name, "roles": "", "protocols": ""})
                tag = f"{o.name}:{role}"
                row["roles"] = ";".join(x for x in (row["roles"], tag) if x)
                if o.name not in row["protocols"].split(";"):
                    row["protocols"] = ";".join(x for x in (row["protocols"], o.name) if x)
    for name, row in rows.items():
        c = per.get(name, {})
        for key in ("sent_messages", "sent_bytes", "received_messages", "received_bytes"):
            row[key] = int(c.get(key, 0))
    several = len(result.outcomes) > 1
    for o in result.outcomes:
        prefix = f"{o.name}:" if several else ""
        for party, (eps, delta) in o.result.privacy.per_party.items():
            row = rows.setdefault(party, {"party": party})
            row[f"{prefix}epsilon_spent"], row[f"{prefix}delta_spent"] = eps, delta
        measured = o.measured.per_party if o.measured is not None else {}
        for source in (o.result.per_party, measured):
            for party, values in source.items():
                row = rows.setdefault(party, {"party": party})
                row.update({f"{prefix}{k}": v for k, v in values.items()})
    return list(rows.values())


RECORDED = ("written when the protocols completed, before anything was measured: the "
            "measured metrics, the leakage table and the timings after the protocols are "
            "missing")
"""``summary.json``'s ``incomplete`` entry in a folder :func:`write_recorded` wrote."""


def write_recorded(result: RunResult, output: str | Path) -> None:
    """What scoring needs, written as soon as the protocols have completed.

    ``scenario.json``, ``public.json`` and each protocol's ground truth in
    ``transcript/``: passed to :func:`~simulations.runner.execute` as
    ``recorded``, so that when measuring or scoring fails the folder kept
    still holds a complete, scorable run (``ppknn leakage`` accepts it). The
    run's answers are kept too, without what measuring adds:
    ``predictions.csv`` (every protocol's predictions and baseline),
    ``parties.csv`` (roles, communication, privacy spent) and ``summary.json``
    (accuracy, baseline, privacy, communication, the timings so far), marked
    ``incomplete`` (:data:`RECORDED`). :func:`simulations.pipeline.write_results` writes all three
    again, complete.
    """
    from ppknn.simulations.leakage import save_truths

    out = Path(output)
    _write_facts(result, out)
    save_truths(result, out / "transcript")
    write_rows(out / "predictions.csv", prediction_rows(result))
    write_rows(out / "parties.csv", party_rows(result))
    summary = {"incomplete": RECORDED, **summary_of(result)}
    (out / "summary.json").write_text(jsonio.dumps(summary, default=float))


def _write_facts(result: RunResult, out: Path) -> None:
    p = result.prepared
    (out / "scenario.json").write_text(jsonio.dumps(p.scenario.model_dump()))
    (out / "public.json").write_text(jsonio.dumps(p.public()))


def write_folder(result: RunResult, output: str | Path, leakage_rows: list[Any], *,
                 plot: bool = False) -> Path:
    """Write the results folder of a measured, scored run (see module docstring).

    Only writes: the leakage table ``leakage_rows`` was scored beforehand
    (:func:`simulations.pipeline.score_leakage`). ``summary.json`` is written
    last, with the time the other files took (``write_s``) and, with
    ``plot``, the time ``summary.svg`` and ``leakage.svg`` took (``plots_s``).
    """
    from ppknn.simulations import leakage

    t0 = time.perf_counter()
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    _write_facts(result, out)
    write_rows(out / "predictions.csv", prediction_rows(result))
    write_rows(out / "parties.csv", party_rows(result))
    for o in result.outcomes:
        if isinstance(o.leakage, DisclosureReport):
            write_disclosure_csv(o.leakage, out / "disclosure.csv")
    leakage.write_table(leakage_rows, out / "leakage.csv")
    summary = summary_of(result)
    summary["leakage"] = leakage.summary(leakage_rows)
    timings = summary["timings_s"]
    timings["write_s"] = time.perf_counter() - t0
    if plot:
        t0 = time.perf_counter()
        plot_summary(result, out / "summary.svg")
        leakage.plot_table(leakage_rows, out / "leakage.svg", title=result.prepared.run_id)
        timings["plots_s"] = time.perf_counter() - t0
    (out / "summary.json").write_text(jsonio.dumps(summary, default=float))
    return out


@dataclass(frozen=True)
class ScenarioRun:
    """A scenario run whole: the run kept, and what ``[[deviation]]`` and ``[audit]`` asked for.

    Attributes
    ----------
    run:
        The run kept: the deviant run beside its honest twin, or the honest
        twin when the deviant run failed (its failure is the detection).
    deviations:
        The :class:`~simulations.leakage.deviations.DeviationReport`, when the
        scenario has ``[[deviation]]`` entries.
    audit:
        The :class:`~simulations.leakage.audit.AuditRun` of each audited
        protocol, when ``[audit] trials`` is set.
    """

    run: RunResult
    deviations: Any | None = None
    audit: list[Any] | None = None


def write_extras(done: ScenarioRun, out: Path) -> None:
    """``audit.csv``/``audit.json`` and ``deviations.json``/``deviations.csv``, when run."""
    if done.audit is not None:
        from ppknn.simulations.leakage.audit import write_audit

        write_audit(done.audit, out)
    if done.deviations is not None:
        from ppknn.simulations.leakage.deviations import write_report

        write_report(done.deviations, out)


def write_disclosure_csv(report: DisclosureReport, path: Path) -> None:
    """One row per node."""
    rows = report.as_rows()
    write_rows(path, rows, columns=list(rows[0]) if rows else ["party"])


def plot_disclosure(ax: Any, report: DisclosureReport) -> None:
    """Per-node disclosure with 95% intervals; sorted curves beyond 40 nodes."""
    d = report.parties
    probs = np.array([x.probability for x in d])
    ci = np.array([x.interval for x in d]).reshape(len(d), 2)
    x = np.arange(len(d))
    if len(d) <= MAX_LABELLED_PARTIES:  # one labelled point per node
        ax.errorbar(x, probs, yerr=[np.maximum(probs - ci[:, 0], 0),
                                    np.maximum(ci[:, 1] - probs, 0)], fmt="o", capsize=3,
                    label="per node")
        ax.set_xticks(x, [x.party for x in d], rotation=60, fontsize=7)
        ax.set_title("successor attribution per node")
    else:  # thousands of nodes: the sorted curve with its band
        order = np.argsort(probs, kind="stable")
        ax.plot(x, probs[order], lw=1, label="per node (sorted)")
        ax.fill_between(x, ci[order, 0], ci[order, 1], alpha=0.3, lw=0)
        ax.set_xlabel(f"{len(d):,} nodes, sorted by disclosure")
        ax.set_title("successor attribution, every node (sorted)")
    ax.axhline(report.mean_probability, color="tab:red", ls="--",
               label=f"mean {report.mean_probability:.3f}")
    ax.set_ylim(0, 1)
    ax.set_ylabel("disclosure probability (95% CI)")
    ax.legend()


def _plot_privacy(ax: Any, spent: list[tuple[str, float]]) -> bool:
    """ε spent per ledger (``protocol:party``); False when no party spent any."""
    if not spent:
        return False
    x = np.arange(len(spent))
    ax.bar(x, [e for _, e in spent], label="ε spent")
    ax.set_xticks(x, [n for n, _ in spent], rotation=60, fontsize=7)
    ax.set_ylabel("ε spent")
    ax.set_title("privacy spent per ledger")
    ax.legend()
    return True


def plot_summary(result: RunResult, path: Path) -> None:
    """``summary.svg`` at ``path``: :func:`summary_figure` saved."""
    summary_figure(result).save(path)


def summary_figure(result: RunResult) -> Any:
    """Accuracy vs baseline, the protocol's own panel, communication per party.

    An SVG :class:`~simulations.reporting.svg.Figure` (a notebook shows it inline).
    """
    p = result.prepared
    fig, axes = _figure()
    _plot_accuracy(axes[0], [(o.name, o.accuracy, o.baseline.name, o.baseline_accuracy)
                             for o in result.outcomes], p.run_id, p.data.dataset.name)
    ax = axes[1]
    drawn = any(_plugin_panel(ax, o) for o in result.outcomes)
    if not drawn and not _plot_privacy(ax, [(f"{o.name}:{party}", e) for o in result.outcomes
                                            for party, (e, _) in
                                            o.result.privacy.per_party.items()]):
        _nothing(ax)
    per = result.communication.get("per_party", {})
    _plot_communication(axes[2], {n: (per[n]["sent_bytes"], per[n]["received_bytes"])
                                  for n in per}, result.communication.get("messages"))
    return fig


def plot_folder(folder: Path, into: Path | None = None) -> list[Path]:
    """``summary.svg`` and ``leakage.svg`` of a run drawn from its folder's files.

    The same panels as a run renders, read from ``summary.json``,
    ``parties.csv``, ``disclosure.csv`` and ``leakage.csv``; the protocol's
    own panel is the per-node disclosure when the folder has
    ``disclosure.csv``, else the privacy spent per ledger. Written to
    ``into`` (default: the folder); returns the paths written.
    """
    import json

    from ppknn.simulations.leakage.table import plot_table, rows_from_csv
    from ppknn.simulations.reporting.csvio import read_rows

    into = folder if into is None else into
    summary = json.loads((folder / "summary.json").read_text())
    parties = read_rows(folder / "parties.csv") if (folder / "parties.csv").is_file() else []
    fig, axes = _figure()
    results = summary.get("results", {})
    _plot_accuracy(axes[0], [(name, r["accuracy"], r["baseline"]["name"],
                              r["baseline"]["accuracy"]) for name, r in results.items()],
                   summary["run_id"], summary["dataset"])
    if (folder / "disclosure.csv").is_file():
        plot_disclosure(axes[1], _disclosure_of(read_rows(folder / "disclosure.csv")))
    elif not _plot_privacy(axes[1], _spent_of(parties, list(results))):
        _nothing(axes[1])
    _plot_communication(axes[2], {r["party"]: (r.get("sent_bytes", 0), r.get("received_bytes", 0))
                                  for r in parties}, summary["communication"]["messages"])
    written = [into / "summary.svg"]
    fig.save(written[0])
    if (folder / "leakage.csv").is_file():
        rows = rows_from_csv(folder / "leakage.csv")
        written.append(plot_table(rows, into / "leakage.svg", title=summary["run_id"]))
    return written


def _disclosure_of(rows: list[dict[str, Any]]) -> DisclosureReport:
    from ppknn.core.leakage import Disclosure

    return DisclosureReport(
        adversary=str(rows[0]["adversary"]) if rows else "",
        parties=tuple(Disclosure(str(r["party"]), int(r["disclosed"]), int(r["trials"]),
                                 int(r["claimed_elements"]), int(r["correct_elements"]))
                      for r in rows))


def _spent_of(parties: list[dict[str, Any]], protocols: list[str]) -> list[tuple[str, float]]:
    """(``protocol:party``, ε spent) of every party with a ledger, from ``parties.csv``."""
    out = []
    for r in parties:
        for name in protocols:
            for key in (f"{name}:epsilon_spent", "epsilon_spent"):
                value = r.get(key)
                if value not in (None, "") and not (len(protocols) > 1 and ":" not in key):
                    out.append((f"{name}:{r['party']}", float(value)))
                    break
    return out


def _figure() -> tuple[Any, Any]:
    """A 15 x 4.2 in SVG figure of three panels side by side (:mod:`~.reporting.svg`)."""
    from ppknn.simulations.reporting.svg import Figure

    return Figure.grid(15, 4.2, rows=1, cols=3)


def _nothing(ax: Any) -> None:
    ax.text(0.5, 0.5, "no per-party privacy measure", ha="center", va="center")
    ax.set_axis_off()


def _plot_accuracy(ax: Any, entries: list[tuple[str, float, str, float]], run_id: str,
                   dataset: str) -> None:
    """Each protocol's accuracy beside its baseline's."""
    labels, values, colours = [], [], []
    for name, accuracy, baseline, baseline_accuracy in entries:
        labels += [name, baseline]
        values += [accuracy, baseline_accuracy]
        colours += ["tab:blue", "tab:gray"]
    bars = ax.bar(np.arange(len(values)), values, color=colours)
    ax.set_xticks(np.arange(len(values)), [lb.replace(" (", "\n(") for lb in labels],
                  fontsize=7)
    ax.bar_label(bars, fmt="%.3f")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    name = dataset if len(dataset) <= 48 else dataset[:47] + "…"
    ax.set_title(f"{run_id}: {name}\n{', '.join(e[0] for e in entries)}", fontsize=10)


def _plot_communication(ax: Any, per: dict[str, tuple[float, float]], count: Any) -> None:
    """KiB sent and received per party (sorted curves beyond 40 parties)."""
    names = list(per)
    sent = np.array([per[n][0] / 1024 for n in names], dtype=np.float64)
    recv = np.array([per[n][1] / 1024 for n in names], dtype=np.float64)
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
    ax.set_title(f"communication: {count} message{'' if count == 1 else 's'}")
    top = max(float(sent.max(initial=0.0)), float(recv.max(initial=0.0)))
    if top > 0:  # room above the bars for the legend
        ax.set_ylim(top=top * (4.0 if ax.get_yscale() == "log" else 1.25))
    ax.legend(loc="upper center", ncol=2)


def _plugin_panel(ax: Any, outcome: Any) -> bool:
    """The protocol's own panel (its plugin's ``plot``); a call the panel lacks is a warning.

    The panel takes the matplotlib ``Axes`` calls :mod:`~simulations.reporting.svg` lists;
    a plugin written for others loses its panel, not the run's results.
    """
    try:
        return bool(_plugin(outcome.name).plot(ax, outcome))
    except AttributeError as exc:
        warnings.warn(f"protocol {outcome.name!r}: its summary panel was not drawn ({exc}); "
                      "a plugin's plot(ax, outcome) gets a ppknn.simulations.reporting.svg."
                      "Panel, which takes the matplotlib Axes calls its docstring lists",
                      RuntimeWarning, stacklevel=2)
        ax.clear()
        return False


def _plugin(name: str) -> Any:
    from ppknn.simulations import registry

    return registry.get(name)


__all__ = ["RECORDED", "ScenarioRun", "plot_disclosure", "plot_folder", "plot_summary",
           "summary_figure",
           "prediction_rows", "party_rows", "summary_of",
           "write_disclosure_csv", "write_extras", "write_folder", "write_recorded"]
