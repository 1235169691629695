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
``dp-knn r-N``
    one single-instance request (its region's clique number is 1) released
    by :func:`protocols.dp_knn.rn.laplace_labels`; the pair is a region's
    class counts without and with one added record of class ``j``. The
    region and ``j`` are searched (:func:`rn_pair`) among the data's
    regions and an empty one, for the best bound the planned trial count
    can show; output: the label.
``dp-knn k-NN``
    the baseline's exponential mechanism over the k nearest labels
    (:func:`protocols.dp_knn.rn.exponential_labels`); the added record
    displaces the k-th neighbour (counts ``a`` vs ``a + e_j - e_i``).
``dp-nb`` / ``ring-nb``
    the class-count release (Laplace at the protocol's own budget share,
    :func:`protocols.dp_nb.training.budget_split` /
    ``RingNBConfig.group_epsilons``); output: the record's class count. The
    means and variances are other releases: the event's maximum is the
    count's share of ε, stated beside the model's ε.
``dptt``
    one decision of the client's :class:`core.dp.ExponentialMechanism` at
    its set-up's ε, the query on either side of the split (CMP utilities
    ``(1, 0)`` vs ``(0, 1)``); output: the bit.
``pca-laplace``
    one noisy score of the sanitizer's per-column Laplace
    (:func:`protocols.pca_perturbation.sanitize.laplace_mechanisms`, ε = 1/b,
    sensitivity = the column's range): the score at either end of its range.

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

from ppknn.core.dp import ExponentialMechanism, Laplace
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


def _noise_factor(deviation: str) -> float:
    if deviation.startswith("noise-scale="):
        scale = float(deviation.split("=", 1)[1])
        if not (math.isfinite(scale) and scale > 0):
            raise ConfigError(f"deviation {deviation!r}: the scale must be a finite value > 0")
        return 1.0 / scale
    if deviation not in DEVIATIONS:
        raise ConfigError(f"deviation {deviation!r}: allowed {list(DEVIATIONS)}")
    return {"none": 1.0, "half-noise": 2.0, "no-noise": math.inf}[deviation]


def _discrete_max(pa: np.ndarray, pb: np.ndarray) -> float:
    """Largest ``|ln pa(o)/pb(o)|`` over outcomes (an event's ratio never exceeds it)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.abs(np.log(pa) - np.log(pb))
    r = r[(pa > 0) | (pb > 0)]
    return float(np.max(r)) if r.size else 0.0


def _best_planned(pa: np.ndarray, pb: np.ndarray, n_test: int, confidence: float) -> float:
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
    eff = epsilon * _noise_factor(deviation)

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        value = np.full(n, 10.0 if which == "a" else 11.0)
        if eff == math.inf:
            return value
        return np.asarray(Laplace(epsilon=eff, sensitivity=1.0).randomise(value, rng).value)

    return Case("laplace-count", "reference", "count 10 vs 11", epsilon,
                eff if eff < math.inf else math.inf, draw, one_run_ok=True, deviation=deviation)


def randomised_response(epsilon: float, deviation: str = "none") -> Case:
    """One private bit (0 vs 1) kept with probability ``e^ε / (1 + e^ε)``."""
    eff = epsilon * _noise_factor(deviation)
    keep = 1.0 if eff == math.inf else 1.0 / (1.0 + math.exp(-eff))

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        bit = 0.0 if which == "a" else 1.0
        flip = rng.random(n) >= keep
        return np.where(flip, 1.0 - bit, bit)

    return Case("randomised-response", "reference", "bit 0 vs 1", epsilon,
                eff, draw, one_run_ok=True, deviation=deviation)


# --- dp-knn ---------------------------------------------------------------------------------


def _laplace_argmax_probs(counts: np.ndarray, scale: float) -> np.ndarray:
    """Exact ``P(argmax_j (c_j + Lap(scale)) = j)``: closed form for two classes, else quadrature.

    Two classes: the difference of two Laplace(scale) draws has
    ``P(Z > d) = e^(-d/λ) (2 + d/λ) / 4`` for ``d >= 0``.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if scale == 0:
        out = np.zeros(counts.size)
        out[int(np.argmax(counts))] = 1.0
        return out
    if counts.size == 2:
        d = abs(counts[0] - counts[1]) / scale
        tail = math.exp(-d) * (2.0 + d) / 4.0  # the smaller count wins
        return np.array([1 - tail, tail]) if counts[0] > counts[1] else (
            np.array([tail, 1 - tail]) if counts[0] < counts[1] else np.array([0.5, 0.5]))
    x = np.linspace(counts.min() - 50 * scale, counts.max() + 50 * scale, 100_001)
    z = (x[None, :] - counts[:, None]) / scale
    pdf = np.exp(-np.abs(z)) / (2 * scale)
    cdf = np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0)))
    logc = np.log(np.maximum(cdf, 1e-300))
    total = logc.sum(axis=0)
    probs = np.array([np.trapezoid(pdf[j] * np.exp(total - logc[j]), x)
                      for j in range(counts.size)])
    return probs / probs.sum()


