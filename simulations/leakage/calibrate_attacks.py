"""Calibration of the single-run attacks: a control where nothing leaks, a planted leak.

Every default attack of every registered protocol (its plugin's
``adversaries``) is run over ``seeds`` seeds in two ways, each declared by
the protocol's plugin in a ``calibration`` module beside its ``attacks``
(``protocols/<name>/plugin/calibration.py``: ``scenario(seed)``, a small
in-process scenario, and ``CHECKS``, a tuple of :class:`Check`):

control (nothing leaks)
    the transcript carries nothing of the secret the attack reads: the
    target's secret is permuted across the run's trials (or drawn
    independently of the private data), or the protocol runs with a setting
    that hides it (a secret-shared sum, noise many times the range);
    the share of seeds whose row shows an advantage significantly above 0
    (its 95% interval's lower end above 0) must be at most 5%;
planted leak
    a deliberately leaky variant (noise off, the secret copied into the
    view, a role that reads it by design); the share of seeds flagged the
    same way must be at least 95%.

The row read per seed is the attack's first row of each quantity (a fixed
observer and target, one test per seed; a check may name the target).
Rates carry Wilson 95% intervals; a check that misses its target says the
figure and its reason (the check's ``limit``). A protocol whose plugin has no
calibration module, or an attack no check covers, is listed as not
calibrated.

Run through :mod:`simulations.leakage.calibrate` (``--only attacks``).
"""

from __future__ import annotations

import importlib
import math
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ppknn.core.leakage import wilson_interval
from ppknn.core.messages import Message

CONTROL, PLANTED = "control", "planted"
NOMINAL = 0.05


@dataclass(frozen=True)
class Scoring:
    """What a scorer reads: the transcript, the protocol's public facts, its ground truth."""

    transcript: Any
    public: Mapping[str, Any]
    truth: Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Variant:
    """How a calibration run differs from the plugin's scenario: section updates."""

    name: str
    changes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    deviation: tuple[Mapping[str, Any], ...] = ()
    """Deviating parties (``[[deviation]]`` entries: ``party``, ``kind``, ``params``)."""


HONEST = Variant("honest")
"""The plugin's calibration scenario as it is."""


@dataclass(frozen=True)
class Check:
    """One control or planted leak of one attack."""

    attack: str
    kind: str
    what: str
    variant: Variant = HONEST
    alter: Callable[[Scoring, np.random.Generator], Scoring] | None = None
    observers: tuple[str, ...] = ()
    limit: str = ""
    """Why the target may be missed (said in the report when it is)."""
    target: str = ""
    """The row read is the first of this target (default: the first row)."""
    pool: bool = False
    """Rows of one trial each (one request, one aggregate per target): the run's rows of
    the quantity are pooled as paired trials (:func:`pooled`) instead of the first read."""


