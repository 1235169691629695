"""The transcript: every message of a run, what its receiver saw and where it came from.

:class:`TranscriptRecorder` receives batches of records (fire-and-forget
from party hosts; on Ray it runs as an actor, see
:mod:`core.runtime.ray_runtime`) and writes them as numbered Parquet part
files in a directory. Each part is a complete Parquet file, and the directory
is readable as one table at any time. Memory is bounded by the flush size.
Each batch is also appended, as it arrives, to the journal of the part being
filled (``journal-NNNNNN.arrows``, an Arrow IPC stream, removed once that part
is written), so a recorder that dies -- its process killed, its node lost --
loses at most the batch it was receiving: :func:`recover_transcript` turns
what is on disk into parts and writes the totals (the driver does so when a
run fails and the recorder cannot close).

:class:`Transcript` reads a transcript directory back: as a table, per
receiver or round, as communication totals (computed column-wise, part by
part), and as :class:`View` objects (a party's or a coalition's received and
sent messages, **provenance stripped**) for adversaries.

Communication totals count a message once as *sent* by its sender and once
as *received* by its receiver; bytes are wire bytes (ciphertext, tag and
authenticated header when channels are on; encoded plaintext and header
when off).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ppknn.core.errors import ConfigError, DataError
from ppknn.core.messages import Message, PartyId, decode_arrays, encode_arrays

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow is imported where a table is built or read, not here: a party host imports this
# module for make_record and never builds a table, and pyarrow costs every worker ~30 ms


@functools.cache
def _schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("run_id", pa.string()),
            ("protocol", pa.string()),
            ("round", pa.int32()),
            ("seq", pa.int64()),
            ("sender", pa.string()),
            ("receiver", pa.string()),
            ("kind", pa.string()),
            ("payload", pa.binary()),
            ("provenance", pa.binary()),
            ("plaintext_bytes", pa.int64()),
            ("wire_bytes", pa.int64()),
            ("after", pa.list_(pa.struct([("sender", pa.string()), ("receiver", pa.string()),
                                          ("seq", pa.int64())]))),
        ]
    )


def __getattr__(name: str) -> Any:
    if name == "SCHEMA":  # built on first use (module attribute, PEP 562)
        return _schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SCHEMA: pa.Schema
"""The transcript's columns. ``after`` is the causal stamp (simulation metadata, like
``provenance``; no party sees it): the messages this one directly follows -- those its
sender received since its previous send, then that previous send (see
:func:`make_record`)."""
_HEADER_COLUMNS = ("run_id", "protocol", "round", "seq", "sender", "receiver", "kind")


MessageKey = tuple[PartyId, PartyId, int]
"""A message's identity within a run and protocol: (sender, receiver, seq)."""


def make_record(message: Message, *, payload: bytes, wire_bytes: int,
                after: Sequence[MessageKey] = (), provenance: bytes | None = None
                ) -> dict[str, Any]:
    """A transcript row for a sent message (``payload`` is its encoded payload).

    ``provenance``: ``encode_arrays(message.provenance)`` when the caller has it (encoded
    here otherwise).

    ``after`` is the causal stamp the party host gives: the (sender, receiver, seq) of the
    messages the sender received since its previous send, then that previous send. A
    network replay (:mod:`ppknn.simulations.network`) needs nothing more to know when the
    message could leave. It is deterministic (the host derives it from the driver's call
    order, as it does sequence numbers), so equal runs on either runtime record it equally.

    >>> from ppknn.core.messages import Message
    >>> m = Message("run", "demo", 0, 1, "a", "b", "x", {})
    >>> make_record(m, payload=b"", wire_bytes=10, after=[("c", "a", 0), ("a", "b", 0)])["after"]
    [{'sender': 'c', 'receiver': 'a', 'seq': 0}, {'sender': 'a', 'receiver': 'b', 'seq': 0}]
    """
    row = message.header()
    row["payload"] = payload
    row["provenance"] = (encode_arrays(message.provenance) if provenance is None
                         else provenance)
    row["plaintext_bytes"] = len(payload)
    row["wire_bytes"] = int(wire_bytes)
    row["after"] = [{"sender": s, "receiver": r, "seq": int(q)} for s, r, q in after]
    return row