def rn_pair(candidates: np.ndarray, epsilon: float, n_test: int, confidence: float = 0.95,
            ) -> tuple[np.ndarray, np.ndarray, int]:
    """The region counts and added class where one record moves the r-N label most.

    ``candidates`` ``(R, C)``: class counts of candidate regions. For each
    region and class ``j``, the pair is ``(c, c + e_j)``; the one with the
    best expected bound at ``n_test`` test draws wins. Returns ``(a, b, j)``.
    """
    cands = np.unique(np.asarray(candidates, dtype=np.int64), axis=0)
    if cands.shape[1] > 2 and len(cands) > 32:  # quadrature: keep the 32 closest to a tie
        top2 = np.sort(cands, axis=1)[:, -2:]
        cands = cands[np.argsort(top2[:, 1] - top2[:, 0], kind="stable")[:32]]
    best: tuple[float, np.ndarray, np.ndarray, int] | None = None
    scale = 0.0 if epsilon == math.inf else 1.0 / epsilon
    for c in cands:
        pa = _laplace_argmax_probs(c, scale)
        for j in range(c.size):
            b = c.copy()
            b[j] += 1
            pb = _laplace_argmax_probs(b, scale)
            score = _best_planned(pa, pb, n_test, confidence)
            if best is None or score > best[0]:
                best = (score, c, b, j)
    assert best is not None
    return best[1], best[2], best[3]


def gap_candidates(n_classes: int = 2, gaps: int = 6) -> np.ndarray:
    """Hand-built regions: class 0 empty, class 1 holding ``0..gaps-1`` records."""
    out = np.zeros((gaps, n_classes), dtype=np.int64)
    out[:, 1 % n_classes] = np.arange(gaps)
    return out


def dp_knn_rn(epsilon: float, *, candidates: np.ndarray | None = None, n_test: int = 4_820,
              deviation: str = "none", confidence: float = 0.95) -> Case:
    """The r-N release of one instance on the searched pair (module docstring)."""
    from ppknn.protocols.dp_knn.rn import laplace_labels

    cands = gap_candidates() if candidates is None else np.asarray(candidates)
    eff = epsilon * _noise_factor(deviation)
    a, b, j = rn_pair(cands, eff, n_test, confidence)  # searched on the release audited
    scale = 0.0 if eff == math.inf else 1.0 / eff
    analytic = _discrete_max(_laplace_argmax_probs(a, scale), _laplace_argmax_probs(b, scale))

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        counts = a if which == "a" else b
        many = np.broadcast_to(counts, (n, 1, counts.size))
        return laplace_labels(many, np.ones(1), eff, rng)[:, 0].astype(np.float64)

    return Case("dp-knn r-N", "dp-knn", f"region counts {a.tolist()} vs {b.tolist()} (one "
                f"record of class {j} added)", epsilon, analytic, draw, one_run_ok=True,
                deviation=deviation)


def dp_knn_knn(epsilon: float, k: int = 5, *, candidates: np.ndarray | None = None,
               n_test: int = 4_820, deviation: str = "none", confidence: float = 0.95) -> Case:
    """The k-NN baseline's exponential mechanism; the added record displaces the k-th one.

    ``candidates`` ``(R, C + 1)``: the k nearest labels' counts and, last, the
    class of the k-th neighbour (the one an added nearer record pushes out).
    """
    from ppknn.protocols.dp_knn.rn import exponential_labels

    if candidates is None:
        cands = np.array([[a, k - a, 1 if a < k else 0] for a in range(k + 1)])
    else:
        cands = np.asarray(candidates, dtype=np.int64)
    eff = epsilon * _noise_factor(deviation)

    def probs(c: np.ndarray) -> np.ndarray:  # the release audited (searched on it)
        if eff == math.inf:
            return np.eye(c.size)[int(np.argmax(c))]
        return ExponentialMechanism(epsilon=eff, sensitivity=1.0).probabilities(
            c.astype(np.float64))

    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for row in np.unique(cands, axis=0):
        c, out = row[:-1], int(row[-1])
        if c[out] <= 0:
            continue
        pa = probs(c)
        for j in range(c.size):
            if j == out:
                continue
            b = c.copy()
            b[j] += 1
            b[out] -= 1
            score = _best_planned(pa, probs(b), n_test, confidence)
            if best is None or score > best[0]:
                best = (score, c, b)
    if best is None:
        raise ConfigError("no k-NN candidate has a neighbour to displace")
    _, a, b = best
    pa, pb = probs(a), probs(b)

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        counts = a if which == "a" else b
        many = np.broadcast_to(counts, (n, 1, counts.size))
        return exponential_labels(many, eff, rng)[:, 0].astype(np.float64)

    return Case("dp-knn k-NN", "dp-knn", f"k = {int(a.sum())} nearest counts {a.tolist()} vs "
                f"{b.tolist()} (an added record displaces the k-th)", epsilon,
                _discrete_max(pa, pb), draw, one_run_ok=True, deviation=deviation)


# --- counts of dp-nb and ring-nb, DP-TT, PCA --------------------------------------------------


