"""The attacks of ``pca-perturbation`` the leakage table scores, registered on import.

Each scorer runs over views through the protocol's adversary code and is
scored against provenance or the ground truth the plugin's ``ground_truth``
hook saves (:mod:`simulations.leakage.attacks` holds the machinery).

``pca-perturbation`` [no DP: amplification e^(1/b) per column, ρ1→ρ2]
    ``transform-attack``: per record, the RMS error of the miner's reconstruction
    (mean with a t interval), and the fraction of values reconstructed within
    ``±reach`` (default 0.05 of the range) against the ρ1→ρ2 bound with
    ρ1 = 2·reach (a uniform prior) and γ the release's claimed amplification.
    ``correlation-attack``: PCA filtering with the attacker's best s2 (oracle);
    average privacy, no bound. ``sanitizer-sees-instances``: the fraction of the
    miner's instances found in any message the sanitizer received (none: the
    release is one-way), no bound.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.simulations.leakage.attacks import Adversary, Context, register
from ppknn.simulations.leakage.scorers import (
    NOTHING_SEEN,
    observer_name,
    rows_carried,
)
from ppknn.simulations.leakage.table import (
    LeakageRow,
    clustered_proportion_row,
    mean_row,
    paired_mean_difference,
    paired_rate_baseline,
    proportion_row,
    with_baseline,
)

PCA = "pca-perturbation"


def _pca_release(ctx: Context) -> Any:
    from ppknn.protocols.pca_perturbation.attacks import release_message

    view = ctx.view(["miner"])
    rounds = sorted({m.round for m in view.received if m.kind.startswith("release:")})
    return release_message(view, rounds[-1]) if rounds else None


@register(PCA, "transform-attack", default=True, params=("reach",),
          description="the miner reverses the released transform, per record")
def _pca_transform(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.pca_perturbation.attacks import reconstruct
    from ppknn.protocols.pca_perturbation.privacy import rho2_bound

    release = _pca_release(ctx)
    if release is None or "records" not in ctx.truth:
        return []
    truth = np.asarray(ctx.truth["records"])
    estimate = reconstruct(release)
    reach = float(adv.params.get("reach", 0.05))
    if not 0 < reach < 0.5:
        raise ConfigError(f"adversary transform-attack: reach = {reach!r}; allowed: 0 < reach "
                          "< 0.5 (a fraction of the normalised range)")
    rmse = np.sqrt(np.mean((estimate - truth) ** 2, axis=1))
    observer = observer_name(adv.observers or ("miner",))
    base = dict(protocol=ctx.protocol, observer=observer, target="sanitizer (each record)",
                attack=adv.attack)
    own = _pca_own(ctx, release)
    rmse_row = mean_row(values=rmse, quantity="reconstruction RMS error per record "
                        "(normalised)", note="mean over records; no bound", **base)
    if own is not None:
        from ppknn.protocols.pca_perturbation.attacks import prior_guess

        prior_rmse = np.sqrt(np.mean((prior_guess(own)[None, :] - truth) ** 2, axis=1))
        prior = mean_row(values=prior_rmse, quantity="", **base)
        rmse_row = with_baseline(
            rmse_row, name=f"each value guessed as its column's mean over the miner's own "
                           f"{len(own)} rows (no release); advantage = baseline error - error",
            baseline=(prior.value, prior.ci_low, prior.ci_high),
            advantage=paired_mean_difference(prior_rmse, rmse))
    rows = [rmse_row]
    within = np.abs(estimate - truth) <= reach
    amp = np.asarray(release.payload.get("amplification", []), dtype=np.float64)
    bound = None
    name = ""
    if amp.size and np.all(np.isfinite(amp)):
        from ppknn.protocols.pca_perturbation.attacks import scheme_of

        # a value of the "laplace" scheme is noised alone (γ of its column); through PCA
        # one attribute enters every released column, so γ is their product
        joint = scheme_of(release) != "laplace"
        gamma = float(np.prod(amp)) if joint else float(np.max(amp))
        bound = rho2_bound(gamma, 2 * reach) if math.isfinite(gamma) else 1.0
        name = (f"ρ1→ρ2 bound, ρ1 = {2 * reach:g}, γ = {gamma:.4g} "
                + ("(product over the released columns)" if joint else "(e^(1/b) per column)"))
    # a record's values share its noise (through PCA every released column feeds every
    # value): records, not values, are the independent trials of the interval
    row = clustered_proportion_row(
        hits=within,
        quantity=f"values reconstructed within ±{reach:g} of the range", bound=bound,
        bound_name=name,
        note="γ-amplification bounds the posterior of any interval of width 2·reach, so "
             "the expected hit rate is <= ρ2 when every such interval has prior <= ρ1 "
             "(a uniform prior on each normalised value; real priors differ)", **base)
    if own is not None:
        from ppknn.protocols.pca_perturbation.attacks import prior_guess

        guess = np.abs(prior_guess(own, reach=reach)[None, :] - truth) <= reach
        prior = clustered_proportion_row(hits=guess, quantity="", **base)
        # records are the independent units: the per-record difference of hit rates
        row = with_baseline(
            row, name=f"each value guessed from the miner's own {len(own)} rows alone: per "
                      f"column the value whose ±{reach:g} window holds most of them",
            baseline=(prior.value, prior.ci_low, prior.ci_high),
            advantage=paired_mean_difference(within.mean(axis=1), guess.mean(axis=1)))
    rows.append(row)
    return rows


def _pca_own(ctx: Context, release: Any) -> np.ndarray | None:
    """The miner's own rows, normalised as the release's public bounds say (if known)."""
    if "instances" not in ctx.truth or "lower" not in release.payload:
        return None
    from ppknn.protocols.pca_perturbation.attacks import own_rows

    own = own_rows(release, np.asarray(ctx.truth["instances"], dtype=np.float64))
    return own if len(own) else None


@register(PCA, "sanitizer-sees-instances", default=True,
          description="the sanitizer looks for the miner's instances in what it received")
def _pca_sanitizer(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    if "instances" not in ctx.truth:
        return []
    instances = np.asarray(ctx.truth["instances"], dtype=np.float64)
    observers = tuple(adv.observers or ("sanitizer",))
    received = ctx.view(observers).received
    seen = rows_carried(received, instances)
    return [paired_rate_baseline(proportion_row(
        successes=int(seen.sum()), trials=len(instances), protocol=ctx.protocol,
        observer=observer_name(observers), target="miner (its instances)", attack=adv.attack,
        quantity="miner's instances seen exactly",
        note=f"the sanitizer received {len(received)} message(s): the release is one-way, it "
             "learns nothing of the miner's instances (an instance in any received field "
             "counts); no bound"), hits=seen, base=np.zeros(len(seen), dtype=bool),
        name=NOTHING_SEEN)]


@register(PCA, "correlation-attack", default=True,
          description="PCA filtering with the attacker's best s2 (oracle)")
def _pca_correlation(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.pca_perturbation.attacks import attack

    release = _pca_release(ctx)
    if release is None or "records" not in ctx.truth:
        return []
    truth = np.asarray(ctx.truth["records"])
    outcome = attack(release, truth)
    value = outcome.filtered if outcome.best_s2 else outcome.no_filter
    row = LeakageRow(
        protocol=ctx.protocol, observer=observer_name(adv.observers or ("miner",)),
        target="sanitizer (all records)", attack=adv.attack,
        quantity="average privacy (95% interval width / range; lower leaks more)",
        value=float(value), ci_low=float("nan"), ci_high=float("nan"),
        trials=int(len(ctx.truth["records"])),
        note=(f"s2 = {outcome.best_s2} (oracle); transform attack alone "
              f"{outcome.no_filter:.4f}") if outcome.best_s2 else
             "no s2 applies: transform attack alone")
    own = _pca_own(ctx, release)
    if own is None:
        return [row]
    from ppknn.protocols.pca_perturbation.attacks import prior_guess
    from ppknn.protocols.pca_perturbation.privacy import average_privacy

    prior = average_privacy(np.broadcast_to(prior_guess(own), truth.shape), truth)
    widths = _column_privacy(release, truth, outcome.best_s2)
    if widths is None or not math.isclose(float(widths.mean()), float(value), rel_tol=1e-9,
                                          abs_tol=1e-12):
        return [with_baseline(
            row, name="each value guessed as its column's mean over the miner's own rows "
                      "(no release; no interval); advantage = baseline privacy - privacy",
            baseline=(prior, math.nan, math.nan),
            advantage=(prior - float(value), math.nan, math.nan))]
    from ppknn.protocols.pca_perturbation.privacy import interval_widths

    base = interval_widths(np.broadcast_to(prior_guess(own), truth.shape), truth)
    b = mean_row(values=base, quantity="", protocol="", observer="", target="", attack="")
    v = mean_row(values=widths, quantity="", protocol="", observer="", target="", attack="")
    row = replace(row, ci_low=v.ci_low, ci_high=v.ci_high,
                  note=f"{row.note}; intervals: Student-t over the {len(widths)} columns' "
                       "widths")
    return [with_baseline(
        row, name="each value guessed as its column's mean over the miner's own rows (no "
                  "release); advantage = baseline privacy - privacy, per column",
        baseline=(b.value, b.ci_low, b.ci_high),
        advantage=paired_mean_difference(base, widths))]


def _column_privacy(release: Any, truth: np.ndarray, best_s2: int) -> np.ndarray | None:
    """Per column, the 95% error interval's width of the correlation attack's estimate.

    Its mean is the row's average privacy (checked by the caller): the transform attack's
    estimate, projected on its own ``best_s2`` leading principal components when the
    filter applies, on every row when the release has at most 20,000 (``None`` beyond:
    the attack then measures a stride of rows).
    """
    from ppknn.protocols.pca_perturbation.attacks import reconstruct
    from ppknn.protocols.pca_perturbation.privacy import interval_widths

    est = reconstruct(release)
    if len(est) > 20_000 or est.shape != np.shape(truth):
        return None
    if best_s2:
        mean = est.mean(axis=0)
        centred = est - mean
        eigvals, vectors = np.linalg.eigh(centred.T @ centred / len(est))
        basis = vectors[:, np.argsort(eigvals, kind="stable")[::-1]][:, :best_s2]
        est = mean + (centred @ basis) @ basis.T
    return interval_widths(est, np.asarray(truth, dtype=np.float64))
