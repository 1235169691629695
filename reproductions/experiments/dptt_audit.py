"""Empirical privacy audit of DP-TT: what the server's view of whole traversals reveals.

A study, not a protocol run: for each variant kind and utility the report
uses, and for both calibrations of the exponential mechanism
(:class:`~protocols.dptt.config.DPTTSetup`), the client/server parties run
``n_samples`` traversals of each of two neighbouring queries through the
in-process runtime, and :func:`ppknn.core.dp.audit` (Clopper-Pearson on an
event selected on half of the samples, tested on the other half) turns the
server's views -- the bits it received -- into a lower confidence bound on
the ε the traversal really spends. Beside it: the ε the account promises
(the variant's final ε over the tree's height, bounded range and sum), the ε
the mechanism really spends (below the promise for CMP under the proven
calibration, whose decisions are ε/2-DP), and a two-sided 95%
Clopper-Pearson interval of the privacy loss on the tested event.

Neighbouring queries. CMP: any two queries are neighbours (local DP); the
pair lies beyond both ends of the data, so every decision of one goes left
and of the other right -- the worst case. DIS: two queries one privacy
radius apart in the middle of the data (the DIS guarantee holds within the
radius).

The tree is small (:data:`AUDIT_POINTS` points, height 8) so that the
variants' parameters are scaled down (P4, E4, N5, GS-N5 for the report's
P8, E8, N20, GS-N20): the composition pattern of each kind is the same.

The server's view of a traversal is reduced to one number: the sequence of
its bits as an integer when it has at most 62 bits, else the number of
1-bits (a sufficient statistic for the CMP pair, a valid but weaker one for
DIS); any reduction gives a valid lower bound.

Examples
--------
>>> r = audit_variant("basic", "cmp", epsilon=1.0, n_samples=2000, seed=3)
>>> r.promised_sum, r.spent_epsilon, r.eps_lower < r.spent_epsilon  # CMP: ε/2 per decision
(8.0, 4.0, True)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ppknn.core.dp import audit
from ppknn.core.dp.audit import clopper_pearson
from ppknn.core.runtime import RunContext, make_runtime
from ppknn.core.transcript import Transcript
from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.driver import run_dptt
from ppknn.protocols.dptt.parties import dptt_specs
from ppknn.protocols.dptt.utility import Utility

AUDIT_POINTS = 256
"""Points of the audit's 1-D tree (0, 1, ..., 255: height 8)."""
AUDIT_VARIANTS = ("basic", "P4", "E4", "GS", "N5", "GS-N5")
"""One variant per kind the report uses, scaled to the audit's tree."""
DIS_RADIUS = 4.0
"""The DIS privacy radius of the audit (the pair is this far apart)."""
CMP_PAIR = (-100.0, 1000.0)
DIS_PAIR = (126.0, 130.0)