_MAX_BINARY_CHUNK = (1 << 31) - 1  # int32 offsets of pa.binary()


def _binary_column(values: Sequence[bytes]) -> pa.ChunkedArray:
    """A binary column built from one joined buffer and offsets.

    Ten times faster than ``pa.array(values)`` for large payloads (that
    grows its buffer value by value); chunked so no chunk passes 2 GiB.
    """
    import pyarrow as pa

    chunks, start, size = [], 0, 0
    for i, v in enumerate(values):
        if size + len(v) > _MAX_BINARY_CHUNK and i > start:
            chunks.append(values[start:i])
            start, size = i, 0
        size += len(v)
    chunks.append(values[start:])
    arrays = []
    for chunk in chunks:
        offsets = np.zeros(len(chunk) + 1, dtype=np.int32)
        np.cumsum([len(v) for v in chunk], out=offsets[1:])
        arrays.append(pa.Array.from_buffers(pa.binary(), len(chunk),
                                            [None, pa.py_buffer(offsets),
                                             pa.py_buffer(b"".join(chunk))]))
    return pa.chunked_array(arrays, type=pa.binary())


def records_to_table(records: Sequence[dict[str, Any]]) -> pa.Table:
    """Transcript rows (:func:`make_record`) as an Arrow table of :data:`SCHEMA`."""
    import pyarrow as pa

    schema = _schema()
    columns = []
    for f in schema:
        values = [r[f.name] for r in records]
        if f.type == pa.binary():
            columns.append(_binary_column(values))
        else:
            columns.append(pa.chunked_array([pa.array(values, type=f.type)], type=f.type))
    return pa.Table.from_arrays(columns, schema=schema)


@dataclass
class CommunicationTotals:
    """Messages and wire bytes per party and direction."""

    sent_messages: dict[PartyId, int] = field(default_factory=lambda: defaultdict(int))
    sent_bytes: dict[PartyId, int] = field(default_factory=lambda: defaultdict(int))
    received_messages: dict[PartyId, int] = field(default_factory=lambda: defaultdict(int))
    received_bytes: dict[PartyId, int] = field(default_factory=lambda: defaultdict(int))
    by_protocol: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))

    def add(self, sender: Sequence[str], receiver: Sequence[str], protocol: Sequence[str],
            wire: Sequence[int]) -> None:
        """Count a batch of messages."""
        for s, r, p, b in zip(sender, receiver, protocol, wire):
            b = int(b)
            self.sent_messages[s] += 1
            self.sent_bytes[s] += b
            self.received_messages[r] += 1
            self.received_bytes[r] += b
            self.by_protocol[p][0] += 1
            self.by_protocol[p][1] += b

    @property
    def messages(self) -> int:
        """Total messages."""
        return int(sum(self.sent_messages.values()))

    @property
    def bytes(self) -> int:
        """Total wire bytes."""
        return int(sum(self.sent_bytes.values()))

    def as_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        parties = sorted(set(self.sent_messages) | set(self.received_messages))
        return {
            "messages": self.messages,
            "bytes": self.bytes,
            "direction_note": "sent = counted at the sender; received = counted at the receiver",
            "by_protocol": {p: {"messages": m, "bytes": b}
                            for p, (m, b) in sorted(self.by_protocol.items())},
            "per_party": {
                p: {
                    "sent_messages": int(self.sent_messages.get(p, 0)),
                    "sent_bytes": int(self.sent_bytes.get(p, 0)),
                    "received_messages": int(self.received_messages.get(p, 0)),
                    "received_bytes": int(self.received_bytes.get(p, 0)),
                }
                for p in parties
            },
        }


TOTALS = "totals.json"
RECORDER_NAME = "transcript-recorder"
"""The recorder's name where a party's would be: in a failure when it dies, and as a key of
a Ray run's placement (custom resources of the node it must run on)."""
JOURNAL_PREFIX = "journal-"


def _part_name(index: int) -> str:
    return f"part-{index:06d}.parquet"


