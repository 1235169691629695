"""Messaging of a party that serves calls concurrently (``PartySpec.max_concurrency > 1``).

Such a party runs several calls at once (on Ray: a threaded actor of its
own), so two things a one-call-at-a-time party gets from the order of its
calls have to be made explicit:

**Sequence numbers of what it sends.** A sequential party stamps 0, 1, 2, …
per receiver in the order its calls run, which on both runtimes is the
order the driver issued them. A concurrent party's calls finish in any
order, so it stamps from the call's *ticket* instead: the runtime numbers
the calls to that party 0, 1, 2, … in the order the driver issues them
(in the driver, before anything runs), and the k-th message a call sends to
one receiver gets ``seq = ticket * SEQ_STRIDE + k``. The numbers are
therefore deterministic -- the same on both runtimes whatever the
interleaving -- and increase in the driver's call order per (sender,
receiver); they are not contiguous. A receiver still accepts them only in
increasing order (as from any sender), i.e. in the order the driver called
the concurrent party.

**Replay checks of what it receives.** Messages from one sender are opened
by whichever call gets to them first, not in sending order. The endpoint of
a concurrent party therefore accepts each sequence number from a sender
*once*, in any order (a repeat is a replay and raises
:class:`~core.errors.IntegrityError`), instead of requiring it to exceed
the last one accepted. The host serialises opening and sealing with its
lock, so check-then-accept is atomic.

Examples
--------
>>> import dataclasses
>>> import numpy as np
>>> from ppknn.core.messages import Message
>>> owner, alice = make_concurrent_endpoint("owner", "r", secure=False), PlainEndpoint("alice", "r")
>>> m = Message("r", "demo", 1, -1, "owner", "alice", "x", {"v": np.arange(2)})
>>> [owner.seal_as(stamp, m).seq for stamp in (CallStamps(0).next("alice"),
...                                           CallStamps(3).next("alice"))]
[0, 3000000]
>>> firsts = [alice.seal(dataclasses.replace(m, sender="alice", receiver="owner"))
...           for _ in range(2)]
>>> [owner.open(w).seq for w in reversed(firsts)]  # out of order: accepted once each
[1, 0]
>>> owner.open(firsts[0])
Traceback (most recent call last):
...
ppknn.core.errors.IntegrityError: replayed message from 'alice' to 'owner': seq 0 was ...accepted
"""

from __future__ import annotations

from ppknn.core.channels import PlainEndpoint, SecureEndpoint
from ppknn.core.errors import IntegrityError, ProtocolError
from ppknn.core.messages import Message, PartyId

SEQ_STRIDE = 1_000_000
"""Sequence numbers a concurrent party's call may use per receiver (``ticket * SEQ_STRIDE + k``)."""


class CallStamps:
    """The sequence numbers of one call of a concurrent party (``ticket``: its number)."""

    __slots__ = ("counts", "ticket")

    def __init__(self, ticket: int) -> None:
        if ticket < 0:
            raise ProtocolError(f"call tickets are >= 0, got {ticket}")
        self.ticket = int(ticket)
        self.counts: dict[PartyId, int] = {}

    def next(self, receiver: PartyId) -> int:
        """The sequence number of this call's next message to ``receiver``."""
        k = self.counts.get(receiver, 0)
        if k >= SEQ_STRIDE:
            raise ProtocolError(f"one call of a concurrent party sent more than {SEQ_STRIDE:,} "
                                f"messages to {receiver!r}")
        self.counts[receiver] = k + 1
        return self.ticket * SEQ_STRIDE + k


class _SeenSeqs:
    """Sequence numbers accepted from one sender: all below ``floor``, and ``above`` it."""

    __slots__ = ("above", "floor")

    def __init__(self) -> None:
        self.floor = 0
        self.above: set[int] = set()

    def __contains__(self, seq: int) -> bool:
        return seq < self.floor or seq in self.above

    def add(self, seq: int) -> None:
        self.above.add(seq)
        while self.floor in self.above:  # contiguous numbers (a sequential sender) compact
            self.above.remove(self.floor)
            self.floor += 1


class _Concurrent:
    """Mixin for the endpoints of a concurrent party (see the module docstring).

    Relies on :class:`core.channels._Endpoint` calling ``_check_sequence``
    before and ``_accept`` after authenticating a message, and ``next_seq``
    when sealing.
    """

    _seen: dict[PartyId, _SeenSeqs]

    def next_seq(self, receiver: PartyId) -> int:
        if self._forced is None:  # type: ignore[attr-defined]
            raise ProtocolError(f"{self.party!r} serves calls concurrently: its messages are "  # type: ignore[attr-defined]
                                "stamped from the call's ticket (seal_as), not a counter")
        return self._forced  # type: ignore[attr-defined]

    def _check_sequence(self, header: Message) -> None:
        if header.seq < 0:
            raise IntegrityError(f"message from {header.sender!r} to {self.party!r} has "  # type: ignore[attr-defined]
                                 f"sequence number {header.seq} < 0")
        seen = self._seen.get(header.sender)
        if seen is not None and header.seq in seen:
            raise IntegrityError(f"replayed message from {header.sender!r} to "
                                 f"{self.party!r}: seq {header.seq} was already accepted")  # type: ignore[attr-defined]

    def missing(self) -> dict[PartyId, list[int]]:
        """Per sequential sender, the numbers below the highest accepted that never arrived.

        A sequential sender numbers its messages 0, 1, 2, ...; a concurrent
        receiver opens them in any order, so a lost (or never delivered)
        one shows only once the run's messages are all in: a hole.
        """
        out = {}
        for sender, seen in self._seen.items():
            if sender in self._unordered or not seen.above:  # type: ignore[attr-defined]
                continue
            top = max(seen.above)
            holes = [q for q in range(seen.floor, top) if q not in seen.above][:10]
            if holes:
                out[sender] = holes
        return out

    def _accept(self, header: Message) -> None:
        # ``_last_seen`` stays empty, so the base check only refuses negative numbers
        self._seen.setdefault(header.sender, _SeenSeqs()).add(header.seq)


class ConcurrentPlainEndpoint(_Concurrent, PlainEndpoint):
    """:class:`~core.channels.PlainEndpoint` of a concurrent party."""

    def __init__(self, party: PartyId, run_id: str) -> None:
        super().__init__(party, run_id)
        self._seen = {}


class ConcurrentSecureEndpoint(_Concurrent, SecureEndpoint):
    """:class:`~core.channels.SecureEndpoint` of a concurrent party."""

    def __init__(self, party: PartyId, run_id: str) -> None:
        super().__init__(party, run_id)
        self._seen = {}


def make_concurrent_endpoint(party: PartyId, run_id: str, *,
                             secure: bool) -> ConcurrentPlainEndpoint | ConcurrentSecureEndpoint:
    """The endpoint of a concurrent party (encrypted when ``secure``)."""
    return (ConcurrentSecureEndpoint(party, run_id) if secure
            else ConcurrentPlainEndpoint(party, run_id))


__all__ = ["SEQ_STRIDE", "CallStamps", "ConcurrentPlainEndpoint", "ConcurrentSecureEndpoint",
           "make_concurrent_endpoint"]
