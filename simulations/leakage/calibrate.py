"""Calibration of the audits: controls, planted leaks and known-ε references.

Three checks of every worst-case audit (:mod:`simulations.leakage.worstcase`):

controls (nothing leaks)
    both samples drawn from input ``a`` (the ε = 0 variant of the pair) and
    the honest release on its pair; over ``seeds`` seeds, the share of audits
    whose lower bound is above its bound (0 for the identical inputs, the
    claim for the honest release) must be at most the nominal 5%.
planted leaks
    the release with half its noise scale (``half-noise``: the true ε is twice
    the claim) and with no noise (``no-noise``: never randomise); the share
    of seeds whose bound is above the claim must be at least 95%.
known-ε references
    the audit's bound over the event's analytic maximum on hand-built pairs,
    at ε = 1 and 4; target at least 0.8. The one-run audit (Steinke, Nasr &
    Jagielski 2023) is run beside it where a run holds many independent
    releases.

The single-run attacks (every protocol's default attacks) are calibrated
the same way, a control where nothing leaks and a planted leak each
(:mod:`simulations.leakage.calibrate_attacks`).

Rates carry Wilson 95% intervals. Writes ``calibration.csv``,
``calibration.png`` and ``calibration.md`` (the audits, and the attacks'
section of the report) and ``attacks.csv`` and ``attacks.png`` into
``--out``; ``--only`` runs one half (the other half's section of the
report is then left out)::

    python -m ppknn.simulations.leakage.calibrate --out docs/calibration
    python -m ppknn.simulations.leakage.calibrate --only attacks --out /tmp/cal   # ~6 min
    python -m ppknn.simulations.leakage.calibrate --seeds 10 --out /tmp/cal   # quick
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ppknn.core.leakage import wilson_interval
from ppknn.simulations.leakage import worstcase as wc

EPSILONS = (1.0, 4.0)
TARGET_RATIO = 0.8
NOMINAL = 0.05


@dataclass(frozen=True)
class Row:
    """One line of ``calibration.csv``."""

    check: str
    case: str
    epsilon: float
    claimed: float
    analytic: float
    value: float
    ci_low: float
    ci_high: float
    seeds: int
    n_samples: int
    seconds: float
    passed: bool
    note: str


def _rate_row(check: str, case: wc.Case, epsilon: float, hits: int, seeds: int, n: int,
              seconds: float, *, at_most: float | None = None,
              at_least: float | None = None, note: str = "") -> Row:
    lo, hi = wilson_interval(hits, seeds)
    rate = hits / seeds
    passed = (rate <= at_most) if at_most is not None else (rate >= (at_least or 0.0))
    return Row(check, case.name, epsilon, case.claimed, case.analytic, rate, lo, hi, seeds, n,
               seconds, passed, note)


def _identical(case: wc.Case) -> wc.Case:
    def draw(which: str, rng, n):  # noqa: ANN001 - the Case draw signature
        return case.draw("a", rng, n)
    return replace(case, draw=draw, pair=f"{case.pair}; both samples from the first input",
                   analytic=0.0)


def _audit_seeds(case: wc.Case, seeds: int, n: int) -> tuple[list[float], float]:
    start = time.perf_counter()
    values = [wc.run_case(case, n_samples=n, seed=s).eps_lower for s in range(seeds)]
    return values, time.perf_counter() - start


def calibrate(*, seeds: int = 100, epsilons: Sequence[float] = EPSILONS,
              certify: float = wc.DEFAULT_CERTIFY, one_run_canaries: int = 20_000) -> list[Row]:
    """Every check of the module docstring; one :class:`Row` per check and case."""
    rows: list[Row] = []
    for eps in epsilons:
        for case in wc.reference_cases(eps):
            n = wc.planned_trials(case, certify)
            res = wc.run_case(case, n_samples=n, seed=0)
            rows.append(Row("reference", case.name, eps, case.claimed, case.analytic,
                            res.eps_lower, res.eps_lower, res.ceiling, 1, n, res.seconds,
                            res.ratio >= TARGET_RATIO,
                            f"{case.pair}; bound / maximum {res.ratio:.3f}"))
            if case.one_run_ok:
                start = time.perf_counter()
                one = wc.one_run(case, canaries=one_run_canaries, seed=0)
                ratio = one.eps_lower / case.analytic
                rows.append(Row("one-run", case.name, eps, case.claimed, case.analytic,
                                one.eps_lower, one.eps_lower, math.nan, 1, one.canaries,
                                time.perf_counter() - start, ratio <= 1.0 + 1e-9,
                                f"{one.correct} of {one.guesses} guesses right among "
                                f"{one.canaries} canaries; bound / maximum {ratio:.3f}"))
    eps = 1.0
    for case in wc.reference_cases(eps):
        n = wc.planned_trials(case, certify)
        same = _identical(case)
        vals, sec = _audit_seeds(same, seeds, n)
        rows.append(_rate_row("control: identical inputs", case, eps,
                              sum(v > 0 for v in vals), seeds, n, sec, at_most=NOMINAL,
                              note="share of seeds with a bound above 0"))
        vals, sec = _audit_seeds(case, seeds, n)
        rows.append(_rate_row("control: honest release", case, eps,
                              sum(v > case.claimed for v in vals), seeds, n, sec,
                              at_most=NOMINAL, note=f"share of seeds above the claim; "
                              f"largest bound {max(vals):.3f}"))
    for deviation in ("half-noise", "no-noise"):
        for case in wc.reference_cases(eps, deviation):
            n = wc.planned_trials(replace(case, analytic=case.claimed), certify)
            vals, sec = _audit_seeds(case, seeds, n)
            rows.append(_rate_row(f"planted: {deviation}", case, eps,
                                  sum(v > case.claimed for v in vals), seeds, n, sec,
                                  at_least=1 - NOMINAL,
                                  note=f"share of seeds above the claim; smallest bound "
                                       f"{min(vals):.3f}"))
    return rows


def write_csv(rows: Sequence[Row], path: Path) -> None:
    """``calibration.csv``: one row per check and case."""
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(asdict(rows[0])))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v)
                             for k, v in asdict(r).items()})


def write_plot(rows: Sequence[Row], path: Path) -> None:
    """Left: bound / analytic maximum per reference; right: control and planted rates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5))
    refs = [r for r in rows if r.check == "reference"]
    for i, eps in enumerate(sorted({r.epsilon for r in refs})):
        sub = [r for r in refs if r.epsilon == eps]
        xs = [j + 0.4 * i for j in range(len(sub))]
        left.bar(xs, [r.value / r.analytic for r in sub], width=0.4, label=f"ε = {eps:g}")
        left.set_xticks([j + 0.2 for j in range(len(sub))], [r.case for r in sub],
                        rotation=35, ha="right", fontsize=8)
    left.axhline(TARGET_RATIO, color="k", ls="--", label=f"target {TARGET_RATIO}")
    left.set_ylabel("audit lower bound / event's analytic maximum")
    left.set_title("known-ε references (worst-case pairs)")
    left.legend()
    rates = [r for r in rows if r.check.startswith(("control", "planted"))]
    kinds = sorted({r.check for r in rates})
    cases = list(dict.fromkeys(r.case for r in rates))
    width = 0.8 / max(1, len(kinds))
    for i, kind in enumerate(kinds):
        sub = {r.case: r for r in rates if r.check == kind}
        xs = [j + width * i for j, c in enumerate(cases) if c in sub]
        vals = [sub[c].value for c in cases if c in sub]
        err = [[sub[c].value - sub[c].ci_low for c in cases if c in sub],
               [sub[c].ci_high - sub[c].value for c in cases if c in sub]]
        right.bar(xs, vals, width=width, yerr=err, capsize=2, label=kind)
    right.axhline(NOMINAL, color="r", ls=":", label="5% (controls at most)")
    right.axhline(1 - NOMINAL, color="g", ls=":", label="95% (planted at least)")
    right.set_xticks([j + 0.4 - width / 2 for j in range(len(cases))], cases, rotation=35,
                     ha="right", fontsize=8)
    right.set_ylabel(f"share of {rates[0].seeds if rates else 0} seeds flagged (Wilson 95%)")
    right.set_title("controls and planted leaks at ε = 1")
    right.legend(fontsize=7)
    fig.suptitle("ppknn audit calibration: python -m ppknn.simulations.leakage.calibrate")
    fig.tight_layout()
    from ppknn.simulations.reporting.plots import save_png

    save_png(fig, path, dpi=80)
    plt.close(fig)


