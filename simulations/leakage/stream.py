"""Bounded-memory scoring: read the transcript in record batches under a byte budget.

Every reader here goes through :func:`batches`: each Parquet part is opened
without pre-buffering, its row groups are skipped when their statistics
cannot hold the protocol (and round) asked for, and the rest is read as
record batches of at most :data:`BYTE_BUDGET` payload bytes (the row count
derived from the row group's own sizes, at least one row), on the calling
thread, then filtered. Memory holds one batch and the scorer's state, never
a round or the transcript; a single message larger than the budget is read
alone, and :func:`iter_messages` decodes it without copying (its arrays are
views of the batch's buffer), so the peak follows the largest message, once.

:func:`round_messages` yields a protocol's messages round by round (sorted as
the whole-transcript readers sort them), for scorers that need a round
together. The ring's attribution attacks (in groups of nodes whose state fits
:data:`STATE_BUDGET`, one pass each) and DP-TT's attacks are scored this way;
their results equal the whole-transcript versions
(:func:`simulations.disclosure.measure_disclosure`; tests).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppknn.core.errors import ProtocolError
from ppknn.core.leakage import Disclosure, DisclosureReport, multiset_new
from ppknn.core.messages import Message, encode_arrays
from ppknn.core.transcript import Transcript

_HEADER = ("run_id", "protocol", "round", "seq", "sender", "receiver", "kind")

BYTE_BUDGET = 4 * 2**20
"""Payload and provenance bytes per record batch (at least one row is read)."""

_MAGIC_LEN = 4


def _filters(protocol: str, round: int | None, kinds: tuple[str, ...]
             ) -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = [("protocol", "=", protocol)]
    if round is not None:
        out.append(("round", "=", int(round)))
    if kinds:
        out.append(("kind", "in", list(kinds)))
    return out


def _mask(batch: pa.RecordBatch | pa.Table, filters: list[tuple[str, str, Any]]) -> Any:
    mask = None
    for col, op, value in filters:
        cond = (pc.is_in(batch[col], pa.array(value)) if op == "in"
                else pc.equal(batch[col], value))
        mask = cond if mask is None else pc.and_(mask, cond)
    return mask


def _may_hold(group: Any, names: list[str], filters: list[tuple[str, str, Any]]) -> bool:
    """Whether a row group's statistics allow a row matching the ``=`` filters."""
    for col, op, value in filters:
        if op != "=" or col not in names:
            continue
        stats = group.column(names.index(col)).statistics
        if stats is None or not stats.has_min_max:
            continue
        if not stats.min <= value <= stats.max:
            return False
    return True


