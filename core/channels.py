"""Authenticated encryption between parties.

Each party holds an X25519 key pair for the run. Two parties derive a
pair key with HKDF-SHA256 over their X25519 shared secret (``info`` binds
the run and the two names) and protect messages with AES-256-GCM (the
TLS 1.3 default AEAD; about three times ChaCha20-Poly1305's speed on a CPU
with AES instructions, with the same 96-bit nonce, 128-bit tag and so the
same wire size).
The associated data binds run, protocol, round, sequence number, sender,
receiver and kind, so a message that is

* **tampered** (any header or ciphertext bit) fails authentication,
* **replayed** (a sequence number not above the last one accepted from
  that sender) is refused,
* **dropped or reordered** (a sequence number that skips one: the next
  message from that sender must carry the last accepted number plus one)
  is refused at the next message that arrives,
* **misdirected** (delivered to a party other than its receiver, or with a
  rewritten receiver) fails,

each with :class:`~core.errors.IntegrityError`.

Nonces are ``direction || seq``: keys are per run and per pair, sequence
numbers never repeat within a direction, so a nonce is never reused.

Channels can be switched off for fast experiments (:class:`PlainEndpoint`);
the receiver and sequence checks still apply, and the transcript still
records the bytes that would cross the wire.

Examples
--------
>>> import numpy as np
>>> from ppknn.core.messages import Message
>>> a, b = SecureEndpoint("a", "run"), SecureEndpoint("b", "run")
>>> directory = {"a": a.public_key, "b": b.public_key}
>>> a.register_peers(directory); b.register_peers(directory)
>>> m = Message("run", "demo", 1, -1, "a", "b", "x", {"v": np.arange(3)})
>>> env = a.seal(m)
>>> b.open(env).payload["v"].tolist()
[0, 1, 2]
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ppknn.core.errors import ConfigError, IntegrityError
from ppknn.core.messages import Message, PartyId, Payload, decode_arrays, encode_arrays

_TAG_BYTES = 16


@dataclass(frozen=True)
class Envelope:
    """A sealed message: the header in the clear, the payload encrypted.

    ``provenance`` is simulation-only ground truth carried beside the wire
    bytes; it is not part of what crosses the wire and no party reads it.
    """

    header: Message  # payload-free copy of the message (payload = {})
    ciphertext: bytes
    provenance: Payload = field(default_factory=dict)

    @property
    def wire_bytes(self) -> int:
        """Bytes on the wire: header (associated data) plus ciphertext and tag."""
        return len(self.header.associated_data()) + len(self.ciphertext)


class _Endpoint:
    """Sequence numbering and receive-side checks shared by both endpoints."""

    _forced: int | None = None

    def __init__(self, party: PartyId, run_id: str) -> None:
        if not party:
            raise ConfigError("party name must be a non-empty string")
        self.party = party
        self.run_id = run_id
        self._next_seq: dict[PartyId, int] = {}
        self._last_seen: dict[PartyId, int] = {}
        self._unordered: frozenset[PartyId] = frozenset()
        self._used: dict[PartyId, set[int]] = {}

    def next_seq(self, receiver: PartyId) -> int:
        if self._forced is not None:
            return self._forced
        seq = self._next_seq.get(receiver, 0)
        self._next_seq[receiver] = seq + 1
        return seq

    def _claim(self, receiver: PartyId, seq: int) -> None:
        """Record that ``seq`` to ``receiver`` is spent; refuse it if it already was.

        A sequence number is the nonce of its pair's key: sealing twice with one would
        reuse an AES-GCM nonce (and, without channels, replay a message).
        """
        used = self._used.setdefault(receiver, set())
        if seq in used:
            raise IntegrityError(
                f"{self.party!r} already sealed sequence number {seq} to {receiver!r}: "
                "a number is used once per pair (it is the channel's nonce)")
        used.add(seq)

    def seal_as(self, seq: int, message: Message, plaintext: bytes | None = None) -> Any:
        """Seal ``message`` with sequence number ``seq`` instead of the next one.

        Used by parties that number their messages from call tickets (see
        :mod:`core.runtime.concurrency`) and by fault injection (a reordered
        message); the counter of the ordinary numbering is not touched. A number
        already used towards the same receiver, by either numbering, is refused
        (:class:`~ppknn.core.errors.IntegrityError`): it would reuse the nonce.
        """
        self._forced = seq
        try:
            return self.seal(message, plaintext)  # type: ignore[attr-defined]
        finally:
            self._forced = None

    def expect_unordered(self, senders: Iterable[PartyId]) -> None:
        """Senders whose sequence numbers are increasing but not contiguous.

        A party serving calls concurrently numbers its messages from call
        tickets (see :mod:`core.runtime.concurrency`); gaps from it are
        expected, so only replays are refused. From every other sender the
        next number must be exactly one more than the last.
        """
        self._unordered = frozenset(senders)

    def _check_incoming(self, header: Message) -> None:
        if header.receiver != self.party:
            raise IntegrityError(
                f"misdirected message: addressed to {header.receiver!r}, "
                f"delivered to {self.party!r} (from {header.sender!r})"
            )
        if header.run_id != self.run_id:
            raise IntegrityError(
                f"message from run {header.run_id!r} delivered in run {self.run_id!r}"
            )
        self._check_sequence(header)

    def _check_sequence(self, header: Message) -> None:
        last = self._last_seen.get(header.sender, -1)
        if header.seq <= last:
            raise IntegrityError(
                f"replayed message from {header.sender!r} to {self.party!r}: "
                f"seq {header.seq} <= last accepted {last}"
            )
        if header.seq != last + 1 and header.sender not in self._unordered:
            missing = header.seq - last - 1
            raise IntegrityError(
                f"message(s) lost or reordered from {header.sender!r} to {self.party!r}: "
                f"expected seq {last + 1}, got {header.seq} ({missing} missing; protocol "
                f"{header.protocol!r}, round {header.round})"
            )

    def missing(self) -> dict[PartyId, list[int]]:
        """Sequence numbers that never arrived, per sender (checked at the end of a run).

        Always empty here: a sequential receiver refuses a gap at the next
        message. A concurrent receiver can only tell once every message is in
        (:mod:`core.runtime.concurrency`).
        """
        return {}

    def _accept(self, header: Message) -> None:
        self._last_seen[header.sender] = header.seq


class PlainEndpoint(_Endpoint):
    """No encryption: messages pass in the clear (receiver and replay checks kept)."""

    enabled = False

    def seal(self, message: Message, plaintext: bytes | None = None) -> Message:
        """Stamp the sequence number; the message itself is the wire form.

        ``plaintext`` (the encoded payload, when the caller has it) is not needed here.
        """
        seq = self.next_seq(message.receiver)
        self._claim(message.receiver, seq)
        return message.with_seq(seq)

    def open(self, wire: Message | Envelope) -> Message:
        """Check the receiver and sequence number and hand the message over."""
        if isinstance(wire, Envelope):
            raise IntegrityError(
                f"{self.party!r} received an encrypted envelope but its channels are off"
            )
        self._check_incoming(wire)
        self._accept(wire)
        return wire

    @staticmethod
    def wire_bytes(wire: Message, plaintext_bytes: int) -> int:
        """Bytes on the wire: header plus encoded plaintext."""
        return len(wire.associated_data()) + plaintext_bytes


class SecureEndpoint(_Endpoint):
    """X25519 + HKDF-SHA256 + AES-256-GCM endpoint of one party."""

    enabled = True

    def __init__(self, party: PartyId, run_id: str) -> None:
        super().__init__(party, run_id)
        self._private = X25519PrivateKey.generate()
        self._directory: dict[PartyId, bytes] = {}
        self._ciphers: dict[PartyId, AESGCM] = {}

    @property
    def public_key(self) -> bytes:
        """This party's raw 32-byte public key."""
        return self._private.public_key().public_bytes_raw()

    def register_peers(self, directory: dict[PartyId, bytes]) -> None:
        """Learn the other parties' public keys (a public-key directory).

        The directory is kept as given (it may be shared by many endpoints);
        a peer's key is parsed, and the pair key derived, on first use.
        """
        self._directory = directory
        self._ciphers.clear()

    def _cipher(self, peer: PartyId) -> AESGCM:
        cipher = self._ciphers.get(peer)
        if cipher is None:
            raw = self._directory.get(peer) if peer != self.party else None
            if raw is None:
                raise IntegrityError(f"{self.party!r} has no public key for {peer!r}")
            public = X25519PublicKey.from_public_bytes(raw)
            shared = self._private.exchange(public)
            low, high = sorted((self.party, peer))
            info = f"ppknn-channel|{self.run_id}|{low}|{high}".encode()
            key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)
            cipher = AESGCM(key)
            self._ciphers[peer] = cipher
        return cipher

    @staticmethod
    def _nonce(header: Message) -> bytes:
        direction = 0 if header.sender < header.receiver else 1
        return struct.pack("<IQ", direction, header.seq)

    def seal(self, message: Message, plaintext: bytes | None = None) -> Envelope:
        """Encrypt and authenticate ``message`` for its receiver.

        ``plaintext`` is ``encode_arrays(message.payload)`` when the caller has
        already encoded it (the host does, for the transcript).
        """
        m = message
        seq = int(self.next_seq(m.receiver))
        self._claim(m.receiver, seq)
        header = type(m)(m.run_id, m.protocol, m.round, seq, m.sender,
                         m.receiver, m.kind, {}, {})
        if plaintext is None:
            plaintext = encode_arrays(message.payload)
        ciphertext = self._cipher(message.receiver).encrypt(
            self._nonce(header), plaintext, header.associated_data()
        )
        return Envelope(header=header, ciphertext=ciphertext, provenance=message.provenance)

    def open(self, wire: Message | Envelope) -> Message:
        """Verify and decrypt an envelope addressed to this party."""
        if not isinstance(wire, Envelope):
            raise IntegrityError(
                f"{self.party!r} received an unauthenticated message from {wire.sender!r}"
            )
        header = wire.header
        self._check_incoming(header)
        try:
            plaintext = self._cipher(header.sender).decrypt(
                self._nonce(header), wire.ciphertext, header.associated_data()
            )
        except InvalidTag:
            raise IntegrityError(
                f"authentication failed for message {header.sender!r} -> {self.party!r} "
                f"(protocol {header.protocol!r}, round {header.round}, seq {header.seq}): "
                "tampered or misdirected"
            ) from None
        self._accept(header)
        return type(header)(header.run_id, header.protocol, header.round, header.seq,
                            header.sender, header.receiver, header.kind,
                            decode_arrays(plaintext), wire.provenance)

    @staticmethod
    def wire_bytes(wire: Envelope, plaintext_bytes: int) -> int:
        """Bytes on the wire: header, ciphertext and tag."""
        return wire.wire_bytes


def make_endpoint(party: PartyId, run_id: str, *, secure: bool) -> PlainEndpoint | SecureEndpoint:
    """The endpoint for ``party``: encrypted when ``secure`` is true."""
    return SecureEndpoint(party, run_id) if secure else PlainEndpoint(party, run_id)


__all__ = ["Envelope", "PlainEndpoint", "SecureEndpoint", "make_endpoint"]
