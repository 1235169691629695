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
together (DP-TT's side inference reads it so: its plugin's attacks).

The ring's attacks keep a state per node (the last vector it sent, or the
secure-sum messages around it). When that state for every node does not fit
:data:`STATE_BUDGET`, the nodes are split into groups that fit and
:func:`scatter` reads the transcript **once**, writing each message to the
temporary files of the groups that need it (raw encoded bytes, in round
order), then hands each group its own messages. The work and the bytes read
and written are linear in the transcript; one pass per group over the whole
transcript would be quadratic in the number of nodes (a 100,000-node ring
needs about 200 groups of 8 MiB). The spill goes into a hidden folder inside
the transcript's own folder (``transcript/.scatter-XXXX``; the system's
temporary directory, ``TMPDIR``, for a transcript held in memory), not into
``/tmp``, which is often a small RAM-backed file system: the transcript's
disk evidently had room for about as much. It holds about one copy of the
messages scattered (two where sender and receiver fall in different groups)
and is removed as it is read. Before writing, :func:`scatter` compares that
estimate with the free space there and refuses with one line saying how much
it needs, rather than filling the disk. Results equal the whole-transcript
versions (:func:`protocols.ppknn_ring.plugin.disclosure.measure_disclosure`; tests).
"""

from __future__ import annotations

import functools
import json
import pickle
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import Message, encode_arrays
from ppknn.core.transcript import Transcript

_HEADER = ("run_id", "protocol", "round", "seq", "sender", "receiver", "kind")

BYTE_BUDGET = 4 * 2**20
"""Payload and provenance bytes per record batch (at least one row is read)."""

_MAGIC_LEN = 4
_MAGIC = encode_arrays({})[:_MAGIC_LEN]  # the encoding's magic bytes


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
        table = _held_part(part)
        if table is not None:  # read once for every attack of the run
            mask = _mask(table, filters)
            out = table.filter(mask) if mask is not None else table
            rows = max(1, int(budget // max(out.nbytes / max(out.num_rows, 1), 1.0)))
            for batch in out.to_batches(max_chunksize=rows):
                yield batch.select(keep) if keep else batch
            continue
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


HOLD_BUDGET = 256 * 2**20
"""Uncompressed bytes of transcript parts :func:`batches` reads whole and holds, so a
run's attacks (which each filter the same parts) decode them once; a larger part is
streamed row group by row group, as every part was."""

_HELD: dict[tuple[str, int, int], pa.Table] = {}


def _held_part(part: Path) -> pa.Table | None:
    """``part`` read whole and held (``None`` when it, with what is held, exceeds the budget).

    Keyed by path, size and modification time: a part written again is read again.
    """
    st = part.stat()
    key = (str(part), st.st_size, st.st_mtime_ns)
    if key in _HELD:
        return _HELD[key]
    pf = pq.ParquetFile(part)
    size = sum(pf.metadata.row_group(g).total_byte_size for g in range(pf.num_row_groups))
    held = sum(t.nbytes for t in _HELD.values())
    if held + size > HOLD_BUDGET:
        return None
    table = pf.read(use_threads=False)
    _HELD[key] = table
    return table


def release() -> None:
    """Drop the transcript parts :func:`batches` holds (called once a run is scored)."""
    _HELD.clear()


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
    if bytes(mv[:_MAGIC_LEN]) != _MAGIC:
        raise ProtocolError("not an encoded payload (bad magic bytes)")
    (hlen,) = struct.unpack_from("<I", mv, _MAGIC_LEN)
    offset = 8 + hlen
    out: dict[str, np.ndarray] = {}
    for name, dt, shape, count in _layout(bytes(mv[8:offset])):
        out[name] = np.frombuffer(buffer, dtype=dt, count=count, offset=offset).reshape(shape)
        offset += count * dt.itemsize
    return out


@functools.lru_cache(maxsize=1024)
def _layout(header: bytes) -> tuple[tuple[str, np.dtype, tuple[int, ...], int], ...]:
    """``(name, dtype, shape, element count)`` of each array an encoded header describes.

    Cached: a protocol's thousands of messages share a few layouts, and parsing the
    JSON header was most of the cost of decoding a small message.
    """
    out = []
    for name, dtype, shape in json.loads(header):
        shape = tuple(int(s) for s in shape)
        out.append((name, np.dtype(dtype), shape, int(np.prod(shape, dtype=np.int64))))
    return tuple(out)


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


STATE_BUDGET = 8 * 2**20
"""Bytes of per-node state (vectors) the ring's attacks keep in memory for one group."""

SPILL_BUDGET = 4 * 2**20
"""Bytes :func:`scatter` buffers before appending them to the groups' files."""

_Header = tuple[str, str, int, int, str, str, str]  # run_id, protocol, round, seq, ...


class _Spill:
    """Records appended to one temporary file per group, buffered up to a byte budget.

    A record is one pickled ``(header, payload, provenance)`` tuple (the
    transcript's encoded bytes); a record wanted by two groups is pickled once.
    Files are opened to append when the buffer is flushed, so the number of
    groups is not bounded by the open-file limit.
    """

    def __init__(self, directory: Path, groups: int, budget: int) -> None:
        self.paths = [directory / f"group-{g}.pkl" for g in range(groups)]
        self.budget = budget
        self.pending: dict[int, list[bytes]] = {}
        self.size = 0

    def put(self, groups: Iterable[int], record: bytes) -> None:
        for g in groups:
            self.pending.setdefault(g, []).append(record)
            self.size += len(record)
        if self.size >= self.budget:
            self.flush()

    def flush(self) -> None:
        for g, records in self.pending.items():
            with open(self.paths[g], "ab") as fh:
                fh.writelines(records)
        self.pending, self.size = {}, 0

    def read(self, group: int, with_provenance: bool) -> Iterator[Message]:
        path = self.paths[group]
        if not path.exists():
            return
        with open(path, "rb") as fh:
            while True:
                try:
                    head, payload, prov = pickle.load(fh)
                except EOFError:
                    return
                yield Message(**dict(zip(_HEADER, head)), payload=decode_view(payload),
                              provenance=decode_view(prov) if with_provenance else {})


