"""Bounded-memory scoring: read the transcript one protocol round at a time.

:func:`round_messages` yields a protocol's messages round by round, each
round read from every Parquet part with the protocol and round pushed into
the reader as filters, so memory holds one round (plus one part being read),
never the whole transcript. The ring's attribution attacks and DP-TT's side
inference are scored this way; their results equal the whole-transcript
versions (:func:`simulations.disclosure.measure_disclosure`; tests).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppknn.core.leakage import Disclosure, DisclosureReport, multiset_new
from ppknn.core.messages import Message, decode_arrays
from ppknn.core.transcript import Transcript

_HEADER = ("run_id", "protocol", "round", "seq", "sender", "receiver", "kind")


def _filters(protocol: str, round: int | None, kinds: tuple[str, ...]
             ) -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = [("protocol", "=", protocol)]
    if round is not None:
        out.append(("round", "=", int(round)))
    if kinds:
        out.append(("kind", "in", list(kinds)))
    return out


def _tables(transcript: Transcript, filters: list[tuple[str, str, Any]],
            columns: list[str] | None = None) -> Iterator[pa.Table]:
    """The rows matching ``filters``, one part at a time (filters pushed into the reader)."""
    if transcript.directory is None:
        table = transcript.table(columns=None)
        mask = None
        for col, op, value in filters:
            cond = (pc.is_in(table[col], pa.array(value)) if op == "in"
                    else pc.equal(table[col], value))
            mask = cond if mask is None else pc.and_(mask, cond)
        out = table.filter(mask) if mask is not None else table
        yield out.select(columns) if columns else out
        return
    for part in transcript.parts():
        yield pq.read_table(part, columns=columns, filters=filters or None)


def rounds_of(transcript: Transcript, protocol: str) -> list[int]:
    """The rounds ``protocol`` used (reads one column)."""
    found: set[int] = set()
    for t in _tables(transcript, [("protocol", "=", protocol)], ["round"]):
        found.update(int(r) for r in pc.unique(t["round"]).to_pylist())
    return sorted(found)


def iter_rows(transcript: Transcript, protocol: str, *, round: int | None = None,
              kinds: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """Transcript rows (payload and provenance still encoded), part by part, batch by batch."""
    for t in _tables(transcript, _filters(protocol, round, kinds)):
        for batch in t.to_batches(max_chunksize=256):
            yield from batch.to_pylist()


def _message(row: Mapping[str, Any], with_provenance: bool) -> Message:
    return Message(**{c: row[c] for c in _HEADER}, payload=decode_arrays(row["payload"]),
                   provenance=decode_arrays(row["provenance"]) if with_provenance else {})


def round_messages(transcript: Transcript, protocol: str, *, kinds: tuple[str, ...] = (),
                   with_provenance: bool = True) -> Iterator[tuple[int, list[Message]]]:
    """``(round, messages)`` of ``protocol`` in round order, one round in memory at a time."""
    for r in rounds_of(transcript, protocol):
        out = [_message(row, with_provenance)
               for row in iter_rows(transcript, protocol, round=r, kinds=kinds)]
        out.sort(key=lambda m: (m.sender, m.receiver, m.seq))
        yield r, out


@dataclass
class _Tally:
    disclosed: dict[str, np.ndarray]
    claimed: dict[str, int]
    correct: dict[str, int]

    @classmethod
    def new(cls, parties: list[str], n_queries: int) -> _Tally:
        return cls({p: np.zeros(n_queries, dtype=bool) for p in parties},
                   dict.fromkeys(parties, 0), dict.fromkeys(parties, 0))

    def add(self, target: str, mask: np.ndarray, prov: np.ndarray, code: int) -> None:
        if not mask.any():
            return
        hit = mask & (np.broadcast_to(prov, mask.shape) == code)
        self.claimed[target] += int(mask.sum())
        self.correct[target] += int(hit.sum())
        self.disclosed[target] |= hit.reshape(hit.shape[0], -1).any(axis=1)

    def report(self, adversary: str, order: list[str], n_queries: int) -> DisclosureReport:
        return DisclosureReport(adversary=adversary, parties=tuple(
            Disclosure(party=p, disclosed=int(self.disclosed[p].sum()), trials=n_queries,
                       claimed=self.claimed[p], correct=self.correct[p]) for p in order))


def ring_attribution(transcript: Transcript, public: Mapping[str, Any]
                     ) -> tuple[DisclosureReport, DisclosureReport]:
    """Successor attribution and the informed successor, streamed (module docstring).

    The attack is :func:`protocols.ppknn.pp_topk_attacks.successor_attribution`:
    each node compares every vector it receives with the last one it sent
    before (the start node: in the same round too; nobody: the public initial
    vector); the informed variant keeps only values that are also in the final
    broadcast vector.
    """
    from ppknn.protocols.ppknn.pp_topk import PROTOCOL
    from ppknn.protocols.ppknn.pp_topk_attacks import ADVERSARY, INFORMED

    index = {p: int(i) for p, i in dict(public["party_index"]).items()}
    order = sorted(index, key=index.__getitem__)
    n_q = int(public["n_queries"])
    max_d = float(public["max_distance"])
    final: np.ndarray | None = None
    starts: set[str] = set()
    for row in iter_rows(transcript, PROTOCOL, kinds=("topk-final",)):
        starts.add(row["sender"])
        if final is None:
            final = np.asarray(decode_arrays(row["payload"])["g"])
    plain, informed = _Tally.new(order, n_q), _Tally.new(order, n_q)
    last_sent: dict[str, np.ndarray] = {}  # each node's latest vector: one round's worth
    for r in rounds_of(transcript, PROTOCOL):
        start_now = {}  # the start node compares with what it sent in this round
        for row in iter_rows(transcript, PROTOCOL, round=r, kinds=("topk-vector",)):
            if row["sender"] in starts:
                start_now[row["sender"]] = np.asarray(decode_arrays(row["payload"])["g"])
        sent_now: dict[str, np.ndarray] = {}
        for row in iter_rows(transcript, PROTOCOL, round=r, kinds=("topk-vector",)):
            sender, me = row["sender"], row["receiver"]
            g = np.asarray(decode_arrays(row["payload"])["g"])
            if me in start_now:
                reference = start_now[me]
            else:
                reference = last_sent.get(me, np.full(g.shape, max_d))
            mask = multiset_new(g, reference)
            prov = np.asarray(decode_arrays(row["provenance"])["g"])
            code = index[sender]
            plain.add(sender, mask, prov, code)
            if final is not None:
                informed.add(sender, mask & ~multiset_new(g, final), prov, code)
            sent_now[sender] = g
        last_sent.update(sent_now)
    return plain.report(ADVERSARY, order, n_q), informed.report(INFORMED, order, n_q)


@dataclass(frozen=True)
class SideTally:
    """DP-TT side inference over every decision: how many, how many right, the utility."""

    decisions: int
    correct: int
    utility: str


def dptt_side_inference(transcript: Transcript, queries: np.ndarray,
                        observer: str = "server") -> SideTally:
    """The server's side inference, streamed level by level (:mod:`protocols.dptt.adversary`)."""
    from ppknn.core.transcript import View
    from ppknn.protocols.dptt.adversary import side_claims, true_sides
    from ppknn.protocols.dptt.config import PROTOCOL

    total = correct = 0
    utility = "cmp"
    for _, msgs in round_messages(transcript, PROTOCOL, kinds=("nodes", "bits"),
                                  with_provenance=False):
        claims = side_claims(View.of(msgs, observer))
        if claims.slot.size:
            utility = claims.utility
            total += int(claims.slot.size)
            correct += int(np.sum(claims.right == true_sides(claims, queries)))
    return SideTally(total, correct, utility)


__all__ = ["SideTally", "dptt_side_inference", "iter_rows", "ring_attribution",
           "round_messages", "rounds_of"]
