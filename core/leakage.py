"""Leakage measurement: adversaries over views, scorers over provenance.

An *adversary* is a function from a :class:`~core.transcript.View` (what a
party or coalition saw, without ground truth) to :class:`Claims`: for some
message payload elements, the claim that they belong to a target party.
A *scorer* compares claims with the provenance recorded in the transcript
and reports, per target party, the probability that the adversary
identified at least one of the target's values, with Wilson 95% intervals.

Adversaries never see provenance: they receive views built by
:meth:`core.transcript.Transcript.view`, whose messages carry none.

Examples
--------
>>> lo, hi = wilson_interval(0, 10)
>>> round(lo, 3), round(hi, 3)
(0.0, 0.278)
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from ppknn.core.errors import ConfigError
from ppknn.core.messages import Message, PartyId

MessageKey = tuple[str, int, str, str, int]
"""(protocol, round, sender, receiver, seq): identifies a message."""


def message_key(m: Message) -> MessageKey:
    """The key identifying ``m`` in a transcript."""
    return (m.protocol, int(m.round), m.sender, m.receiver, int(m.seq))


@functools.lru_cache(maxsize=64)
def _normal_quantile(q: float) -> float:
    # the standard normal's quantile (scipy.stats.norm.ppf is this function; scipy.stats
    # itself costs ~0.7 s to import); kept: one report asks for the same few per party
    return float(special.ndtri(q))


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Returns ``(nan, nan)`` when there are no trials.
    """
    if trials < 0 or successes < 0 or successes > trials:
        raise ConfigError(f"need 0 <= successes <= trials, got {successes}/{trials}")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")
    if trials == 0:
        return (float("nan"), float("nan"))
    z = _normal_quantile(0.5 + confidence / 2)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    # the interval always holds p; rounding must not push an end past it (at p = 0 or 1
    # the end is exactly 0 or 1)
    low = 0.0 if successes == 0 else min(p, max(0.0, float(centre - half)))
    high = 1.0 if successes == trials else max(p, min(1.0, float(centre + half)))
    return (low, high)


@dataclass(frozen=True)
class Claim:
    """The claim that the masked elements of a message's payload entry belong to ``target``.

    ``mask`` has the payload entry's shape; its leading axis is the query batch.
    """

    observer: tuple[PartyId, ...]
    target: PartyId
    message: MessageKey
    key: str
    mask: np.ndarray


@dataclass
class Claims:
    """Everything an adversary claims."""

    adversary: str
    items: list[Claim] = field(default_factory=list)

    def add(self, claim: Claim) -> None:
        """Record one claim."""
        self.items.append(claim)


@dataclass(frozen=True)
class Disclosure:
    """Disclosure of one target party."""

    party: PartyId
    disclosed: int
    trials: int
    claimed: int
    correct: int

    @property
    def probability(self) -> float:
        """Fraction of trials (queries) where at least one claim was right."""
        return self.disclosed / self.trials if self.trials else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95% interval of :attr:`probability`."""
        return wilson_interval(self.disclosed, self.trials)

    @property
    def precision(self) -> float:
        """Fraction of claimed elements that really were the party's."""
        return self.correct / self.claimed if self.claimed else float("nan")


@dataclass(frozen=True)
class DisclosureReport:
    """Per-party disclosure of one adversary, and its aggregate."""

    adversary: str
    parties: tuple[Disclosure, ...]

    @property
    def mean_probability(self) -> float:
        """Mean over parties of the per-party disclosure probability."""
        probs = [d.probability for d in self.parties if d.trials]
        return float(np.mean(probs)) if probs else float("nan")

    @property
    def pooled_interval(self) -> tuple[float, float]:
        """Wilson 95% interval over all (party, query) trials pooled."""
        return wilson_interval(sum(d.disclosed for d in self.parties),
                               sum(d.trials for d in self.parties))

    def as_rows(self) -> list[dict[str, object]]:
        """One row per party (for tables)."""
        rows = []
        for d in self.parties:
            lo, hi = d.interval
            rows.append({
                "adversary": self.adversary, "party": d.party, "disclosed": d.disclosed,
                "trials": d.trials, "probability": d.probability, "ci_low": lo, "ci_high": hi,
                "claimed_elements": d.claimed, "correct_elements": d.correct,
                "precision": d.precision,
            })
        return rows