def scatter(transcript: Transcript, protocol: str, groups: int,
            groups_of: Callable[[str, str, str], Iterable[int]], *,
            kinds: tuple[str, ...] = (), with_provenance: bool = True,
            spill_budget: int | None = None
            ) -> Iterator[tuple[int, Iterator[Message]]]:
    """``(group, messages)`` for each group ``0 .. groups - 1``, after one read of the transcript.

    ``groups_of(sender, receiver, kind)`` names the groups that need a message
    (none: it is dropped). Each group gets its messages in round order, and in
    stored order within a round. With one group nothing is written: the
    messages come straight from the transcript. Otherwise they are written,
    undecoded, to one temporary file per group (:class:`_Spill`) in a single
    pass, then read back group by group; the files are removed when the
    generator finishes or is closed. A group's messages must be consumed before
    the next group is asked for.
    """
    rounds = rounds_of(transcript, protocol)
    if groups <= 1:
        def direct() -> Iterator[Message]:
            for r in rounds:
                for m in iter_messages(transcript, protocol, round=r, kinds=kinds,
                                       with_provenance=with_provenance):
                    if any(True for _ in groups_of(m.sender, m.receiver, m.kind)):
                        yield m
        yield 0, direct()
        return
    columns = [*_HEADER, "payload"] + (["provenance"] if with_provenance else [])
    where = transcript.directory if transcript.directory is not None else Path(
        tempfile.gettempdir())
    need = _spill_estimate(transcript, protocol, kinds, with_provenance)
    free = _free_bytes(where)
    if need > free:
        raise ConfigError(
            f"scoring {protocol!r} needs about {_size(need)} of temporary files for {groups} "
            f"groups of nodes in {str(where)!r} and only {_size(free)} is free there; make "
            "room and run again")
    try:
        tmp_dir = tempfile.TemporaryDirectory(prefix=".scatter-", dir=where)
        with tmp_dir as tmp:
            spill = _Spill(Path(tmp), groups,
                           SPILL_BUDGET if spill_budget is None else spill_budget)
            for r in rounds:
                for b in batches(transcript, _filters(protocol, r, kinds), columns):
                    head = [b[c].to_pylist() for c in _HEADER]
                    payload = b["payload"]
                    prov = b["provenance"] if with_provenance else None
                    for i, row in enumerate(zip(*head)):
                        wanted = set(groups_of(row[4], row[5], row[6]))
                        if wanted:
                            spill.put(wanted, pickle.dumps(
                                (row, payload[i].as_py(), prov[i].as_py() if prov is not None
                                 else b""), protocol=pickle.HIGHEST_PROTOCOL))
            spill.flush()
            for g in range(groups):
                yield g, spill.read(g, with_provenance)
                spill.paths[g].unlink(missing_ok=True)
    except OSError as exc:  # e.g. the disk filled up meanwhile: say where
        raise ConfigError(
            f"scoring {protocol!r} needs temporary files for {groups} groups of nodes in "
            f"{str(where)!r} and could not write them ({exc.strerror or exc}); make room "
            f"there (about {_size(need)}) and run again") from None


def _spill_estimate(transcript: Transcript, protocol: str, kinds: tuple[str, ...],
                    with_provenance: bool) -> int:
    """Bytes :func:`scatter` may write: twice the scattered messages' cells (an upper bound).

    Twice, as a message goes to its sender's group and to its receiver's. A
    message's payload and header are at most its recorded ``wire_bytes`` (one
    small column, read); its provenance is bounded from the Parquet metadata
    by the provenance column of the row groups that may hold ``protocol``
    (the column itself is not read).
    """
    total = 0
    for b in batches(transcript, _filters(protocol, None, kinds), ["wire_bytes"]):
        total += int(pc.sum(b["wire_bytes"]).as_py() or 0)
    if with_provenance:
        if transcript.directory is None:
            table = transcript.table(columns=["protocol", "provenance"])
            rows = table.filter(_mask(table, [("protocol", "=", protocol)]))
            total += int(rows["provenance"].nbytes)
        for part in transcript.parts():
            meta = pq.ParquetFile(part).metadata
            names = meta.schema.to_arrow_schema().names
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                if "provenance" in names and _may_hold(group, names,
                                                       [("protocol", "=", protocol)]):
                    total += group.column(names.index("provenance")).total_uncompressed_size
    return 2 * total


def _free_bytes(where: Path) -> int:
    """Free bytes on the file system holding ``where`` (unknown: no limit)."""
    try:
        return int(shutil.disk_usage(where).free)
    except OSError:
        return 2**63


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


__all__ = ["BYTE_BUDGET", "HOLD_BUDGET", "SPILL_BUDGET", "STATE_BUDGET", "batches",
           "decode_view", "iter_messages", "iter_rows", "release", "round_messages", "rounds_of",
           "scatter"]
