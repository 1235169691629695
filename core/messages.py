"""Messages exchanged between parties, and their byte encoding.

A :class:`Message` carries a *payload* (named numpy arrays; the leading axis
is the query batch wherever a payload is per query) and, separately, the
simulation-only *provenance*: for each payload element, which party it came
from, or that it is a random fill, a mask, or public. Party logic and
adversaries never read provenance; only scorers do (see
:mod:`core.leakage`). Provenance travels alongside a message so the
simulation can keep ground truth, but it is stripped from every
:class:`~core.transcript.View`.

Examples
--------
>>> import numpy as np
>>> m = Message(run_id="r", protocol="pp-topk", round=1, seq=0, sender="p0",
...             receiver="p1", kind="vector", payload={"g": np.zeros((2, 3))})
>>> m2 = decode_arrays(encode_arrays(m.payload))
>>> bool(np.array_equal(m2["g"], m.payload["g"]))
True
"""

from __future__ import annotations

import dataclasses
import functools
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppknn.core.errors import ProtocolError

PartyId = str
"""A logical party's name, e.g. ``"owner-03"``."""

Payload = Mapping[str, np.ndarray]

# Provenance codes: a non-negative code is the index of the party the element
# came from (its position in the scenario's party list); negative codes name
# the other sources.
PUBLIC = -1
"""A public value (e.g. the initial maximum distance)."""
RANDOM_FILL = -2
"""A random value injected by a protocol to hide real ones."""
MASK = -3
"""A value blinded by a uniformly random mask (e.g. a partial secure sum)."""
MIXED = -4
"""An aggregate of several parties' values (e.g. a revealed sum)."""

PROVENANCE_NAMES = {PUBLIC: "public", RANDOM_FILL: "random", MASK: "mask", MIXED: "mixed"}
PROVENANCE_DTYPE = np.int32
"""Provenance codes are int32 (up to 2^31 - 1 parties)."""


def uniform_provenance(code: int) -> np.ndarray:
    """Provenance of a payload entry whose every element has the same source.

    A ``(1, 1)`` array: provenance arrays broadcast against their payload entry.
    """
    return np.full((1, 1), code, dtype=PROVENANCE_DTYPE)


@dataclass(frozen=True)
class Message:
    """One message from ``sender`` to ``receiver``.

    Parameters
    ----------
    run_id:
        The run this message belongs to (bound into the channel's associated data).
    protocol:
        Name of the protocol (e.g. ``"pp-topk"``).
    round:
        Protocol round, starting at 1 (0 for set-up and broadcast phases).
    seq:
        Sequence number per (sender, receiver) pair, assigned when sent;
        ``-1`` until then.
    sender, receiver:
        Logical party names.
    kind:
        What the payload is (e.g. ``"topk-vector"``).
    payload:
        Named arrays: what the receiver sees.
    provenance:
        Named int32 arrays, same keys as the payload entries they describe
        and shapes that broadcast against them; simulation-only ground truth.
    """

    run_id: str
    protocol: str
    round: int
    seq: int
    sender: PartyId
    receiver: PartyId
    kind: str
    payload: Payload
    provenance: Payload = field(default_factory=dict)

    def header(self) -> dict[str, object]:
        """The metadata fields (everything but payload and provenance)."""
        return {
            "run_id": self.run_id,
            "protocol": self.protocol,
            "round": int(self.round),
            "seq": int(self.seq),
            "sender": self.sender,
            "receiver": self.receiver,
            "kind": self.kind,
        }

    def associated_data(self) -> bytes:
        """Bytes an authenticated channel binds to the ciphertext."""
        return _associated_data(self.run_id, self.protocol, int(self.round), int(self.seq),
                                self.sender, self.receiver, self.kind)

    def with_seq(self, seq: int) -> Message:
        """A copy with the sequence number set."""
        return type(self)(self.run_id, self.protocol, self.round, int(seq), self.sender,
                          self.receiver, self.kind, self.payload, self.provenance)

    def without_provenance(self) -> Message:
        """A copy without ground truth: what a party or adversary may see."""
        return dataclasses.replace(self, provenance={})


