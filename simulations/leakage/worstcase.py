"""Worst-case audits, vectorised over trials: each DP release on its most revealing neighbours.

Re-running a whole protocol per trial costs seconds per trial and gives a
few hundred draws, which cannot certify ε above about 3. Every DP release
of the project is a pure function of its data and its noise, so an audit
here draws the noise of **all trials as one array** through the protocol's
own mechanism code on a hand-built (or searched) pair of neighbouring
inputs, and hands the two samples to :func:`core.dp.audit.audit`.

Each :class:`Case` states the pair, the ε the release promises for it, and
the **event's analytic maximum**: the largest ``ln P(E | a) / P(E | b)``
over events of the observed output, computed exactly from the mechanism's
distribution (a probability-ratio bound no finite audit can exceed). The
cases:

``laplace-count`` (reference)
    :class:`core.dp.Laplace` on a count ``c`` vs ``c + 1``; maximum ε.
``randomised-response`` (reference)
    a bit kept with probability ``e^ε / (1 + e^ε)``; maximum ε.
each protocol's own cases
    built by its plugin (``protocols/<name>/plugin/audit.py``, through the
    ``worst_case`` and ``worst_case_references`` hooks), documented there.

Planted leaks (``deviation``): ``"half-noise"`` halves every noise scale
(or the exponential mechanism's temperature), ``"noise-scale=s"`` multiplies
it by ``s``, ``"no-noise"`` releases the exact value (never randomise).

:func:`one_run` is the one-run audit of Steinke, Nasr & Jagielski (2023):
``m`` canaries, each in or out by a fair coin, released in **one** run by
independent releases; it applies where one run holds many independent
releases of the same kind (``one_run_ok``): dp-knn's disjoint regions of
one batch, DP-TT's per-query decisions, the PCA release's rows, and the
references.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ppknn.core.dp import Laplace
from ppknn.core.dp.audit import (
    audit,
    certifiable_epsilon,
    expected_bound,
    one_run_epsilon,
    trials_to_certify,
)
from ppknn.core.errors import ConfigError

DEVIATIONS = ("none", "half-noise", "no-noise")
DEFAULT_CERTIFY = 5.0
"""The ε a default audit has the power to certify (see :func:`core.dp.audit.trials_to_certify`)."""

Draw = Callable[[str, np.random.Generator, int], np.ndarray]


@dataclass(frozen=True)
class Case:
    """One release on one neighbouring pair, vectorised over trials.

    Attributes
    ----------
    name, protocol:
        What is audited.
    pair:
        The neighbouring inputs, in words.
    claimed:
        The ε the release promises for this pair.
    analytic:
        The event's analytic maximum (module docstring), exact.
    draw:
        ``(which, rng, n) -> n`` scalar outputs on input ``"a"`` or ``"b"``.
    one_run_ok:
        Whether one run holds many independent releases of this kind.
    deviation:
        The planted leak (``"none"``: the honest release).
    """

    name: str
    protocol: str
    pair: str
    claimed: float
    analytic: float
    draw: Draw
    one_run_ok: bool = False
    deviation: str = "none"


@dataclass(frozen=True)
class CaseResult:
    """What :func:`run_case` measured."""

    case: Case
    eps_lower: float
    ceiling: float
    n_samples: int
    event: str
    seconds: float
    hits: tuple[int, int] = (0, 0)

    @property
    def ratio(self) -> float:
        """The bound as a share of the event's analytic maximum."""
        return self.eps_lower / self.case.analytic if self.case.analytic > 0 else math.nan


def noise_factor(deviation: str) -> float:
    """The factor a planted leak multiplies the release's ε by (``inf``: no noise)."""
    if deviation.startswith("noise-scale="):
        scale = float(deviation.split("=", 1)[1])
        if not (math.isfinite(scale) and scale > 0):
            raise ConfigError(f"deviation {deviation!r}: the scale must be a finite value > 0")
        return 1.0 / scale
    if deviation not in DEVIATIONS:
        raise ConfigError(f"deviation {deviation!r}: allowed {list(DEVIATIONS)}")
    return {"none": 1.0, "half-noise": 2.0, "no-noise": math.inf}[deviation]