def score_attribution(
    claims: Claims,
    messages: Iterable[Message],
    party_index: Mapping[PartyId, int],
    n_queries: int,
) -> DisclosureReport:
    """Score attribution claims against provenance.

    A trial is one (target party, query). It counts as *disclosed* when at
    least one element claimed as the target's, in any message, really came
    from the target (its provenance equals the target's index).

    Parameters
    ----------
    claims:
        The adversary's claims.
    messages:
        The transcript's messages **with** provenance.
    party_index:
        Provenance code of each party.
    n_queries:
        Size of the query batch (the trials per party).
    """
    by_key = {message_key(m): m for m in messages}
    disclosed = {p: np.zeros(n_queries, dtype=bool) for p in party_index}
    claimed = dict.fromkeys(party_index, 0)
    correct = dict.fromkeys(party_index, 0)
    for c in claims.items:
        if c.target not in party_index:
            raise ConfigError(f"claim names unknown party {c.target!r}")
        msg = by_key.get(c.message)
        if msg is None:
            raise ConfigError(f"claim refers to a message not in the transcript: {c.message}")
        prov = np.broadcast_to(np.asarray(msg.provenance[c.key]), c.mask.shape)
        hit = c.mask & (prov == party_index[c.target])
        claimed[c.target] += int(c.mask.sum())
        correct[c.target] += int(hit.sum())
        disclosed[c.target] |= hit.reshape(hit.shape[0], -1).any(axis=1)
    return DisclosureReport(
        adversary=claims.adversary,
        parties=tuple(
            Disclosure(party=p, disclosed=int(disclosed[p].sum()), trials=n_queries,
                       claimed=claimed[p], correct=correct[p])
            for p in sorted(party_index, key=party_index.__getitem__)
        ),
    )


def multiset_new(received: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Row-wise multiset difference mask: elements of ``received`` not in ``reference``.

    For each row, the i-th occurrence of a value in ``received`` is marked
    new when ``reference`` holds fewer than i occurrences of it. Vectorised:
    for narrow rows (the top-k vectors, k <= 16) by comparing every pair of
    elements (the counts are sums of equalities, added column by column);
    for wider rows, one stable row-wise sort of
    ``[reference | received]`` puts the reference's copies of a value before
    the received ones, and run lengths of equal values give the counts. Both
    compare values with ``==`` (a NaN is always new).

    >>> multiset_new(np.array([[1., 1., 2.]]), np.array([[1., 3., 3.]])).tolist()
    [[False, True, True]]
    >>> multiset_new(np.array([[2., 1., 1.]]), np.array([[1., 3., 3.]])).tolist()
    [[True, False, True]]
    """
    a = np.asarray(received)
    b = np.asarray(reference)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise ConfigError(f"need two 2-D arrays with equal rows, got {a.shape} and {b.shape}")
    q, ka = a.shape
    kb = b.shape[1]
    if a.size == 0:
        return np.zeros(a.shape, dtype=bool)
    if max(ka, kb) <= _PAIRWISE_WIDTH:
        return _multiset_new_pairwise(a, b)
    both = np.concatenate([b, a], axis=1)
    order = np.argsort(both, axis=1, kind="stable")
    values = np.take_along_axis(both, order, axis=1)
    from_a = order >= kb
    width = ka + kb
    cols = np.broadcast_to(np.arange(width), (q, width))
    starts = np.ones((q, width), dtype=bool)
    starts[:, 1:] = values[:, 1:] != values[:, :-1]
    group_start = np.maximum.accumulate(np.where(starts, cols, 0), axis=1)
    a_before = np.cumsum(from_a, axis=1) - from_a  # received copies strictly before
    b_before = np.cumsum(~from_a, axis=1) - ~from_a
    a_at_start = np.take_along_axis(a_before, group_start, axis=1)
    b_at_start = np.take_along_axis(b_before, group_start, axis=1)
    rank = a_before - a_at_start  # this copy's rank among equal received values
    b_in_group = (b_before + ~from_a) - b_at_start  # reference copies precede received ones
    new = rank >= b_in_group
    out = np.empty((q, ka), dtype=bool)
    rows = np.broadcast_to(np.arange(q)[:, None], (q, width))
    out[rows[from_a], order[from_a] - kb] = new[from_a]
    return out


_PAIRWISE_WIDTH = 16
"""Rows at most this wide are compared pair by pair (:func:`multiset_new`)."""


def _multiset_new_pairwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`multiset_new` by pairwise equality.

    A received copy is new when its rank among the equal received values
    reaches the reference's count of that value. Both counts are added up
    one column at a time on ``(rows, ka)`` arrays (a reduction over a
    ``(rows, ka, kb)`` cube's short last axis costs about three times as
    much), so the temporaries stay the size of the input.
    """
    q, ka = a.shape
    in_reference = np.zeros((q, ka), dtype=np.int64)
    for j in range(b.shape[1]):  # copies of each received value in the reference
        in_reference += a == b[:, j:j + 1]
    rank = np.zeros((q, ka), dtype=np.int64)
    for j in range(ka - 1):  # equal received values in earlier columns
        rank[:, j + 1:] += a[:, j + 1:] == a[:, j:j + 1]
    return rank >= in_reference


def coalition_views(transcript, coalitions: Sequence[Sequence[PartyId]],
                    protocol: str | None = None):
    """Pooled views of several coalitions (convenience)."""
    return [transcript.view(c, protocol=protocol) for c in coalitions]


__all__ = [
    "Claim",
    "Claims",
    "Disclosure",
    "DisclosureReport",
    "coalition_views",
    "message_key",
    "multiset_new",
    "score_attribution",
    "wilson_interval",
]