def write_markdown(rows: Sequence[Row], path: Path, seconds: float,
                   attack_lines: Sequence[str] = ()) -> None:
    """``calibration.md``: the tables, each row with its pass mark."""
    if not rows:
        path.write_text("\n".join(["# Calibration", "", *attack_lines]) + "\n")
        return
    lines = ["# Audit and attack calibration", "",
             "Generated by `python -m ppknn.simulations.leakage.calibrate --out "
             "docs/calibration` (2-core shared machine; timings are loaded-machine figures, "
             f"the audits took {seconds:.0f} s). Every audit draws the release's noise "
             "for all trials as one array through the protocol's own mechanism; the trial "
             "count is planned to certify ε = 5 (and the case's own ε).", "",
             "![calibration](calibration.png)", "",
             "## Known-ε references (target: bound ≥ 0.8 × the event's analytic maximum)", "",
             "| case | ε | claimed | analytic max | bound | bound / max | draws per input | "
             "seconds | pass |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.check == "reference":
            lines.append(f"| {r.case} | {r.epsilon:g} | {r.claimed:.4g} | {r.analytic:.4g} | "
                         f"{r.value:.4g} | {r.value / r.analytic:.3f} | {r.n_samples} | "
                         f"{r.seconds:.2f} | {'yes' if r.passed else 'NO'} |")
    lines += ["", "Pairs: " + "; ".join(sorted({f"{r.case} at ε = {r.epsilon:g}: "
                                               f"{r.note.split('; bound')[0]}"
                                               for r in rows if r.check == "reference"})), "",
              "## One-run audits (Steinke, Nasr & Jagielski 2023)", "",
              "| case | ε | analytic max | bound | note |", "|---|---|---|---|---|"]
    for r in rows:
        if r.check == "one-run":
            lines.append(f"| {r.case} | {r.epsilon:g} | {r.analytic:.4g} | {r.value:.4g} | "
                         f"{r.note} |")
    lines += ["", "## Controls (at most 5%) and planted leaks (at least 95%), ε = 1", "",
              "| check | case | rate | Wilson 95% | seeds | draws per input | pass | note |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.check.startswith(("control", "planted")):
            lines.append(f"| {r.check} | {r.case} | {r.value:.3f} | [{r.ci_low:.3f}, "
                         f"{r.ci_high:.3f}] | {r.seeds} | {r.n_samples} | "
                         f"{'yes' if r.passed else 'NO'} | {r.note} |")
    if attack_lines:
        lines += ["", "![attacks](attacks.png)", "", *attack_lines]
    path.write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (module docstring)."""
    from ppknn.simulations.leakage import calibrate_attacks as ca

    parser = argparse.ArgumentParser(prog="python -m ppknn.simulations.leakage.calibrate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("calibration"))
    parser.add_argument("--only", choices=("audits", "attacks"), default=None)
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds {args.seeds}: allowed >= 1")
    start = time.perf_counter()
    rows = calibrate(seeds=args.seeds) if args.only != "attacks" else []
    audit_seconds = time.perf_counter() - start
    rates = ca.calibrate_attacks(seeds=args.seeds) if args.only != "audits" else []
    attack_seconds = time.perf_counter() - start - audit_seconds
    args.out.mkdir(parents=True, exist_ok=True)
    if rows:
        write_csv(rows, args.out / "calibration.csv")
        write_plot(rows, args.out / "calibration.png")
    lines: list[str] = []
    if rates:
        ca.write_csv(rates, args.out / "attacks.csv")
        ca.write_plot(rates, args.out / "attacks.png", title=(
            f"ppknn attack calibration, {args.seeds} seeds per check\n"
            "python -m ppknn.simulations.leakage.calibrate"))
        lines = ca.markdown_lines(rates, seconds=attack_seconds)
    write_markdown(rows, args.out / "calibration.md", audit_seconds, lines)
    failed = [f"{r.check} {r.case} ε = {r.epsilon:g}: {r.value:.4g} ({r.note})"
              for r in rows if not r.passed]
    failed += [f"{r.kind} {r.protocol} {r.attack} {r.quantity}: {r.flagged}/{r.seeds} "
               f"({r.limit or 'no reason recorded'})" for r in rates if not r.passed]
    for line in failed:
        print(f"NOT MET: {line}")
    total = len(rows) + len(rates)
    print(f"{total - len(failed)} of {total} checks met; written to {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