@functools.lru_cache(maxsize=4096)
def _associated_data(run_id: str, protocol: str, round: int, seq: int, sender: PartyId,
                     receiver: PartyId, kind: str) -> bytes:
    """The header as sorted-key compact JSON (kept: sealing, sizing and opening ask again).

    Names that JSON writes as they are (printable ASCII without a quote or a backslash,
    as party and protocol names are) are formatted directly, the same bytes as
    ``json.dumps`` gives (``tests/test_channels.py`` checks it against ``json.dumps``);
    any other name goes through ``json.dumps``.
    """
    text = run_id + protocol + sender + receiver + kind
    if (text.isascii() and text.isprintable() and '"' not in text and "\\" not in text
            and type(round) is int and type(seq) is int):
        return (f'{{"kind":"{kind}","protocol":"{protocol}","receiver":"{receiver}",'
                f'"round":{round},"run_id":"{run_id}","sender":"{sender}","seq":{seq}}}'
                ).encode()
    header = {"run_id": run_id, "protocol": protocol, "round": round, "seq": seq,
              "sender": sender, "receiver": receiver, "kind": kind}
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode()


_MAGIC = b"PPKA"


def encode_arrays(arrays: Payload) -> bytes:
    """Encode named arrays to bytes, deterministically.

    The format is a small JSON header (names, dtypes, shapes, in sorted name
    order) followed by each array's raw C-order bytes. The bytes are copied
    once (headers of recurring layouts are kept, not re-encoded).
    """
    names = sorted(arrays)
    layout = []
    parts: list[Any] = [_MAGIC, b"", b""]
    for name in names:
        arr = np.asarray(arrays[name], order="C")  # (ascontiguousarray would make 0-d 1-d)
        if arr.dtype.hasobject:
            raise ProtocolError(f"payload entry {name!r} has object dtype; only numeric arrays")
        layout.append((name, arr.dtype.str, arr.shape))
        parts.append(arr.reshape(-1).view(np.uint8) if arr.size else b"")
    parts[1], parts[2] = _header(tuple(layout))
    return b"".join(parts)


@functools.lru_cache(maxsize=1024)
def _header(layout: tuple[tuple[str, str, tuple[int, ...]], ...]) -> tuple[bytes, bytes]:
    """The length prefix and JSON header of a payload layout (names, dtypes, shapes)."""
    head = json.dumps([[name, dtype, list(shape)] for name, dtype, shape in layout],
                      separators=(",", ":")).encode()
    return struct.pack("<I", len(head)), head


@functools.lru_cache(maxsize=1024)
def _layout(head: bytes) -> tuple[tuple[str, np.dtype, tuple[int, ...], int, int], ...]:
    """Parsed header: (name, dtype, shape, count, bytes) per array."""
    out = []
    for name, dtype, shape in json.loads(head):
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        out.append((name, dt, tuple(shape), count, count * dt.itemsize))
    return tuple(out)


def decode_arrays(data: bytes) -> dict[str, np.ndarray]:
    """Inverse of :func:`encode_arrays`."""
    if data[:4] != _MAGIC:
        raise ProtocolError("not an encoded payload (bad magic bytes)")
    (hlen,) = struct.unpack("<I", data[4:8])
    offset = 8 + hlen
    out: dict[str, np.ndarray] = {}
    for name, dt, shape, count, nbytes in _layout(bytes(data[8:offset])):
        out[name] = np.frombuffer(data, dtype=dt, count=count, offset=offset).reshape(shape)
        offset += nbytes
    return out


def payload_nbytes(arrays: Payload) -> int:
    """Bytes the payload takes on the wire in plaintext (header included)."""
    return len(encode_arrays(arrays))


__all__ = [
    "MASK",
    "MIXED",
    "PROVENANCE_NAMES",
    "PROVENANCE_DTYPE",
    "PUBLIC",
    "RANDOM_FILL",
    "Message",
    "PartyId",
    "Payload",
    "decode_arrays",
    "encode_arrays",
    "payload_nbytes",
    "uniform_provenance",
]
