"""What an analyst (or a coalition of analysts) infers from the DP owner's answers.

Label inference, over views only: the analyst pairs each request it sent
(the test instances ``x``) with the owner's answer (the noisy labels) by
request id, and claims that the released label of an instance is the label
the training data gives it without noise (the r-N majority in its region,
or the k-NN majority). An instance asked several times -- by one analyst
repeating a query, or by several analysts pooling their answers -- is
claimed by majority vote over the answers received for it (ties: the
smallest label), so repetition sharpens the claim; the ledger charges
every repetition, which is what keeps the guarantee.

Examples
--------
>>> import numpy as np
>>> x = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, 2.0]])
>>> claims = majority_claims(x, np.array([1, 1, 0]))
>>> claims.x.tolist(), claims.label.tolist(), claims.answers.tolist()
([[0.0, 1.0], [2.0, 2.0]], [1, 0], [2, 1])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.core.transcript import View
from ppknn.protocols.dp_knn.protocol import PROTOCOL

LABELS = "analyst-label-inference"


@dataclass(frozen=True)
class LabelClaims:
    """One claim per distinct instance: its coordinates, claimed label, answers behind it."""

    x: np.ndarray
    label: np.ndarray
    answers: np.ndarray


def answered_instances(view: View) -> tuple[np.ndarray, np.ndarray]:
    """Every (instance, released label) pair of the view's answered requests."""
    requests = {}
    for m in view.sent:
        if m.protocol == PROTOCOL and "x" in m.payload and "request" in m.payload:
            requests[(m.sender, int(np.asarray(m.payload["request"])))] = m
    xs, labels = [], []
    for m in view.received:
        if m.protocol != PROTOCOL or m.kind != "answer":
            continue
        req = requests.get((m.receiver, int(np.asarray(m.payload["request"]))))
        if req is None:
            continue
        lab = np.asarray(m.payload["labels"], dtype=np.int64).reshape(-1)
        keep = lab >= 0
        xs.append(np.asarray(req.payload["x"], dtype=np.float64)[keep])
        labels.append(lab[keep])
    if not xs:
        return np.zeros((0, 0)), np.zeros(0, dtype=np.int64)
    return np.concatenate(xs), np.concatenate(labels)


def majority_claims(x: np.ndarray, labels: np.ndarray) -> LabelClaims:
    """Majority vote of the labels released for each distinct instance."""
    if len(x) == 0:
        return LabelClaims(np.zeros((0, x.shape[1] if x.ndim == 2 else 0)),
                           np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    uniq, inverse = np.unique(x, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_labels = int(labels.max()) + 1
    votes = np.zeros((len(uniq), n_labels), dtype=np.int64)
    np.add.at(votes, (inverse, labels), 1)
    return LabelClaims(uniq, votes.argmax(axis=1), votes.sum(axis=1))


def label_claims(view: View) -> LabelClaims:
    """Label inference over an analyst's (or a coalition's) view (module docstring)."""
    x, labels = answered_instances(view)
    return majority_claims(x, labels)


__all__ = ["LABELS", "LabelClaims", "answered_instances", "label_claims", "majority_claims"]