@dataclass(frozen=True)
class Rate:
    """One calibration figure: seeds flagged among those run, for one check and quantity."""

    protocol: str
    attack: str
    quantity: str
    kind: str
    what: str
    flagged: int
    seeds: int
    trials: int
    median_advantage: float
    seconds: float
    limit: str = ""

    @property
    def rate(self) -> float:
        """The share of seeds flagged."""
        return self.flagged / self.seeds if self.seeds else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95% interval of :attr:`rate`."""
        return wilson_interval(self.flagged, self.seeds) if self.seeds else (math.nan,) * 2

    @property
    def passed(self) -> bool:
        """Control at most 5%, planted leak at least 95%."""
        if not self.seeds:
            return False
        return self.rate <= NOMINAL if self.kind == CONTROL else self.rate >= 1 - NOMINAL


# -- alterations of what a scorer reads -----------------------------------------------------

def permute(*keys: str) -> Callable[[Scoring, np.random.Generator], Scoring]:
    """The ground truth ``keys`` permuted along their first axis (one permutation for all)."""
    def alter(s: Scoring, rng: np.random.Generator) -> Scoring:
        n = len(np.asarray(s.truth[keys[0]]))
        order = rng.permutation(n)
        truth = dict(s.truth)
        for k in keys:
            truth[k] = np.asarray(s.truth[k])[order]
        return replace(s, truth=truth)
    return alter


def uniform_rows(key: str) -> Callable[[Scoring, np.random.Generator], Scoring]:
    """The ground truth ``key`` replaced by rows drawn uniformly on [0, 1] (its shape)."""
    def alter(s: Scoring, rng: np.random.Generator) -> Scoring:
        truth = dict(s.truth)
        truth[key] = rng.random(np.shape(s.truth[key]))
        return replace(s, truth=truth)
    return alter


def held_out_as_members(s: Scoring, rng: np.random.Generator) -> Scoring:
    """Membership truth whose "members" are held-out rows too: the model saw neither sample.

    The held-out rows are split at random into two halves, one named the members, the
    other the held-out rows, with class-matched picks of both
    (:func:`~simulations.sampling.matched_sample`).
    """
    from ppknn.simulations.sampling import matched_sample

    x, y = np.asarray(s.truth["others_X"]), np.asarray(s.truth["others_y"])
    order = rng.permutation(len(y))
    a, b = order[: len(y) // 2], order[len(y) // 2:]
    pick_in, pick_out = matched_sample(y[a], y[b], rng)
    truth = dict(s.truth, members_X=x[a], members_y=y[a], others_X=x[b], others_y=y[b],
                 members_pick=pick_in, others_pick=pick_out)
    return replace(s, truth=truth)


class _Edited:
    """A transcript whose messages are edited (what a scorer that reads views asks of one)."""

    def __init__(self, base: Any, edit: Callable[[Message], Message],
                 extra: Sequence[Message] = ()) -> None:
        self.base, self.edit, self.extra = base, edit, list(extra)

    def messages(self, *, with_provenance: bool = False, protocol: str | None = None
                 ) -> list[Message]:
        out = [self.edit(m) for m in self.base.messages(with_provenance=with_provenance,
                                                        protocol=protocol)]
        return out + [m for m in self.extra if protocol in (None, m.protocol)]


def copy_rows(truth_key: str, receiver: str, *, rows: int = 5, sender: str = ""
              ) -> Callable[[Scoring, np.random.Generator], Scoring]:
    """``rows`` rows of the secret ``truth_key`` added to every message ``receiver`` gets.

    The rows (drawn at random) ride in a payload field ``planted``; the scorer finds them
    whatever the field is called. When ``receiver`` gets no message, ``sender`` sends it
    one carrying them.
    """
    def alter(s: Scoring, rng: np.random.Generator) -> Scoring:
        secret = np.asarray(s.truth[truth_key], dtype=np.float64)
        planted = secret[rng.permutation(len(secret))[:rows]]

        def edit(m: Message) -> Message:
            if m.receiver != receiver:
                return m
            return replace(m, payload={**m.payload, "planted": planted})
        extra = []
        if sender and not any(m.receiver == receiver for m in s.transcript.messages()):
            first = s.transcript.messages()[0]
            extra = [Message(run_id=first.run_id, protocol=first.protocol, round=first.round,
                             seq=10**6, sender=sender, receiver=receiver, kind="planted",
                             payload={"planted": planted})]
        return replace(s, transcript=_Edited(s.transcript, edit, extra))
    return alter


# -- runs -------------------------------------------------------------------------------------

def calibration_module(protocol: str) -> Any | None:
    """The plugin's ``calibration`` module (``None`` when it has none)."""
    from ppknn.simulations import registry

    plugin = registry.find(protocol)
    if plugin is None:
        return None
    module = importlib.import_module(type(plugin).__module__)
    package = module.__name__ if hasattr(module, "__path__") else module.__name__.rsplit(".", 1)[0]
    try:
        return importlib.import_module(f"{package}.calibration")
    except ModuleNotFoundError as exc:
        if exc.name != f"{package}.calibration":
            raise
        return None


def merged(base: Mapping[str, Any], changes: Mapping[str, Mapping[str, Any]]) -> dict:
    """``base`` with each section updated by ``changes`` (a copy)."""
    out = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in base.items()}
    for section, values in changes.items():
        out.setdefault(section, {}).update(values)
    return out


def run_scoring(protocol: str, scenario: Mapping[str, Any],
                deviation: Sequence[Mapping[str, Any]] = ()) -> Scoring:
    """Run ``scenario`` in-process; the transcript, public facts and truth of ``protocol``.

    With ``deviation`` the named parties run as deviants (the deviant run alone: no
    honest twin is run beside it).
    """
    from ppknn.core.errors import PrivacyLeakWarning
    from ppknn.simulations.leakage.deviations import DeviatingRuntime
    from ppknn.simulations.leakage.measure import _jsonable
    from ppknn.simulations.leakage.truth import truth_of
    from ppknn.simulations.runner import execute, prepare, runtime_for
    from ppknn.simulations.scenario import parse_scenario

    parsed = parse_scenario(dict(scenario))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        if not deviation:
            result = execute(parsed)
        else:
            rt = runtime_for(parsed, [s.party_id for s in prepare(parsed).specs()])
            try:
                result = execute(parsed, runtime=DeviatingRuntime(
                    rt, [{"params": {}, **d} for d in deviation]))
            finally:
                rt.shutdown()
    (outcome,) = [o for o in result.outcomes if o.name == protocol]
    public = _jsonable(result.prepared.public()["protocols"][protocol])
    return Scoring(result.transcript, public, truth_of(outcome, result.prepared.data))