@dataclass(frozen=True)
class AuditRow:
    """One audited configuration.

    Attributes
    ----------
    variant, utility, calibration, epsilon:
        What ran (ε per decision).
    compositions:
        Decisions per query on the audit's tree (worst case).
    promised_br, promised_sum:
        The final ε the account states (ε-bounded-range decisions): bounded range and sum.
    spent_epsilon:
        The final ε the mechanism really spends
        (:meth:`~protocols.dptt.config.DPTTSetup.spent_account`: the bounded-range
        bound over the decisions' bounded-range ε, or the sum of their pure ε if
        smaller). CMP: a decision is ε/2-DP under the proven calibration (so the
        promise over-charges it, 2x where summation is the smaller bound) and
        ε-DP, 2ε-bounded-range under ``"thesis-reading"``. DIS: ε-DP under the
        proven calibration (equal to ``promised_br``), 2ε-DP under the reading.
    eps_lower:
        The audit's lower confidence bound on the spent ε (one-sided 95%).
    loss_low, loss_high:
        Two-sided 95% Clopper-Pearson interval of the log likelihood ratio on
        the tested event (test half).
    n_samples:
        Traversals per query.
    event:
        The tested event, in words.
    """

    variant: str
    utility: str
    calibration: str
    epsilon: float
    compositions: int
    promised_br: float
    promised_sum: float
    spent_epsilon: float
    eps_lower: float
    loss_low: float
    loss_high: float
    n_samples: int
    event: str

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict."""
        return asdict(self)


def server_views(points: np.ndarray, queries: np.ndarray, setup: DPTTSetup, *,
                 seed: int) -> np.ndarray:
    """One number per query for the server's view of its traversal (module docstring)."""
    specs = dptt_specs(run_id="audit", points=points, seed=seed)
    rt = make_runtime("inprocess")
    try:
        rt.start(specs, RunContext(run_id="audit"))
        run_dptt(rt, queries, setup)
        rt.close_transcript()
        messages = Transcript(rt.transcript_table()).messages()
    finally:
        rt.shutdown()
    n = len(queries)
    nodes = {m.round: m for m in messages if m.kind == "nodes"}
    bit_msgs = sorted((m for m in messages if m.kind == "bits"), key=lambda m: m.round)
    slots = np.concatenate([np.asarray(nodes[m.round].payload["slot"], dtype=np.int64)
                            for m in bit_msgs] or [np.zeros(0, np.int64)])
    bits = np.concatenate([np.asarray(m.payload["bits"], dtype=np.int64)
                           for m in bit_msgs] or [np.zeros(0, np.int64)])
    length = np.bincount(slots, minlength=n)
    ones = np.bincount(slots, weights=bits, minlength=n).astype(np.int64)
    if length.max(initial=0) > 62:
        return ones
    order = np.argsort(slots, kind="stable")  # a slot's decisions in message order
    s_sorted, b_sorted = slots[order], bits[order]
    start = np.concatenate([[0], np.cumsum(length)[:-1]])
    pos = np.arange(len(s_sorted)) - start[s_sorted]
    code = np.zeros(n, dtype=np.int64)
    np.add.at(code, s_sorted, b_sorted << (length[s_sorted] - 1 - pos))
    return code + (np.int64(1) << length)  # the leading 1 keeps the length


def audit_variant(variant: str, utility: str, *, epsilon: float = 0.5,
                  calibration: str = "proven", n_samples: int = 20_000, seed: int = 0,
                  confidence: float = 0.95) -> AuditRow:
    """Audit one variant (module docstring).

    ``seed`` fixes the client's and the auditor's streams.
    """
    util = Utility.cmp() if utility == "cmp" else Utility.dis(DIS_RADIUS)
    setup = DPTTSetup(variant=variant, utility=util, epsilon=epsilon, calibration=calibration)
    points = np.arange(float(AUDIT_POINTS))
    height = int(math.ceil(math.log2(AUDIT_POINTS)))
    stated, spent = setup.stated_account(height), setup.spent_account(height)
    pair = CMP_PAIR if utility == "cmp" else DIS_PAIR
    rng = np.random.default_rng(seed)

    def run(x: float, r: np.random.Generator, n: int) -> np.ndarray:
        return server_views(points, np.full((n, 1), float(x)), setup,
                            seed=int(r.integers(2**31)))

    result = audit(run, *pair, n_samples=n_samples, rng=rng, vectorized=True,
                   confidence=confidence)
    half = n_samples - n_samples // 2
    alpha = (1 - 0.95) / 2
    ha, hb = result.hits
    lo_a, hi_a = clopper_pearson(ha, half, alpha)
    lo_b, hi_b = clopper_pearson(hb, half, alpha)
    loss_low = math.log(lo_a / hi_b) if lo_a > 0 and hi_b > 0 else -math.inf
    loss_high = math.log(hi_a / lo_b) if lo_b > 0 else math.inf
    return AuditRow(variant=setup.variant.label, utility=utility, calibration=calibration,
                    epsilon=epsilon, compositions=stated.compositions,
                    promised_br=stated.epsilon_br, promised_sum=stated.epsilon_sum,
                    spent_epsilon=spent.epsilon_br, eps_lower=result.eps_lower,
                    loss_low=loss_low, loss_high=loss_high, n_samples=n_samples,
                    event=result.event)


def audit_study(*, variants: tuple[str, ...] = AUDIT_VARIANTS, epsilon: float = 0.5,
                n_samples: int = 20_000, seed: int = 0) -> list[AuditRow]:
    """Audit every variant, both utilities, both calibrations (a fixed order of seeds)."""
    rows = []
    i = 0
    for utility in ("cmp", "dis"):
        for calibration in ("proven", "thesis-reading"):
            for v in variants:
                rows.append(audit_variant(v, utility, epsilon=epsilon, calibration=calibration,
                                          n_samples=n_samples, seed=seed + i))
                i += 1
    return rows


__all__ = ["AUDIT_POINTS", "AUDIT_VARIANTS", "AuditRow", "audit_study", "audit_variant",
           "server_views"]
