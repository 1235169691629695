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
                         communication, timings (start-up, protocol, recorded:
                         writing the public facts and ground truth, measure,
                         leakage scoring), randomness mode
      summary.png        accuracy vs baseline, the protocol's own panel, bytes per party
      transcript/        every message (Parquet parts) and totals.json; each protocol's
                         ground truth for the scorers (truth-PROTOCOL.npz)
      disclosure.csv     (ppknn-ring) per node: disclosure probability, 95% interval
      leakage.csv        every protocol: one row per (observer, target, attack): measured
                         quantity, 95% interval, promised bound, verdict (also leakage.png
                         and the ``leakage`` section of summary.json)

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ppknn.core.leakage import DisclosureReport
from ppknn.core.rng import describe as describe_randomness
from ppknn.simulations.reporting import jsonio
from ppknn.simulations.reporting.csvio import write_rows
from ppknn.simulations.reporting.plots import save_png
from ppknn.simulations.runner import ProtocolOutcome, RunResult, execute

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
    ``incomplete`` (:data:`RECORDED`). :func:`write_results` writes all three
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


def write_results(result: RunResult, output: str | Path) -> Path:
    """Write the results folder (see module docstring); returns its path."""
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    _write_facts(result, out)
    write_rows(out / "predictions.csv", prediction_rows(result))
    write_rows(out / "parties.csv", party_rows(result))
    for o in result.outcomes:
        if isinstance(o.leakage, DisclosureReport):
            write_disclosure_csv(o.leakage, out / "disclosure.csv")
    summary = summary_of(result)
    t0 = time.perf_counter()
    summary["leakage"] = write_leakage(result, out)
    # scoring every adversary is part of what a run costs: timed beside the run's phases
    summary["timings_s"]["leakage_s"] = time.perf_counter() - t0
    (out / "summary.json").write_text(jsonio.dumps(summary, default=float))
    plot_summary(result, out / "summary.png")
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


def run_scenario(scenario: Any, *, stage: Path | None = None,
                 progress: Callable[[str, int, int], None] | None = None,
                 wait_for_shutdown: bool = True) -> ScenarioRun:
    """Everything a scenario asks for, as ``ppknn run`` and ``ppknn.run`` do it.

    With ``stage``, the results folder is written there: what scoring needs
    as soon as the protocols complete (:func:`write_recorded`), then the
    results, the audit and the deviation report (:func:`write_extras`).
    Without, nothing is written and the transcript stays in memory.
    """
    recorded = None if stage is None else (lambda run: write_recorded(run, stage))
    transcript_dir = None if stage is None else stage / "transcript"
    deviations = None
    if scenario.deviation:  # the deviant run beside its honest twin
        from ppknn.simulations.leakage.deviations import run_with_deviations

        run, deviations = run_with_deviations(scenario, transcript_dir=transcript_dir,
                                              progress=progress, recorded=recorded)
    else:
        run = execute(scenario, transcript_dir=transcript_dir, progress=progress,
                      wait_for_shutdown=wait_for_shutdown, recorded=recorded)
    if stage is not None:
        write_results(run, stage)
    audit = None
    if scenario.audit.trials:
        from ppknn.simulations.leakage.audit import audit_scenario

        audit = audit_scenario(scenario, progress=progress)
    done = ScenarioRun(run, deviations, audit)
    if stage is not None:
        write_extras(done, stage)
    return done


def write_extras(done: ScenarioRun, out: Path) -> None:
    """``audit.csv``/``audit.json`` and ``deviations.json``/``deviations.csv``, when run."""
    if done.audit is not None:
        from ppknn.simulations.leakage.audit import write_audit

        write_audit(done.audit, out)
    if done.deviations is not None:
        from ppknn.simulations.leakage.deviations import write_report

        write_report(done.deviations, out)


def write_leakage(result: RunResult, out: Path) -> dict[str, Any]:
    """``leakage.csv`` and ``leakage.png`` of a run; returns the summary's ``leakage`` section.

    The ground truth the scorers need is read from ``OUT/transcript`` when
    :func:`write_recorded` saved it there, else computed and saved there
    first, so ``ppknn leakage OUT`` recomputes the same table from the folder
    alone.
    """
    from ppknn.simulations import leakage

    folder = out / "transcript"
    rows = leakage.run_table(result, truth_dir=folder if folder.is_dir() else None)
    leakage.write_table(rows, out / "leakage.csv")
    leakage.plot_table(rows, out / "leakage.png", title=result.prepared.run_id)
    return leakage.summary(rows)


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


def _plot_privacy(ax: Any, outcomes: tuple[ProtocolOutcome, ...]) -> bool:
    spent = [(f"{o.name}:{p}", e) for o in outcomes
             for p, (e, _) in o.result.privacy.per_party.items()]
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
    """Accuracy vs baseline, the protocol's own panel, communication per party."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = result.prepared
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    labels, values, colours = [], [], []
    for o in result.outcomes:
        labels += [o.name, f"{o.baseline.name}"]
        values += [o.accuracy, o.baseline_accuracy]
        colours += ["tab:blue", "tab:gray"]
    bars = ax.bar(np.arange(len(values)), values, color=colours)
    ax.set_xticks(np.arange(len(values)), [lb.replace(" (", "\n(") for lb in labels],
                  fontsize=7)
    ax.bar_label(bars, fmt="%.3f")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    name = p.data.dataset.name if len(p.data.dataset.name) <= 48 else \
        p.data.dataset.name[:47] + "…"
    ax.set_title(f"{p.run_id}: {name}\n{', '.join(o.name for o in result.outcomes)}",
                 fontsize=10)

    ax = axes[1]
    drawn = any(o_plugin.plot(ax, o) for o in result.outcomes
                for o_plugin in [_plugin(o.name)])
    if not drawn and not _plot_privacy(ax, result.outcomes):
        ax.text(0.5, 0.5, "no per-party privacy measure", ha="center", va="center")
        ax.set_axis_off()

    ax = axes[2]
    per = result.communication.get("per_party", {})
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
    count = result.communication.get("messages")
    ax.set_title(f"communication: {count} message{'' if count == 1 else 's'}")
    top = max(float(sent.max(initial=0.0)), float(recv.max(initial=0.0)))
    if top > 0:  # room above the bars for the legend
        ax.set_ylim(top=top * (4.0 if ax.get_yscale() == "log" else 1.25))
    ax.legend(loc="upper center", ncol=2)
    fig.tight_layout()
    save_png(fig, path, dpi=110)
    plt.close(fig)


def _plugin(name: str) -> Any:
    from ppknn.simulations import registry

    return registry.get(name)


__all__ = ["RECORDED", "ScenarioRun", "plot_disclosure", "plot_summary", "prediction_rows",
           "party_rows", "run_scenario", "summary_of", "write_disclosure_csv", "write_extras",
           "write_leakage", "write_recorded", "write_results"]