def score_check(protocol: str, check: Check, scoring: Scoring, seed: int
                ) -> dict[str, Any]:
    """The check's rows on one run: ``{quantity: first row}``."""
    from ppknn.simulations.leakage.attacks import Adversary
    from ppknn.simulations.leakage.measure import score

    if check.alter is not None:
        scoring = check.alter(scoring, np.random.default_rng([seed, 7919]))
    adv = Adversary(protocol, check.attack, tuple(check.observers))
    by_quantity: dict[str, list[Any]] = {}
    for row in score(protocol, scoring.transcript, scoring.public, scoring.truth, [adv]):
        if row.trials > 0 and check.target in ("", row.target):
            by_quantity.setdefault(row.quantity, []).append(row)
    return {q: pooled(rows) if check.pool else rows[0] for q, rows in by_quantity.items()}


def pooled(rows: Sequence[Any]) -> Any:
    """Rows of one paired trial each as one row: the attack's and the baseline's hits paired.

    The advantage is Newcombe's paired difference over the rows (each row's value and
    baseline are 0 or 1); ``trials`` is the number of rows.
    """
    from ppknn.simulations.leakage.table import newcombe_paired, with_baseline

    if any(r.trials != 1 for r in rows):
        raise ValueError(f"pooled rows must hold one trial each; got {[r.trials for r in rows]}")
    hits = np.array([r.value > 0.5 for r in rows])
    base = np.array([r.baseline > 0.5 for r in rows])
    return replace(with_baseline(rows[0], name=rows[0].baseline_name,
                                 baseline=(float(base.mean()), math.nan, math.nan),
                                 advantage=newcombe_paired(hits, base)),
                   value=float(hits.mean()), trials=len(rows))


def flagged(row: Any) -> bool:
    """Advantage significantly above 0: the lower end of its 95% interval is above 0."""
    return bool(math.isfinite(row.advantage_low) and row.advantage_low > 0)


def _runs(protocol: str, module: Any, checks: Sequence[Check], seeds: int
          ) -> Iterator[tuple[Check, int, dict[str, Any], float]]:
    """Each check's rows per seed; one run per variant and seed serves every check on it."""
    variants: dict[str, list[Check]] = {}
    for c in checks:
        variants.setdefault(c.variant.name, []).append(c)
    for group in variants.values():
        for seed in range(seeds):
            start = time.perf_counter()
            variant = group[0].variant
            scoring = run_scoring(protocol, merged(module.scenario(seed), variant.changes),
                                  variant.deviation)
            ran = (time.perf_counter() - start) / len(group)
            for c in group:
                t = time.perf_counter()
                rows = score_check(protocol, c, scoring, seed)
                yield c, seed, rows, ran + time.perf_counter() - t


def calibrate_protocol(protocol: str, *, seeds: int) -> list[Rate]:
    """Every check of ``protocol``'s calibration module over ``seeds`` seeds."""
    from ppknn.simulations.leakage import attacks

    module = calibration_module(protocol)
    defaults = [a.attack for a in attacks.defaults(protocol)]
    checks = tuple(getattr(module, "CHECKS", ())) if module is not None else ()
    tally: dict[tuple[int, str], list[Any]] = {}
    for c, _, rows, sec in _runs(protocol, module, checks, seeds):
        for q, row in rows.items():
            t = tally.setdefault((id(c), q), [c, 0, 0, 0, [], 0.0])
            t[1] += flagged(row)
            t[2] += 1
            t[3] = max(t[3], row.trials)
            t[4].append(row.advantage)
            t[5] += sec
    out = [Rate(protocol, c.attack, q, c.kind, c.what, f, n, trials,
                float(np.median(adv)) if adv else math.nan, sec, c.limit)
           for (_, q), (c, f, n, trials, adv, sec) in tally.items()]
    covered = {(r.attack, r.kind) for r in out}
    for name in defaults:
        for kind in (CONTROL, PLANTED):
            if (name, kind) not in covered:
                out.append(Rate(protocol, name, "", kind, "not calibrated: no check "
                                "(or no row) for this attack", 0, 0, 0, math.nan, 0.0,
                                "the protocol's plugin declares no such check (a "
                                "`calibration` module beside its attacks), or its runs "
                                "scored no row of the attack"))
    return out


def calibrate_attacks(*, seeds: int = 100, protocols: Sequence[str] | None = None
                      ) -> list[Rate]:
    """Every registered protocol's checks (or those of ``protocols``)."""
    from ppknn.simulations import registry

    out: list[Rate] = []
    for name in protocols or registry.names():
        out.extend(calibrate_protocol(name, seeds=seeds))
    return out