def _journal_name(index: int) -> str:
    return f"{JOURNAL_PREFIX}{index:06d}.arrows"


def _write_part(path: Path, table: pa.Table) -> str:
    """Write ``table`` as the complete Parquet file ``path`` (absent or whole); its SHA-256."""
    import pyarrow as pa
    import pyarrow.parquet as pq  # only the recorder and readers need it, not party hosts

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = sink.getvalue().to_pybytes()
    tmp = path.with_suffix(".tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # a part is either absent or complete
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _naming(exc, path) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return hashlib.sha256(data).hexdigest()


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` as an ``OSError`` naming ``path`` (a full disk's error names no file)."""
    if exc.filename is not None and exc.errno is not None:
        return exc
    code = exc.errno
    if code is None and "No space left" in str(exc):  # pyarrow's own I/O errors
        import errno

        code = errno.ENOSPC
    return OSError(code, os.strerror(code) if code is not None else str(exc), str(path))


def _write_totals(directory: Path, record: dict[str, Any]) -> None:
    """Write ``totals.json`` whole (a new file renamed into place)."""
    path = directory / TOTALS
    tmp = directory / f".{TOTALS}.tmp"
    try:
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _naming(exc, path) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _read_journal(path: Path) -> pa.Table | None:
    """The complete batches of a journal (a batch cut short by a crash is dropped)."""
    import pyarrow as pa

    batches = []
    try:
        with pa.OSFile(str(path), "rb") as fh:
            reader = pa.ipc.open_stream(fh)
            while True:
                try:
                    batches.append(reader.read_next_batch())
                except StopIteration:
                    break
                except (pa.ArrowInvalid, OSError):  # the last batch, cut short
                    break
    except (pa.ArrowInvalid, OSError):  # not even the schema was written
        return None
    return pa.Table.from_batches(batches, schema=_schema()) if batches else None


def recover_transcript(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """Close, from what is on disk, a transcript whose recorder is gone; returns the totals.

    For a run that failed with its recorder dead (process killed, node lost) or
    unable to close. Each journal whose part was not written yet becomes that part
    (its complete batches: what the recorder had received, but for a batch cut
    short), a part file cut short (``part-*.tmp``) is removed, and ``totals.json``
    is written from the parts themselves, with each part's SHA-256 computed now
    (``part_sha256``) and ``"recovered": true``. A part that cannot be read is left
    out of the totals and listed under ``unreadable_parts`` (so
    :meth:`Transcript.check` refuses it by name). A transcript already closed
    (``totals.json`` there) is left as it is and its totals returned.

    Must not run while a recorder still writes into ``directory``.
    """
    folder = Path(directory)
    if (folder / TOTALS).is_file():
        return json.loads((folder / TOTALS).read_text())
    for tmp in folder.glob("part-*.tmp"):
        tmp.unlink(missing_ok=True)
    for journal in sorted(folder.glob(f"{JOURNAL_PREFIX}*.arrows")):
        index = journal.name[len(JOURNAL_PREFIX):-len(".arrows")]
        part = folder / f"part-{index}.parquet"
        if not part.exists():  # (written already: the recorder died before removing this)
            table = _read_journal(journal)
            if table is not None and table.num_rows:
                _write_part(part, table)
        journal.unlink()
    import pyarrow.parquet as pq

    totals = CommunicationTotals()
    digests: dict[str, str] = {}
    unreadable: list[str] = []
    for part in Transcript(folder).parts():
        try:
            t = pq.read_table(part, columns=["sender", "receiver", "protocol", "wire_bytes"])
        except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
            unreadable.append(part.name)
            continue
        totals.add(t["sender"].to_pylist(), t["receiver"].to_pylist(),
                   t["protocol"].to_pylist(), t["wire_bytes"].to_pylist())
        digests[part.name] = _file_sha256(part)
    record: dict[str, Any] = {**totals.as_dict(), "part_sha256": digests, "recovered": True}
    if unreadable:
        record["unreadable_parts"] = unreadable
    _write_totals(folder, record)
    return record


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_fresh(directory: str | os.PathLike[str]) -> None:
    """Refuse a folder that already holds a transcript: a run never deletes an earlier one."""
    folder = Path(directory)
    if folder.is_dir():
        old = sorted(p.name for p in folder.iterdir()
                     if p.name.startswith(("part-", JOURNAL_PREFIX)) or p.name == TOTALS)
        if old:
            raise ConfigError(f"transcript folder {str(folder)!r} already holds a transcript "
                              f"({len(old)} files, e.g. {old[0]!r}); a run writes into a fresh "
                              "folder and never deletes an earlier one")


class TranscriptRecorder:
    """Collects message records and writes them incrementally as Parquet parts.

    Parameters
    ----------
    directory:
        Where part files go (created; a folder already holding a transcript
        is refused, never emptied). ``None`` keeps records in memory only
        (for quick experiments and tests).
    flush_every:
        Write a part file once this many records are buffered.
    flush_bytes:
        ... or once their payloads and provenance reach this many bytes.
    """

    def __init__(self, directory: str | os.PathLike[str] | None, *,
                 flush_every: int = 4096, flush_bytes: int = 64 << 20) -> None:
        if flush_every < 1:
            raise ConfigError(f"flush_every must be >= 1, got {flush_every}")
        if flush_bytes < 1:
            raise ConfigError(f"flush_bytes must be >= 1, got {flush_bytes}")
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            check_fresh(self.directory)
            self.directory.mkdir(parents=True, exist_ok=True)
        self.flush_every = flush_every
        self.flush_bytes = flush_bytes
        self._buffer_bytes = 0
        self._buffer: list[dict[str, Any]] = []  # in memory only (no directory)
        self._tables: list[pa.Table] = []  # the part being filled, batch by batch (journaled)
        self._buffered = 0
        self._journal: Any = None  # the open journal writer of the part being filled
        self._memory: list[pa.Table] = []
        self._parts = 0
        self._digests: dict[str, str] = {}  # part name -> SHA-256 of its bytes
        self._count = 0
        self._closed = False
        self._last_beat: float | None = None  # when a host's step last beat (monotonic)
        self.totals = CommunicationTotals()

    def append(self, records: Iterable[dict[str, Any]]) -> int:
        """Add a batch of records; returns the number recorded so far."""
        if self._closed:
            raise RuntimeError("transcript recorder is closed")
        batch = list(records)
        if not batch:
            return self._count
        if self.directory is None:
            self._buffer.extend(batch)
        else:  # journaled before it counts: on disk as soon as it arrives
            table = records_to_table(batch)
            self._journal_batch(table)
            self._tables.append(table)
        self._buffered += len(batch)
        self._count += len(batch)
        self.totals.add([r["sender"] for r in batch], [r["receiver"] for r in batch],
                        [r["protocol"] for r in batch], [r["wire_bytes"] for r in batch])
        self._buffer_bytes += sum(len(r["payload"]) + len(r["provenance"]) for r in batch)
        if self._buffered >= self.flush_every or self._buffer_bytes >= self.flush_bytes:
            self.flush()
        return self._count

    def append_each(self, records: Sequence[dict[str, Any]]) -> int:
        """Add records as if one by one: a part ends at the record it would end at then.

        The records go in as few batches as the parts allow (each batch journaled as
        one). Returns the number recorded so far.
        """
        start, count, size = 0, self._buffered, self._buffer_bytes
        for i, r in enumerate(records):
            count += 1
            size += len(r["payload"]) + len(r["provenance"])
            if count >= self.flush_every or size >= self.flush_bytes:  # append() flushes here
                self.append(records[start:i + 1])
                start, count, size = i + 1, 0, 0
        return self.append(records[start:]) if start < len(records) else self._count

    def _journal_batch(self, table: pa.Table) -> None:
        """Append ``table`` to the journal of the part being filled (written through)."""
        import pyarrow as pa

        assert self.directory is not None
        path = self.directory / _journal_name(self._parts)
        try:
            if self._journal is None:
                sink = pa.OSFile(str(path), "wb")
                self._journal = (sink, pa.ipc.new_stream(sink, _schema()))
            self._journal[1].write_table(table)
        except OSError as exc:
            raise _naming(exc, path) from exc

    def _release_journal(self) -> None:
        """Close the journal's file; the file stays (what it holds is kept on disk)."""
        if self._journal is None:
            return
        sink, writer = self._journal
        self._journal = None
        try:
            writer.close()
        finally:
            sink.close()

    def _drop_journal(self) -> None:
        if self._journal is None:
            return
        self._release_journal()
        assert self.directory is not None
        (self.directory / _journal_name(self._parts)).unlink(missing_ok=True)

    def ping(self) -> int:
        """Records received so far (a liveness probe for a recorder in another process)."""
        return self._count

    def beat(self) -> None:
        """A host's running step made progress (:mod:`core.progress`).

        The Ray runtime's hosts send their beats here, to the one actor they all talk to.
        """
        self._last_beat = time.monotonic()

    def last_beat(self) -> float | None:
        """Seconds since the last :meth:`beat`, measured here (None when none came)."""
        return None if self._last_beat is None else time.monotonic() - self._last_beat

    def flush(self) -> None:
        """Write buffered records as one complete Parquet part (and drop its journal)."""
        if self.directory is None:
            if self._buffer:
                self._memory.append(records_to_table(self._buffer))
            self._buffer, self._buffer_bytes, self._buffered = [], 0, 0
            return
        if not self._tables:
            return
        import pyarrow as pa

        table = pa.concat_tables(self._tables)
        path = self.directory / _part_name(self._parts)
        self._digests[path.name] = _write_part(path, table)  # as written, for check()
        self._drop_journal()  # after the part: a crash in between leaves both, never neither
        self._tables, self._buffer_bytes, self._buffered = [], 0, 0
        self._parts += 1

    def close(self) -> dict[str, Any]:
        """Flush, write ``totals.json`` and return the communication totals.

        ``totals.json`` also holds each part's SHA-256 as written (``part_sha256``), which
        :meth:`Transcript.check` compares: a part changed at rest is found by name.
        """
        if not self._closed:
            try:
                self.flush()
            except BaseException:  # e.g. a full disk: the journal keeps the records, and
                try:               # its file is not left open in this process
                    self._release_journal()
                except OSError:
                    pass
                raise
            self._closed = True
            if self.directory is not None:
                _write_totals(self.directory, {**self.totals.as_dict(),
                                               "part_sha256": dict(self._digests)})
        return self.totals.as_dict()

    @property
    def count(self) -> int:
        """Records received so far."""
        return self._count

    def table(self) -> pa.Table:
        """Everything recorded so far as one table (flushes first)."""
        self.flush()
        if self.directory is None:
            import pyarrow as pa

            return pa.concat_tables(self._memory) if self._memory else _schema().empty_table()
        return Transcript(self.directory).table()


@dataclass(frozen=True)
class View:
    """What a party (or a coalition) saw: its messages without ground truth.

    Attributes
    ----------
    parties:
        The party or the coalition's members.
    received:
        Messages addressed to a member, in (protocol, round, order) order.
    sent:
        Messages a member sent.
    """

    parties: tuple[PartyId, ...]
    received: tuple[Message, ...]
    sent: tuple[Message, ...]

    @classmethod
    def of(cls, messages: Sequence[Message], parties: PartyId | Iterable[PartyId]) -> View:
        """The view of ``parties`` among already-decoded ``messages`` (provenance dropped)."""
        members = (parties,) if isinstance(parties, str) else tuple(sorted(set(parties)))
        return cls(
            parties=members,
            received=tuple(m.without_provenance() for m in messages if m.receiver in members),
            sent=tuple(m.without_provenance() for m in messages if m.sender in members),
        )

    @classmethod
    def per_party(cls, messages: Sequence[Message], parties: Iterable[PartyId]
                  ) -> dict[PartyId, View]:
        """Every party's own view, in one pass over ``messages`` (provenance dropped)."""
        received: dict[PartyId, list[Message]] = {p: [] for p in parties}
        sent: dict[PartyId, list[Message]] = {p: [] for p in received}
        for m in messages:
            stripped = None
            if m.receiver in received:
                stripped = m.without_provenance()
                received[m.receiver].append(stripped)
            if m.sender in sent:
                sent[m.sender].append(stripped or m.without_provenance())
        return {p: cls(parties=(p,), received=tuple(received[p]), sent=tuple(sent[p]))
                for p in received}

    def merge(self, other: View) -> View:
        """The pooled view of a coalition."""
        return View(
            parties=tuple(sorted(set(self.parties) | set(other.parties))),
            received=tuple(_dedupe(self.received + other.received)),
            sent=tuple(_dedupe(self.sent + other.sent)),
        )


def _dedupe(messages: Sequence[Message]) -> list[Message]:
    seen = set()
    out = []
    for m in messages:
        key = (m.protocol, m.round, m.sender, m.receiver, m.seq)
        if key not in seen:
            seen.add(key)
            out.append(m)
    return sorted(out, key=_order_key)


def _order_key(m: Message) -> tuple:
    return (m.protocol, m.round, m.sender, m.receiver, m.seq)


class Transcript:
    """Read access to a transcript directory (or an in-memory table)."""

    def __init__(self, source: str | os.PathLike[str] | pa.Table) -> None:
        if not isinstance(source, (str, os.PathLike)):  # an Arrow table
            self._table: pa.Table | None = source
            self.directory: Path | None = None
        else:
            self.directory = Path(source)
            if not self.directory.is_dir():
                raise DataError(f"no transcript directory at {str(self.directory)!r}")
            self._table = None

    def check(self) -> int:
        """Check a closed transcript directory whole; returns its message count.

        Every part must be readable, with as many messages as ``totals.json``
        counted when the transcript was closed, and -- where ``totals.json`` lists
        them (``part_sha256``; transcripts written before it do not) -- the SHA-256
        recorded when it was written. Raises :class:`DataError` naming what is
        missing or damaged (a part deleted, truncated, replaced or with bytes
        changed), so that nothing is scored from part of a run.
        """
        if self.directory is None:
            return self.table(["seq"]).num_rows
        import json

        import pyarrow.parquet as pq

        totals_path = self.directory / "totals.json"
        try:
            totals = json.loads(totals_path.read_text())
            expected = int(totals["messages"])
            digests = totals.get("part_sha256")
            if digests is not None and not (isinstance(digests, dict) and all(
                    isinstance(v, str) for v in digests.values())):
                raise TypeError("part_sha256 is not a mapping of part names to digests")
        except (OSError, ValueError, KeyError, TypeError, AttributeError,
                RecursionError) as exc:  # (RecursionError: JSON nested too deep to read)
            raise DataError(f"{str(totals_path)!r} is missing or unreadable "
                            f"({type(exc).__name__}); the transcript is incomplete") from None
        found = 0
        for part in self.parts():
            try:
                found += pq.read_metadata(part).num_rows
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                raise DataError(f"transcript part {str(part)!r} is damaged ({exc}); the "
                                "transcript cannot be read whole") from None
        if found != expected:
            raise DataError(f"transcript {str(self.directory)!r} holds {found} messages in "
                            f"{len(self.parts())} parts but totals.json counted {expected} "
                            "when it was closed: parts are missing or were changed")
        if digests is not None:
            self._check_digests(digests)
        return found

    def _check_digests(self, digests: dict[str, str]) -> None:
        """Refuse (``DataError``) a part whose bytes differ from the digest recorded for it."""
        assert self.directory is not None
        names = {p.name for p in self.parts()}
        missing = sorted(set(digests) - names)
        if missing:
            raise DataError(f"transcript part {str(self.directory / missing[0])!r} is missing "
                            f"({len(missing)} of the {len(digests)} parts totals.json lists); "
                            "the transcript cannot be read whole")
        extra = sorted(names - set(digests))
        if extra:
            raise DataError(f"transcript part {str(self.directory / extra[0])!r} is not one "
                            "the recorder wrote (totals.json lists no digest for it); the "
                            "transcript was changed")
        for name in sorted(digests):
            h = hashlib.sha256()
            with open(self.directory / name, "rb") as fh:
                for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    h.update(block)
            if h.hexdigest() != digests[name]:
                raise DataError(f"transcript part {str(self.directory / name)!r} is damaged: "
                                "its SHA-256 differs from the one recorded when it was "
                                "written; the transcript is not scored")

    def parts(self) -> list[Path]:
        """The part files, in write order."""
        if self.directory is None:
            return []
        return sorted(self.directory.glob("part-*.parquet"))

    def table(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The whole transcript as one table."""
        if self._table is not None:
            return self._table.select(list(columns)) if columns else self._table
        parts = self.parts()
        if not parts:
            empty = _schema().empty_table()
            return empty.select(list(columns)) if columns else empty
        import pyarrow as pa
        import pyarrow.parquet as pq

        return pa.concat_tables([pq.read_table(p, columns=columns) for p in parts])

    def iter_tables(self, columns: Sequence[str] | None = None, *,
                    protocol: str | None = None) -> Iterator[pa.Table]:
        """Part by part (bounded memory).

        Only ``protocol``'s rows when given: the filter is pushed into the
        Parquet reader, so other rows are never decoded.
        """
        if self._table is not None:
            table = self.table(columns)
            if protocol is not None:
                import pyarrow.compute as pc

                table = table.filter(pc.equal(self._table["protocol"], protocol))
            yield table
            return
        filters = [("protocol", "=", protocol)] if protocol is not None else None
        import pyarrow.parquet as pq

        for p in self.parts():
            yield pq.read_table(p, columns=columns, filters=filters)

    def __len__(self) -> int:
        return sum(t.num_rows for t in self.iter_tables(["seq"]))

    def totals(self) -> CommunicationTotals:
        """Communication totals, computed part by part from four columns."""
        totals = CommunicationTotals()
        for t in self.iter_tables(["sender", "receiver", "protocol", "wire_bytes"]):
            totals.add(t["sender"].to_pylist(), t["receiver"].to_pylist(),
                       t["protocol"].to_pylist(), t["wire_bytes"].to_pylist())
        return totals

    def messages(self, *, with_provenance: bool = False, protocol: str | None = None
                 ) -> list[Message]:
        """All messages in canonical order (protocol, round, sender, receiver, seq)."""
        out = []
        for t in self.iter_tables(protocol=protocol):
            for row in t.to_pylist():
                out.append(
                    Message(
                        **{c: row[c] for c in _HEADER_COLUMNS},
                        payload=decode_arrays(row["payload"]),
                        provenance=decode_arrays(row["provenance"]) if with_provenance else {},
                    )
                )
        return sorted(out, key=_order_key)

    def by_receiver(self, party: PartyId) -> list[Message]:
        """Messages ``party`` received (provenance stripped)."""
        return [m for m in self.messages() if m.receiver == party]

    def by_round(self, round: int, protocol: str | None = None) -> list[Message]:
        """Messages of one round (provenance stripped)."""
        return [m for m in self.messages(protocol=protocol) if m.round == round]

    def view(self, parties: PartyId | Iterable[PartyId], *, protocol: str | None = None) -> View:
        """The (pooled) view of one party or a coalition."""
        return View.of(self.messages(protocol=protocol), parties)

    def canonical_rows(self) -> list[tuple]:
        """Every record as a tuple, sorted: equal for equal runs on any runtime."""
        rows = self.table().to_pylist()
        cols = [f.name for f in _schema()]
        return sorted(tuple(_frozen(r[c]) for c in cols) for r in rows)


def _frozen(value: Any) -> Any:
    """``value`` with lists and dicts (e.g. the ``after`` stamps) as tuples: hashable rows."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    return value


def ground_truth(messages: Sequence[Message], key: str) -> list[np.ndarray]:
    """Provenance arrays ``key`` of ``messages`` (scorers only)."""
    return [np.asarray(m.provenance[key]) for m in messages]


__all__ = [
    "MessageKey",
    "check_fresh",
    "recover_transcript",
    "RECORDER_NAME",
    "SCHEMA",
    "CommunicationTotals",
    "Transcript",
    "TranscriptRecorder",
    "View",
    "make_record",
]
