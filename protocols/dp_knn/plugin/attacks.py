"""The attacks of ``dp-knn`` the leakage table scores, registered on import.

Each scorer runs over views through the protocol's adversary code and is
scored against provenance or the ground truth the plugin's ``ground_truth``
hook saves (:mod:`simulations.leakage.attacks` holds the machinery).

``dp-knn`` [ε-DP per request, ledger]
    ``analyst-label-inference``: per analyst (or a scripted coalition pooling
    answers), the fraction of instances whose claimed label equals the noiseless
    one; no ε bound applies to an aggregate label (an empirical ε needs
    neighbouring datasets: ``ppknn audit``), the ledger's ε is in the note.
    This rate is **not** converted to an ε: ε compares one output's probability
    on two neighbouring datasets, and one run holds one dataset. The rate at
    which a noisy label matches the noiseless one is set by each region's count
    margin against the noise (a margin of 20 votes gives ~1 at any ε; a tie gives
    ~1/2 at every ε), so reading it as randomised response, ε = ln(p / (1 - p)),
    would report "above ε" for every clear-cut region of an honest owner and
    "within" for a broken one on ties. The audit (:mod:`.audit`) reruns the
    release on a dataset without one record and bounds ε from the two samples.
"""

from __future__ import annotations

import numpy as np

from ppknn.core.transcript import View
from ppknn.simulations.leakage.attacks import Adversary, Context, register
from ppknn.simulations.leakage.scorers import (
    analyst_groups,
    nothing_seen,
    observer_name,
)
from ppknn.simulations.leakage.table import (
    LeakageRow,
    paired_rate_baseline,
    proportion_row,
)

DP_KNN = "dp-knn"


@register(DP_KNN, "analyst-label-inference", default=True,
          description="an analyst claims each released label is the noiseless one")
def _dp_knn_labels(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.dp_knn.adversary import label_claims

    if "queries" not in ctx.truth:
        return []
    truth_x = np.asarray(ctx.truth["queries"])
    truth_y = np.asarray(ctx.truth["nonprivate"])
    index = {row.tobytes(): i for i, row in enumerate(truth_x)}
    groups = analyst_groups(ctx, adv)
    msgs = ctx.messages()
    rows = []
    for group in groups:
        view = View.of(msgs, group)
        claims = label_claims(view)
        spent = sum(float(np.asarray(m.payload["epsilon"])) for m in view.received
                    if m.kind == "answer")
        idx = np.array([index.get(np.asarray(x, dtype=np.float64).tobytes(), -1)
                        for x in claims.x], dtype=np.int64)
        known = idx >= 0
        targets = truth_y[idx[known]]
        right = claims.label[known] == targets
        hits = int(np.sum(right))
        repeated = int(np.sum(claims.answers > 1))
        majority, base_name = _majority_label(ctx, truth_y)
        # no ε conversion here: one run sees one dataset, and the match rate is set by
        # the regions' count margins, not by ε (module docstring); `ppknn audit` gives ε
        rows.append(paired_rate_baseline(proportion_row(
            successes=hits, trials=int(known.sum()), protocol=ctx.protocol,
            observer=observer_name(group), target="training data (noiseless labels)",
            attack=adv.attack, quantity="labels inferred correctly",
            note=f"ε spent on these answers {spent:.4g} (ledger); {repeated} instances "
                 "answered more than once (majority vote); an aggregate label has no ε "
                 "bound: empirical ε by `ppknn audit`"),
            hits=right, base=targets == majority, name=base_name))
    return rows


def _majority_label(ctx: Context, noiseless: np.ndarray) -> tuple[int, str]:
    """The label an analyst without the answers claims: the training data's majority class.

    A truth saved without the class counts falls back on the most frequent noiseless
    label of the run (an oracle constant, at least as strong).
    """
    counts = ctx.truth.get("train_class_counts")
    if counts is not None and np.asarray(counts).size:
        return (int(np.argmax(np.asarray(counts))),
                "the training data's majority label for every instance (no transcript)")
    values, n = np.unique(np.asarray(noiseless), return_counts=True)
    return (int(values[int(np.argmax(n))]) if values.size else -1,
            "the most frequent noiseless label for every instance (an oracle constant; no "
            "transcript)")


@register(DP_KNN, "owner-sees-queries", default=True, by_design=True,
          description="the DP owner reads the analysts' test instances in the clear")
def _dp_knn_owner(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    if "queries" not in ctx.truth:
        return []
    owner = ctx.public["owner"]
    truth = {np.asarray(r, dtype=np.float64).tobytes() for r in np.asarray(ctx.truth["queries"])}
    view = ctx.view(tuple(adv.observers or (owner,)))
    rows = []
    for analyst in ctx.public["analysts"]:
        seen = {np.asarray(r, dtype=np.float64).tobytes()
                for m in view.received if m.sender == analyst and "x" in m.payload
                for r in np.asarray(m.payload["x"])}
        if not seen:
            continue
        # distinct instances on both sides: a dataset with repeated rows (iris) counted a
        # repeated test row once per copy against the distinct rows seen (100 of 98)
        hits = len(seen & truth)
        rows.append(nothing_seen(proportion_row(
            successes=hits, trials=len(seen), protocol=ctx.protocol,
            observer=observer_name(adv.observers or (owner,)), target=analyst,
            attack=adv.attack, quantity="analyst's instances seen exactly",
            note="the paper's model: test instances are not private from the owner; no "
                 "bound")))
    return rows
