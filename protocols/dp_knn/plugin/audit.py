"""The audit of ``dp-knn``: its neighbouring inputs, replayed and worst-case.

The generic audit (:mod:`simulations.leakage.audit`) asks the plugin through
its ``audit_setup``, ``worst_case`` and ``worst_case_references`` hooks,
which call this module.

Replay audit (neighbours and feature; the promise compared with, in brackets):

``dp-knn`` [ε of a request]
    the owner's rows without row ``record``. In each trial the first analyst
    asks about one worst-case instance ``repeats`` times (default
    :data:`simulations.leakage.audit.REPEATS`), one single-instance request each: every request is
    a fresh ε-DP release (its own request id, so its own noise stream) that the
    ledger charges, so a trial yields ``repeats`` independent draws of the same
    release and the owner's budget is set to cover them. The instance: with a
    public r-N radius, the point among the record and the owner's rows within
    the radius of it whose region (holding the record) is closest to a tie
    between the record's class and the best other class, where one record
    moves the label most; otherwise the record itself. Feature: 1 when a
    released label is the record's class, else 0, from the analyst's view.
    An aggregate label is a lossy view of the noisy counts, so the bound is
    below the ε spent even for the worst instance (for the Laplace release of
    a region tied with the record, ε - ln(1 + ε/2) is the most this event can
    show; with the noise halved, 2ε - ln(1 + ε), above ε by ε - ln(1 + ε), a
    margin the auditor resolves from ε = 2 with a few thousand draws).

Worst-case audit (:mod:`simulations.leakage.worstcase`):

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
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from ppknn.core.dp import ExponentialMechanism
from ppknn.core.errors import ConfigError
from ppknn.core.transcript import Transcript
from ppknn.simulations.leakage.audit import (
    Setup,
    class_index,
    drop_row,
)
from ppknn.simulations.leakage.worstcase import (
    Case,
    best_planned,
    discrete_max,
    noise_factor,
)

NAME = "dp-knn"


def laplace_argmax_probs(counts: np.ndarray, scale: float) -> np.ndarray:
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
        pa = laplace_argmax_probs(c, scale)
        for j in range(c.size):
            b = c.copy()
            b[j] += 1
            pb = laplace_argmax_probs(b, scale)
            score = best_planned(pa, pb, n_test, confidence)
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
    eff = epsilon * noise_factor(deviation)
    a, b, j = rn_pair(cands, eff, n_test, confidence)  # searched on the release audited
    scale = 0.0 if eff == math.inf else 1.0 / eff
    analytic = discrete_max(laplace_argmax_probs(a, scale), laplace_argmax_probs(b, scale))

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
    eff = epsilon * noise_factor(deviation)

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
            score = best_planned(pa, probs(b), n_test, confidence)
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
                discrete_max(pa, pb), draw, one_run_ok=True, deviation=deviation)


def _label_feature(transcript: Transcript, *, observer: str, cls: int,
                   repeats: int) -> np.ndarray:
    """1 for each label the observer received that is ``cls``, else 0 (``repeats`` draws)."""
    from ppknn.protocols.dp_knn.adversary import answered_instances

    _, labels = answered_instances(transcript.view(observer, protocol="dp-knn"))
    if len(labels) != repeats:
        raise ConfigError(f"audit: {observer!r} got {len(labels)} labels for its {repeats} "
                          "requests (a refusal or an unanswered request)")
    return (labels == cls).astype(np.float64)


def _worst_instance(X: np.ndarray, y: np.ndarray, record: int, radius: float | None
                    ) -> tuple[np.ndarray, str]:
    """The instance where row ``record`` moves the r-N label most (module docstring)."""
    row = X[record]
    if radius is None:
        return row, "the record's own location"
    dist = np.linalg.norm(X - row, axis=1)
    candidates = np.argsort(dist, kind="stable")[:64]
    candidates = candidates[dist[candidates] <= radius]
    n_classes = int(max(y.max(), y[record]) + 1)
    best: tuple[int, int, np.ndarray] | None = None
    for c in candidates:
        inside = np.linalg.norm(X - X[c], axis=1) <= radius
        counts = np.bincount(y[inside], minlength=n_classes)
        own = int(counts[y[record]])
        counts[y[record]] = -1
        gap = int(counts.max()) - own  # best other class minus the record's (record counted)
        if best is None or abs(2 * gap + 1) < best[0]:
            best = (abs(2 * gap + 1), gap, X[c])
    assert best is not None  # the record itself is a candidate
    return best[2], (f"the point within radius {radius:g} of the record whose region is "
                     f"closest to a tie (best other class minus the record's class: "
                     f"{best[1]} with the record)")


def replay_setup(common: dict[str, Any], p: Any, record: int, repeats: int) -> Setup:
    """The replay audit (module docstring): one analyst, one instance, ``repeats`` requests."""
    plan, public = p.plan, p.plan.public
    owner, analyst = plan.roles["owner"][0], plan.roles["analyst"][0]
    by_id = {s.party_id: s for s in plan.specs}
    spec = by_id[owner]
    X = np.asarray(spec.kwargs["X"], dtype=np.float64)
    y = np.asarray(spec.kwargs["y"])
    if not 0 <= record < len(X):
        raise ConfigError(f"[audit] record = {record}: party {owner!r} holds {len(X)} rows; "
                          f"allowed: 0 <= record < {len(X)}")
    classes = [str(c) for c in public.get("classes", [])]
    cls = class_index(spec, record, classes)
    radius = public.get("radius")
    point, how = _worst_instance(X, y.astype(np.int64), record,
                                 float(radius) if public.get("task") == "rn"
                                 and isinstance(radius, (int, float)) else None)
    cost = float(public["epsilon_per_request"])
    funded = dataclasses.replace(spec, kwargs={**spec.kwargs, "epsilon": cost * repeats,
                                               "analyst_epsilon": None})
    specs_a = (funded, by_id[analyst])
    specs_b = (drop_row(funded, record), by_id[analyst])
    queries = np.repeat(point[None, :], repeats, axis=0)
    feature = functools.partial(_label_feature, observer=analyst, cls=cls, repeats=repeats)
    return Setup(**{**common, "specs_a": specs_a, "queries_a": queries,
                    "roles": {"owner": (owner,), "analyst": (analyst,)},
                    "config": dataclasses.replace(plan.config, batches=repeats)},
                 specs_b=specs_b, queries_b=queries, observer=(analyst,), feature=feature,
                 target=f"{owner} row {record} (add/remove); {repeats} single-instance "
                        f"requests per run at {how}",
                 bound=cost, bound_name="ε of a request")


def worst_case(scenario: Any, p: Any, *, n_test: int, confidence: float, deviation: str
               ) -> tuple[Case, str, str] | None:
    """The worst-case audit: the r-N release on a searched region, or the k-NN baseline's.

    ``None`` for the converted k-NN classifiers (the replay audit covers them).
    """
    plan, public = p.plan, p.plan.public
    owner = plan.roles["owner"][0]
    spec = {s.party_id: s for s in plan.specs}[owner]
    eps = float(public["epsilon_per_request"])
    radius = public.get("radius")
    n_classes = max(2, len(public.get("classes", [])))
    if public.get("task") == "rn" and public.get("algorithm") == "proposed" \
            and isinstance(radius, (int, float)):
        from ppknn.protocols.dp_knn.index import LabelIndex

        X = np.asarray(spec.kwargs["X"], dtype=np.float64)
        y = np.asarray(spec.kwargs["y"]).astype(np.int64)
        pick = np.random.default_rng(scenario.run.seed).choice(
            len(X), size=min(256, len(X)), replace=False)
        idx = LabelIndex(X, y, n_classes=n_classes)
        counts = idx.radius_counts(X[pick], np.full(len(pick), float(radius)))
        cands = np.vstack([np.zeros((1, n_classes), np.int64), counts])
        case = dp_knn_rn(eps, candidates=cands, n_test=n_test, deviation=deviation,
                         confidence=confidence)
        target = (f"{owner}: one record added to a region of radius {radius:g} "
                  f"(searched among 256 of its rows' regions and an empty one)")
    elif public.get("task") == "knn" and public.get("algorithm") == "baseline":
        case = dp_knn_knn(eps, int(public["k"]), n_test=n_test, deviation=deviation,
                          confidence=confidence)
        target = f"{owner}: one record added among an instance's k nearest"
    else:
        return None  # the converted k-NN classifiers: the replay audit covers them
    return case, plan.roles["analyst"][0], target


def references(epsilon: float, deviation: str) -> list[Case]:
    """The r-N and k-NN cases at ``epsilon`` on hand-built pairs (calibration)."""
    return [dp_knn_rn(epsilon, deviation=deviation), dp_knn_knn(epsilon, deviation=deviation)]