def discrete_max(pa: np.ndarray, pb: np.ndarray) -> float:
    """Largest ``|ln pa(o)/pb(o)|`` over outcomes (an event's ratio never exceeds it)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.abs(np.log(pa) - np.log(pb))
    r = r[(pa > 0) | (pb > 0)]
    return float(np.max(r)) if r.size else 0.0


def best_planned(pa: np.ndarray, pb: np.ndarray, n_test: int, confidence: float) -> float:
    """The best expected bound over single-outcome events at ``n_test`` test draws."""
    best = 0.0
    for num, den in ((pa, pb), (pb, pa)):
        for p, q in zip(num, den, strict=True):
            if p > 0:
                best = max(best, expected_bound(float(p), float(q), n_test, confidence))
    return best


# --- references ---------------------------------------------------------------------------


def laplace_count(epsilon: float, deviation: str = "none") -> Case:
    """A count ``10`` vs ``11`` released by :class:`core.dp.Laplace` (sensitivity 1)."""
    eff = epsilon * noise_factor(deviation)

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        value = np.full(n, 10.0 if which == "a" else 11.0)
        if eff == math.inf:
            return value
        return np.asarray(Laplace(epsilon=eff, sensitivity=1.0).randomise(value, rng).value)

    return Case("laplace-count", "reference", "count 10 vs 11", epsilon,
                eff if eff < math.inf else math.inf, draw, one_run_ok=True, deviation=deviation)


def randomised_response(epsilon: float, deviation: str = "none") -> Case:
    """One private bit (0 vs 1) kept with probability ``e^ε / (1 + e^ε)``."""
    eff = epsilon * noise_factor(deviation)
    keep = 1.0 if eff == math.inf else 1.0 / (1.0 + math.exp(-eff))

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        bit = 0.0 if which == "a" else 1.0
        flip = rng.random(n) >= keep
        return np.where(flip, 1.0 - bit, bit)

    return Case("randomised-response", "reference", "bit 0 vs 1", epsilon,
                eff, draw, one_run_ok=True, deviation=deviation)


# --- shared by the protocols' cases ---------------------------------------------------------


def count_case(name: str, protocol: str, eps_count: float, claimed: float, note: str,
               deviation: str) -> Case:
    """A class-count release (Laplace, sensitivity 1) at ``eps_count``, promising ``claimed``."""
    base = laplace_count(eps_count, deviation)
    return replace(base, name=name, protocol=protocol, claimed=claimed,
                   pair=f"class count 10 vs 11 (one record added); {note}", one_run_ok=False)










def reference_cases(epsilon: float = 1.0, deviation: str = "none") -> list[Case]:
    """Every case at one ε: the two references, then each registered protocol's.

    A protocol's cases come from its plugin's ``worst_case_references`` hook
    (DP-TT's set-up ε chosen so its decision ε is ``epsilon``).
    """
    from ppknn.simulations import registry

    cases = [laplace_count(epsilon, deviation), randomised_response(epsilon, deviation)]
    for plugin in registry.plugins():
        cases += plugin.worst_case_references(epsilon, deviation)
    return cases


# --- running ----------------------------------------------------------------------------------


def planned_trials(case: Case, certify: float = DEFAULT_CERTIFY,
                   confidence: float = 0.95) -> int:
    """Draws per input: the power to certify ``certify`` and to resolve the case's own ε.

    :func:`core.dp.audit.trials_to_certify` of ``certify`` and of the smaller
    of the claim and the event's maximum at 95% of it (a small ε needs
    relative precision more than a large one), whichever is larger.
    """
    n = trials_to_certify(certify, confidence)
    small = min(case.claimed, case.analytic)
    if math.isfinite(small) and small > 0:
        n = max(n, trials_to_certify(small, confidence, fraction=0.95))
    return n


def run_case(case: Case, *, n_samples: int | None = None, certify: float = DEFAULT_CERTIFY,
             seed: int = 0, confidence: float = 0.95) -> CaseResult:
    """Audit ``case`` with ``n_samples`` draws per input (default: planned for ``certify``)."""
    n = int(n_samples) if n_samples is not None else planned_trials(case, certify, confidence)
    start = time.perf_counter()
    res = audit(case.draw, "a", "b", n_samples=n, rng=np.random.default_rng(seed),
                confidence=confidence, vectorized=True)
    return CaseResult(case, res.eps_lower, certifiable_epsilon(n - n // 2, confidence), n,
                      res.event, time.perf_counter() - start, res.hits)


@dataclass(frozen=True)
class OneRunResult:
    """A one-run audit: canaries, guesses, right guesses and the ε bound."""

    canaries: int
    guesses: int
    correct: int
    eps_lower: float


def one_run(case: Case, *, canaries: int = 10_000, guess_fraction: float = 0.1, seed: int = 0,
            confidence: float = 0.95) -> OneRunResult:
    """One run with ``canaries`` independent releases, each on input a or b by a fair coin.

    The auditor scores each canary by how much more likely its output is
    under ``b`` (an event chosen on a separate pilot of the same size), then
    guesses only the ``guess_fraction`` most confident at each end (abstaining
    on the rest) and applies :func:`core.dp.audit.one_run_epsilon`.
    """
    if not case.one_run_ok:
        raise ConfigError(f"{case.name}: one run holds a single release of this kind; "
                          "use the repeated-trials audit")
    rng = np.random.default_rng(seed)
    pilot_a, pilot_b = case.draw("a", rng, canaries), case.draw("b", rng, canaries)
    values = np.unique(np.concatenate([pilot_a, pilot_b]))
    if values.size <= 64:  # discrete: score = empirical log ratio of the output's value
        def score(out: np.ndarray) -> np.ndarray:
            ca = np.array([(pilot_a == v).sum() for v in values]) + 0.5
            cb = np.array([(pilot_b == v).sum() for v in values]) + 0.5
            return np.log(cb / ca)[np.searchsorted(values, out)]
    else:  # continuous, monotone likelihood ratio: the output itself orders the canaries
        def score(out: np.ndarray) -> np.ndarray:
            return out if np.median(pilot_b) >= np.median(pilot_a) else -out
    inside = rng.random(canaries) < 0.5
    out = np.where(inside, case.draw("b", rng, canaries), case.draw("a", rng, canaries))
    s = score(out) + rng.random(canaries) * 1e-9  # break ties at random
    m = max(1, int(guess_fraction * canaries / 2))
    order = np.argsort(s)
    guess_out, guess_in = order[:m], order[-m:]
    correct = int((~inside[guess_out]).sum() + inside[guess_in].sum())
    return OneRunResult(canaries, 2 * m, correct, one_run_epsilon(correct, 2 * m, confidence))


__all__ = ["DEFAULT_CERTIFY", "DEVIATIONS", "Case", "CaseResult", "OneRunResult", "best_planned",
           "count_case", "discrete_max", "laplace_count", "noise_factor", "one_run",
           "planned_trials", "randomised_response", "reference_cases", "run_case"]