# -- report ---------------------------------------------------------------------------------

CSV_FIELDS = ("protocol", "attack", "quantity", "kind", "what", "flagged", "seeds", "rate",
              "ci_low", "ci_high", "passed", "trials", "median_advantage", "seconds", "limit")


def write_csv(rates: Sequence[Rate], path: Any) -> None:
    """``attacks.csv``: one row per attack, quantity and check."""
    import csv

    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_FIELDS)
        for r in rates:
            lo, hi = r.interval
            writer.writerow([r.protocol, r.attack, r.quantity, r.kind, r.what, r.flagged,
                             r.seeds, f"{r.rate:.4g}", f"{lo:.4g}", f"{hi:.4g}", r.passed,
                             r.trials, f"{r.median_advantage:.4g}", f"{r.seconds:.3g}",
                             "" if r.passed else r.limit])


def _label(r: Rate) -> str:
    q = f" ({r.quantity.split(' (')[0][:40]})" if r.quantity else ""
    return f"{r.protocol}: {r.attack}{q}"


def write_plot(rates: Sequence[Rate], path: Any, *, title: str) -> None:
    """Control and planted-leak rates per attack with Wilson 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(_label(r) for r in rates))
    fig, ax = plt.subplots(figsize=(11, 0.32 * len(labels) + 1.8))
    for i, (kind, colour) in enumerate(((CONTROL, "tab:blue"), (PLANTED, "tab:red"))):
        sub = {_label(r): r for r in rates if r.kind == kind and r.seeds}
        ys = [j + 0.2 * (2 * i - 1) for j, lab in enumerate(labels) if lab in sub]
        xs = [sub[lab].rate for lab in labels if lab in sub]
        err = [[sub[lab].rate - sub[lab].interval[0] for lab in labels if lab in sub],
               [sub[lab].interval[1] - sub[lab].rate for lab in labels if lab in sub]]
        ax.errorbar(xs, ys, xerr=err, fmt="o", color=colour, capsize=2, ms=4,
                    label=f"{kind} (at {'most 5%' if kind == CONTROL else 'least 95%'})")
    ax.axvline(NOMINAL, color="tab:blue", ls=":")
    ax.axvline(1 - NOMINAL, color="tab:red", ls=":")
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(-0.03, 1.03)
    ax.set_xlabel("share of seeds whose advantage is significantly above 0 (Wilson 95%)")
    ax.set_ylabel("protocol: attack (quantity)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    from ppknn.simulations.reporting.plots import save_png

    save_png(fig, path, dpi=72)
    plt.close(fig)


def markdown_lines(rates: Sequence[Rate], *, seconds: float) -> list[str]:
    """The report's attack section: one table line per attack, quantity and check."""
    seeds = max((r.seeds for r in rates), default=0)
    lines = ["## Single-run attacks: controls (at most 5%) and planted leaks (at least 95%)",
             "", f"Every default attack of every protocol, {seeds} seeds per check, in-process "
             f"on small data ({seconds:.0f} s; `--only attacks`). A seed is flagged when the "
             "attack's first row of the quantity has an advantage over its baseline whose "
             "95% interval lies above 0. The control's rate is the false-positive rate; the "
             "planted leak's is the power (its Wilson lower end: the power the seeds "
             "certify). Checks and their scenarios: `protocols/<protocol>/plugin/"
             "calibration.py`.", "",
             "| protocol | attack (quantity) | check | flagged | rate [Wilson 95%] | met | "
             "median advantage | variant |", "|---|---|---|---|---|---|---|---|"]
    for r in rates:
        lo, hi = r.interval
        q = f" ({r.quantity})" if r.quantity else ""
        met = "yes" if r.passed else "NO"
        lines.append(f"| {r.protocol} | {r.attack}{q} | {r.kind} | {r.flagged}/{r.seeds} | "
                     f"{r.rate:.2f} [{lo:.3f}, {hi:.3f}] | {met} | {r.median_advantage:.3g} | "
                     f"{r.what} |")
    missed = [r for r in rates if not r.passed]
    if missed:
        lines += ["", "Targets not reached, with the reason:", ""]
        lines += [f"- {r.protocol} {r.attack} ({r.kind}): {r.flagged}/{r.seeds} flagged; "
                  f"{r.limit or 'no reason recorded'}" for r in missed]
    return lines


__all__ = ["CONTROL", "HONEST", "PLANTED", "Check", "Rate", "Scoring", "Variant",
           "calibrate_attacks", "calibrate_protocol", "calibration_module", "copy_rows",
           "flagged", "held_out_as_members", "markdown_lines", "merged", "permute", "pooled",
           "run_scoring", "score_check", "uniform_rows", "write_csv", "write_plot"]