def _count_case(name: str, protocol: str, eps_count: float, claimed: float, note: str,
                deviation: str) -> Case:
    base = laplace_count(eps_count, deviation)
    return replace(base, name=name, protocol=protocol, claimed=claimed,
                   pair=f"class count 10 vs 11 (one record added); {note}", one_run_ok=False)


def dp_nb(epsilon: float, n_numeric: int = 2, *, budget: object = "equal",
          deviation: str = "none") -> Case:
    """dp-nb's class-count release at its own budget share (module docstring)."""
    from ppknn.protocols.dp_nb.training import NBConfig, budget_split

    split = budget_split(NBConfig(epsilon=epsilon, budget=budget), n_numeric, 0)
    return _count_case("dp-nb class count", "dp-nb", split.counts, split.counts,
                       f"the counts' share ε_c = {split.counts:.4g} of the model's "
                       f"ε = {epsilon:g} ({n_numeric} numeric features)", deviation)


def ring_nb(epsilon: float, split: tuple[float, float, float] = (1.0, 1.0, 1.0), *,
            deviation: str = "none") -> Case:
    """ring-nb's class-count release at its group's ε (module docstring)."""
    eps_c = epsilon * split[0] / sum(split)
    return _count_case("ring-nb class count", "ring-nb", eps_c, eps_c,
                       f"the counts' group ε_c = {eps_c:.4g} of the model's ε = {epsilon:g}",
                       deviation)


def dptt(epsilon: float, *, calibration: str = "thesis-reading", variant: str = "basic",
         deviation: str = "none", setup: object = None) -> Case:
    """One DP-TT decision (CMP) at the client's mechanism ε, the query on either side.

    ``setup``: a scenario's :class:`protocols.dptt.config.DPTTSetup` (then
    ``epsilon``, ``calibration`` and ``variant`` are taken from it).
    """
    from ppknn.protocols.dptt.config import DPTTSetup
    from ppknn.protocols.dptt.utility import Utility

    if setup is None:
        setup = DPTTSetup(variant=variant, utility=Utility.cmp(), epsilon=epsilon,
                          calibration=calibration)
    elif setup.utility.name != "cmp":
        raise ConfigError(f"the DP-TT worst case is built for the CMP utility, got "
                          f"{setup.utility.name!r}")
    epsilon, calibration, variant = setup.epsilon, setup.calibration, setup.variant.label
    claimed = setup.decision_epsilons[0]
    factor = _noise_factor(deviation)
    mech_eps = setup.mechanism_epsilon * factor
    ua, ub = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    if mech_eps == math.inf:
        pa, pb = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    else:
        mech = ExponentialMechanism(epsilon=mech_eps, sensitivity=1.0)
        pa, pb = mech.probabilities(ua), mech.probabilities(ub)

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        u = np.broadcast_to(ua if which == "a" else ub, (n, 2))
        if mech_eps == math.inf:
            return np.argmax(u, axis=1).astype(np.float64)
        mech = ExponentialMechanism(epsilon=mech_eps, sensitivity=1.0)
        return np.asarray(mech.randomise(np.ascontiguousarray(u), rng).value, np.float64)

    return Case("dptt decision", "dptt", f"CMP decision, query left vs right of the split "
                f"({variant}, {calibration}, ε = {epsilon:g})", claimed,
                _discrete_max(pa, pb), draw, one_run_ok=True, deviation=deviation)


def pca_laplace(b: float, value_range: float = 1.0, *, deviation: str = "none") -> Case:
    """One noisy score of the sanitizer's column Laplace: the score at either end of its range."""
    from ppknn.protocols.pca_perturbation.sanitize import laplace_mechanisms

    (mech,) = laplace_mechanisms(np.array([value_range]), b)
    factor = _noise_factor(deviation)

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        value = np.full(n, 0.0 if which == "a" else value_range)
        if factor == math.inf:
            return value
        noise = np.asarray(mech.randomise(np.zeros(n), rng).value)
        return value + noise / factor

    return Case("pca Laplace column", "pca-perturbation", f"a score at 0 vs {value_range:g} "
                f"(the column's range), b = {b:g}", 1.0 / b, factor / b, draw, one_run_ok=True,
                deviation=deviation)


def reference_cases(epsilon: float = 1.0, deviation: str = "none") -> list[Case]:
    """Every case at one ε (DP-TT's set-up ε chosen so its decision ε is ``epsilon``)."""
    return [laplace_count(epsilon, deviation), randomised_response(epsilon, deviation),
            dp_knn_rn(epsilon, deviation=deviation), dp_knn_knn(epsilon, deviation=deviation),
            dp_nb(epsilon, deviation=deviation), ring_nb(epsilon, deviation=deviation),
            dptt(epsilon, deviation=deviation), pca_laplace(1.0 / epsilon, deviation=deviation)]


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


__all__ = ["DEFAULT_CERTIFY", "DEVIATIONS", "Case", "CaseResult", "OneRunResult", "dp_knn_knn",
           "dp_knn_rn", "dp_nb", "dptt", "gap_candidates", "laplace_count", "one_run",
           "pca_laplace", "planned_trials", "randomised_response", "reference_cases", "ring_nb",
           "rn_pair",
           "run_case"]