def _rows_per_batch(group: Any, names: list[str], columns: list[str] | None,
                    budget: int) -> int:
    wanted = [c for c in ("payload", "provenance") if columns is None or c in columns]
    size = sum(group.column(names.index(c)).total_uncompressed_size for c in wanted
               if c in names)
    per_row = size / max(group.num_rows, 1)
    return max(1, int(budget // max(per_row, 1.0)))


def batches(transcript: Transcript, filters: list[tuple[str, str, Any]],
            columns: list[str] | None = None, *, budget: int = BYTE_BUDGET
            ) -> Iterator[pa.RecordBatch]:
    """The rows matching ``filters`` as record batches of at most ``budget`` bytes.

    Row groups whose statistics exclude the ``=`` filters are skipped; the others
    are read batch by batch (no pre-buffering, a 1 MiB read buffer, no reader
    threads) and filtered.
    ``columns`` selects the columns returned (the filter columns are read anyway).
    """
    keep = None if columns is None else list(dict.fromkeys(columns))
    read = None if keep is None else list(dict.fromkeys(keep + [f[0] for f in filters]))
    if transcript.directory is None:
        table = transcript.table(columns=None)
        mask = _mask(table, filters)
        out = table.filter(mask) if mask is not None else table
        for batch in out.to_batches():
            yield batch.select(keep) if keep else batch
        return
    for part in transcript.parts():
        pf = pq.ParquetFile(part, pre_buffer=False, buffer_size=1 << 20)
        names = pf.schema_arrow.names
        for g in range(pf.num_row_groups):
            group = pf.metadata.row_group(g)
            if not _may_hold(group, names, filters):
                continue
            rows = _rows_per_batch(group, names, read, budget)
            for batch in pf.iter_batches(batch_size=rows, row_groups=[g], columns=read,
                                         use_threads=False):
                mask = _mask(batch, filters)
                if mask is not None:
                    hits = int(pc.sum(mask).as_py() or 0)
                    if hits == 0:
                        continue
                    if hits < batch.num_rows:  # a copy of the kept rows; none when all match
                        batch = batch.filter(mask)
                yield batch.select(keep) if keep else batch


def rounds_of(transcript: Transcript, protocol: str) -> list[int]:
    """The rounds ``protocol`` used (reads two small columns)."""
    found: set[int] = set()
    for b in batches(transcript, [("protocol", "=", protocol)], ["round"]):
        found.update(int(r) for r in pc.unique(b["round"]).to_pylist())
    return sorted(found)


def iter_rows(transcript: Transcript, protocol: str, *, round: int | None = None,
              kinds: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """Transcript rows (payload and provenance still encoded bytes), batch by batch."""
    for b in batches(transcript, _filters(protocol, round, kinds)):
        yield from b.to_pylist()


def decode_view(buffer: Any) -> dict[str, np.ndarray]:
    """:func:`core.messages.decode_arrays` without a copy: the arrays view ``buffer``.

    ``buffer`` is anything with the buffer protocol (a ``pyarrow.Buffer`` of a
    transcript cell); the arrays keep it alive and are read-only.
    """
    mv = memoryview(buffer)
    if bytes(mv[:_MAGIC_LEN]) != encode_arrays({})[:_MAGIC_LEN]:
        raise ProtocolError("not an encoded payload (bad magic bytes)")
    (hlen,) = struct.unpack("<I", mv[_MAGIC_LEN:_MAGIC_LEN + 4])
    metas = json.loads(bytes(mv[8:8 + hlen]))
    offset = 8 + hlen
    out: dict[str, np.ndarray] = {}
    for name, dtype, shape in metas:
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        out[name] = np.frombuffer(buffer, dtype=dt, count=count, offset=offset).reshape(shape)
        offset += count * dt.itemsize
    return out


def iter_messages(transcript: Transcript, protocol: str, *, round: int | None = None,
                  kinds: tuple[str, ...] = (), with_provenance: bool = True,
                  budget: int = BYTE_BUDGET) -> Iterator[Message]:
    """Messages one at a time in stored order, payloads decoded without a copy."""
    columns = [*_HEADER, "payload"] + (["provenance"] if with_provenance else [])
    for b in batches(transcript, _filters(protocol, round, kinds), columns, budget=budget):
        head = {c: b[c].to_pylist() for c in _HEADER}
        payload, prov = b["payload"], b["provenance"] if with_provenance else None
        for i in range(b.num_rows):
            yield Message(**{c: head[c][i] for c in _HEADER},
                          payload=decode_view(payload[i].as_buffer()),
                          provenance=decode_view(prov[i].as_buffer()) if prov is not None
                          else {})


def round_messages(transcript: Transcript, protocol: str, *, kinds: tuple[str, ...] = (),
                   with_provenance: bool = True) -> Iterator[tuple[int, list[Message]]]:
    """``(round, messages)`` of ``protocol`` in round order, one round in memory at a time."""
    for r in rounds_of(transcript, protocol):
        out = list(iter_messages(transcript, protocol, round=r, kinds=kinds,
                                 with_provenance=with_provenance))
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


STATE_BUDGET = 8 * 2**20
"""Bytes of vectors the ring's successor attacks keep per pass over the transcript."""


def ring_attribution(transcript: Transcript, public: Mapping[str, Any], *,
                     state_budget: int = STATE_BUDGET
                     ) -> tuple[DisclosureReport, DisclosureReport]:
    """Successor attribution and the informed successor, streamed (module docstring).

    The attack is :func:`protocols.ppknn.pp_topk_attacks.successor_attribution`:
    each node compares every vector it receives with the last one it sent
    before (the start node: in the same round too; nobody: the public initial
    vector); the informed variant keeps only values that are also in the final
    broadcast vector.

    Its state is one vector per observing node (what it sent last), a round's
    worth. The nodes are taken in groups whose two vectors each (the last
    round's and this round's) fit ``state_budget``, one pass over the rounds per
    group, so memory holds one record batch and the group's vectors; a ring
    whose round fits the budget is read once.
    """
    from ppknn.protocols.ppknn.pp_topk import PROTOCOL
    from ppknn.protocols.ppknn.pp_topk_attacks import ADVERSARY, INFORMED

    index = {p: int(i) for p, i in dict(public["party_index"]).items()}
    order = sorted(index, key=index.__getitem__)
    n_q = int(public["n_queries"])
    max_d = float(public["max_distance"])
    final: np.ndarray | None = None
    starts: set[str] = set()
    for m in iter_messages(transcript, PROTOCOL, kinds=("topk-final",), with_provenance=False):
        starts.add(m.sender)
        if final is None:
            final = np.array(m.payload["g"])  # a copy: a view would hold its whole batch
    plain, informed = _Tally.new(order, n_q), _Tally.new(order, n_q)
    rounds = rounds_of(transcript, PROTOCOL)
    vector = final.nbytes if final is not None else 8 * n_q * 64
    group = max(1, int(state_budget // (2 * max(vector, 1))))

    def score(sender: str, g: np.ndarray, reference: np.ndarray, prov: np.ndarray) -> None:
        mask = multiset_new(g, reference)
        code = index[sender]
        plain.add(sender, mask, prov, code)
        if final is not None:
            informed.add(sender, mask & ~multiset_new(g, final), prov, code)

    for first in range(0, len(order), group):
        members = set(order[first:first + group])
        last_sent: dict[str, np.ndarray] = {}  # each member's latest vector
        for r in rounds:
            sent_now: dict[str, np.ndarray] = {}
            to_start = []  # the start node compares with what it sends in this round too
            for m in iter_messages(transcript, PROTOCOL, round=r, kinds=("topk-vector",)):
                if m.sender in members:
                    sent_now[m.sender] = np.array(m.payload["g"])
                me = m.receiver
                if me not in members:
                    continue
                g = np.asarray(m.payload["g"])
                prov = np.asarray(m.provenance["g"])
                if me in starts:
                    to_start.append((m.sender, me, np.array(g), np.array(prov)))
                else:
                    score(m.sender, g, last_sent.get(me, np.full(g.shape, max_d)), prov)
            for sender, me, g, prov in to_start:
                reference = sent_now.get(me)
                if reference is None:
                    reference = last_sent.get(me, np.full(g.shape, max_d))
                score(sender, g, reference, prov)
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


__all__ = ["BYTE_BUDGET", "STATE_BUDGET", "SideTally", "batches", "decode_view",
           "dptt_side_inference", "iter_messages", "iter_rows", "ring_attribution",
           "round_messages", "rounds_of"]
