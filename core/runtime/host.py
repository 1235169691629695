"""A party host: runs one or more logical parties and does their messaging.

The host is a plain class. :class:`~core.runtime.inprocess.InProcessRuntime`
uses it directly; :class:`~core.runtime.ray_runtime.RayRuntime` wraps it in
a Ray actor. For every call it

1. opens incoming messages (authenticates and decrypts them when channels
   are on; checks receiver and sequence number either way),
2. runs the party's step (its progress beats going where the runtime said,
   :mod:`core.progress`),
3. stamps, records and seals the outgoing messages.

Records go to the transcript recorder through a *recorder client* in
batches; the client hides whether the recorder is local or a Ray actor.

A party whose :class:`PartySpec` has ``max_concurrency > 1`` may have
several calls running at once (on Ray its host is a threaded actor of its
own). The host's messaging state -- the endpoints' sequence numbers and
replay checks, the record buffer, the fault counter -- is guarded by one
lock, held only while a message is opened, stamped and sealed, or buffered
(never while a step runs). Such a party stamps its messages from the
call's ticket and accepts a sender's messages in any order (each once):
see :mod:`core.runtime.concurrency`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ppknn.core.channels import Envelope, SecureEndpoint, make_endpoint
from ppknn.core.errors import ConfigError, PartyFailure, PpknnError, ProtocolError
from ppknn.core.messages import Message, PartyId, encode_arrays
from ppknn.core.progress import beats_to
from ppknn.core.runtime.concurrency import CallStamps, make_concurrent_endpoint
from ppknn.core.transcript import make_record


class RecorderClient(Protocol):
    """Where a host sends its records."""

    def append(self, records: list[dict[str, Any]]) -> None:
        """Send a batch without waiting."""

    def append_sync(self, records: list[dict[str, Any]]) -> None:
        """Send a batch and wait until the recorder has it."""


class NullRecorder:
    """A recorder client that drops everything (transcript off)."""

    enabled = False

    def append(self, records: list[dict[str, Any]]) -> None:  # noqa: D102
        return None

    def append_sync(self, records: list[dict[str, Any]]) -> None:  # noqa: D102
        return None


@dataclass(frozen=True)
class PartySpec:
    """How to build one logical party.

    Parameters
    ----------
    party_id:
        The party's name.
    factory:
        A module-level callable (usually the party class) called with ``kwargs``.
    kwargs:
        Keyword arguments: the party's private data and parameters.
    max_concurrency:
        How many calls to this party may run at the same time. ``1`` (the
        default): one at a time, in the order the driver made them. More: on
        Ray the party gets a threaded host actor of its own (also in the
        hosted layout) that runs up to this many independent calls at once;
        the party's steps must then be thread-safe, and should not depend on
        the order calls arrive in if runs are to repeat. In-process, calls
        always run one at a time in the driver's order (the deterministic
        reference). Either way the party's messages are numbered from the
        driver's call order (see :mod:`core.runtime.concurrency`), so both
        runtimes give the same transcript.
    """

    party_id: PartyId
    factory: Callable[..., Any]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    max_concurrency: int = 1

    def __post_init__(self) -> None:
        n = self.max_concurrency
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"max_concurrency of party {self.party_id!r} must be an integer "
                              f">= 1, got {n!r}")


FAULT_KINDS = ("kill", "raise", "hang", "slow", "memory", "drop", "duplicate", "reorder",
               "tamper")
"""What an injected fault does when it fires (see :class:`FaultPlan`)."""


@dataclass(frozen=True)
class FaultPlan:
    """A fault injected into one call of one party, at the host (never in party code).

    The host counts the calls of ``method`` on ``party`` (every method when
    ``method`` is ``"*"``); the ``occurrence``-th one (1 = the first) fails
    as ``kind`` says:

    ``kill``
        the process hosting the party dies without cleanup (in-process: the
        party is marked dead);
    ``raise``
        the step raises ``RuntimeError`` before it runs;
    ``hang``
        the call never returns (it waits ``delay_s`` when given);
    ``slow``
        a slow link: the call waits ``delay_s`` before the step runs, then
        goes on normally;
    ``memory``
        the step asks for more memory than any machine has (``MemoryError``);
    ``drop``
        the call's first outgoing message is lost on the wire (its sequence
        number is used up, the receiver gets the next one);
    ``duplicate``
        the call's first incoming message is delivered twice;
    ``reorder``
        the call's first outgoing message overtakes the one before it
        (sealed with the next sequence number; the next message gets its
        number);
    ``tamper``
        one byte of the call's first outgoing message is flipped on the wire.

    With no fault configured, hosts run exactly the honest code path.
    """

    party: PartyId
    method: str = "*"
    occurrence: int = 1
    kind: str = "kill"
    delay_s: float | None = None
    mark: str | None = None
    """A file the host writes the wall-clock time to when the fault fires (measurements)."""

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ConfigError(f"fault kind {self.kind!r} is not one of {list(FAULT_KINDS)}")
        if not self.party:
            raise ConfigError("fault party must be a non-empty party name")
        if isinstance(self.occurrence, bool) or not isinstance(self.occurrence, int) \
                or self.occurrence < 1:
            raise ConfigError(f"fault occurrence must be an integer >= 1, got "
                              f"{self.occurrence!r}")
        if self.delay_s is not None and not (self.delay_s >= 0 and math.isfinite(self.delay_s)):
            raise ConfigError(f"fault delay_s must be a finite number >= 0, got {self.delay_s!r}")
        if self.kind == "slow" and self.delay_s is None:
            raise ConfigError("fault kind 'slow' needs delay_s (seconds each matching call waits)")

    def matches(self, party: PartyId, method: str) -> bool:
        """Whether a call of ``party.method`` counts towards this fault."""
        return party == self.party and self.method in ("*", method)


_MESSAGE_FAULTS = ("drop", "duplicate", "reorder", "tamper")


class _Fault:
    """The fault of the current call (kept for the messaging of that call)."""

    __slots__ = ("fired", "kind")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.fired = False


class _Chain:
    """What the next message of a chain of sends follows (the transcript's causal stamp).

    ``received``: keys of the messages opened since the chain's last send; ``last``: that
    send's key. A sequential party is one chain over its calls; each call of a concurrent
    party is a chain of its own (its calls are independent by design).
    """

    __slots__ = ("last", "received")

    def __init__(self) -> None:
        self.received: list[tuple[PartyId, PartyId, int]] = []
        self.last: tuple[PartyId, PartyId, int] | None = None

    def follow(self, opened: Sequence[Any]) -> None:
        """Note the messages a call opened."""
        for a in opened:
            for m in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(m, Message):
                    self.received.append((m.sender, m.receiver, int(m.seq)))

    def after(self, sent: Message) -> list[tuple[PartyId, PartyId, int]]:
        """The stamp of ``sent`` (sealed); ``sent`` becomes the chain's last send."""
        out = self.received + ([self.last] if self.last is not None else [])
        self.received, self.last = [], (sent.sender, sent.receiver, int(sent.seq))
        return out


class _Encodings:
    """The encoded payload and provenance of the last message sealed in one call.

    A call's messages are sealed one after the other once its step has returned; a
    broadcast (the same arrays to every other node) is encoded once, and each of its
    messages records and encrypts those bytes (the bytes ``encode_arrays`` gives each
    of them: the arrays are the same objects, unchanged in between).
    """

    __slots__ = ("_payload", "_provenance")

    def __init__(self) -> None:
        self._payload: tuple[Mapping[str, Any], bytes] | None = None
        self._provenance: tuple[Mapping[str, Any], bytes] | None = None

    def payload(self, arrays: Mapping[str, Any]) -> bytes:
        """``encode_arrays(arrays)``, or the previous message's bytes for the same arrays."""
        self._payload = _encoded(arrays, self._payload)
        return self._payload[1]

    def provenance(self, arrays: Mapping[str, Any]) -> bytes:
        """As :meth:`payload`, for the ground truth carried beside the payload."""
        self._provenance = _encoded(arrays, self._provenance)
        return self._provenance[1]


def _encoded(arrays: Mapping[str, Any], last: tuple[Mapping[str, Any], bytes] | None
             ) -> tuple[Mapping[str, Any], bytes]:
    """``(arrays, encode_arrays(arrays))``; ``last`` when it holds the same objects by name."""
    if last is not None:
        before = last[0]
        if before.keys() == arrays.keys() and all(arrays[n] is before[n] for n in arrays):
            return last
    return arrays, encode_arrays(arrays)


def _exit_process(party: PartyId) -> None:
    os._exit(17)  # simulate a crash: the process dies without cleanup


def check_outputs(party: PartyId, method: str, out: Any, expected: int) -> Any:
    """``out`` when it is a list or tuple of ``expected`` outputs; else ProtocolError."""
    if not isinstance(out, (list, tuple)) or len(out) != expected:
        got = len(out) if isinstance(out, (list, tuple)) else type(out).__name__
        raise ProtocolError(f"{party}.{method} returned {got} values, expected {expected}")
    return out


class PartyHost:
    """Hosts logical parties and does their messaging (see module docstring)."""

    def __init__(
        self,
        *,
        run_id: str,
        recorder: RecorderClient,
        secure_channels: bool,
        record_batch: int = 256,
        record_batch_bytes: int = 8 << 20,
        fault: FaultPlan | None = None,
        on_kill: Callable[[PartyId], None] = _exit_process,
        beats: Callable[[], None] | None = None,
    ) -> None:
        if record_batch < 1:
            raise ConfigError(f"record_batch must be >= 1, got {record_batch}")
        if record_batch_bytes < 1:
            raise ConfigError(f"record_batch_bytes must be >= 1, got {record_batch_bytes}")
        self.run_id = run_id
        self.recorder = recorder
        self.secure_channels = secure_channels
        self.record_batch = record_batch
        self.record_batch_bytes = record_batch_bytes
        self._record_bytes = 0
        self.fault = fault
        self._fault_count = 0
        self._on_kill = on_kill
        self._beats = beats  # where a step's progress beats go (core.progress)
        self._stop = threading.Event()  # set when the runtime abandons this host
        self._reordered: dict[tuple[PartyId, PartyId], int] = {}
        self._fired = False  # a message fault fires once
        self.parties: dict[PartyId, Any] = {}
        self.endpoints: dict[PartyId, Any] = {}
        self._records: list[dict[str, Any]] = []
        self._concurrent: set[PartyId] = set()
        self._chains: dict[PartyId, _Chain] = {}  # causal stamps of the sequential parties
        self._lock = threading.Lock()  # messaging state (see the module docstring)

    # -- set-up ---------------------------------------------------------
    def add_party(self, spec: PartySpec) -> bytes:
        """Build a party; returns its channel public key (empty when channels are off)."""
        if spec.party_id in self.parties:
            raise ConfigError(f"party {spec.party_id!r} is already hosted here")
        self.parties[spec.party_id] = spec.factory(**dict(spec.kwargs))
        if spec.max_concurrency > 1:
            self._concurrent.add(spec.party_id)
            endpoint: Any = make_concurrent_endpoint(spec.party_id, self.run_id,
                                                     secure=self.secure_channels)
        else:
            endpoint = make_endpoint(spec.party_id, self.run_id, secure=self.secure_channels)
        self.endpoints[spec.party_id] = endpoint
        return endpoint.public_key if isinstance(endpoint, SecureEndpoint) else b""

    def add_parties(self, specs: Sequence[PartySpec]) -> list[bytes]:
        """Build several parties in one call (one call per host at start-up).

        Returns their channel public keys in order (see :meth:`add_party`).
        """
        return [self.add_party(spec) for spec in specs]

    def register_peers(self, directory: Mapping[PartyId, bytes],
                       unordered: Iterable[PartyId] = ()) -> None:
        """Give every hosted party the public-key directory.

        ``unordered`` names the parties serving calls concurrently: their
        sequence numbers have gaps by design (see
        :meth:`core.channels.SecureEndpoint.expect_unordered`).
        """
        unordered = frozenset(unordered)
        for endpoint in self.endpoints.values():
            endpoint.expect_unordered(unordered)
        if self.secure_channels:
            # one directory per host, shared by its parties (in-process: by every host)
            shared = directory if isinstance(directory, dict) else dict(directory)
            for endpoint in self.endpoints.values():
                endpoint.register_peers(shared)

    def ping(self) -> int:
        """Liveness check: the process id."""
        return os.getpid()

    def peak_rss_mb(self) -> float:
        """Peak resident memory of this host's process, in MiB."""
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024

    def node_id(self) -> str:
        """The Ray node this host runs on ("local" outside Ray)."""
        try:
            import ray

            return ray.get_runtime_context().get_node_id() if ray.is_initialized() else "local"
        except ImportError:  # pragma: no cover
            return "local"

    # -- calls ----------------------------------------------------------
    def invoke(self, party_id: PartyId, method: str, *args: Any, ticket: int | None = None) -> Any:
        """Run ``party.method(*args)`` with messages opened and sealed.

        ``ticket`` numbers the call among the calls to a party with
        ``max_concurrency > 1`` (the runtime gives it; required for such a
        party, ignored for the others).
        """
        party = self.parties[party_id]
        fault = self._fault_for(party_id, method) if self.fault is not None else None
        stamps = None
        if party_id in self._concurrent:
            if ticket is None:
                raise ConfigError(f"party {party_id!r} serves calls concurrently: call it through "
                                  "Runtime.call (which numbers its calls), not in a host group")
            stamps = CallStamps(ticket)
        endpoint = self.endpoints[party_id]
        opened = [self._open(endpoint, a) for a in args]
        chain = None  # the causal stamp, only when a transcript is kept
        if getattr(self.recorder, "enabled", True):
            if stamps is not None:
                chain = _Chain()
            else:
                chain = self._chains.get(party_id)
                if chain is None:
                    chain = self._chains[party_id] = _Chain()
            chain.follow(opened)
        try:
            if fault is not None:
                self._before_step(party_id, method, fault, endpoint, args)
            if self._beats is None:
                result = getattr(party, method)(*opened)
            else:
                with beats_to(self._beats):
                    result = getattr(party, method)(*opened)
        except PpknnError:
            raise  # the framework's own errors say what happened (e.g. IntegrityError)
        except Exception as exc:  # noqa: BLE001 - any other failure inside a party: one path
            where = next((a for a in opened if isinstance(a, Message)), None)
            raise PartyFailure(party_id, where.protocol if where else "",
                               where.round if where else -1,
                               f"{type(exc).__name__} in {method!r}: "
                               f"{(str(exc).splitlines() or [''])[0]}",
                               cause="".join(traceback.format_exception(exc))) from exc
        return self._send(endpoint, result, stamps, fault, chain)

    # -- fault injection (only when a FaultPlan is configured) ------------
    def _fault_for(self, party_id: PartyId, method: str) -> _Fault | None:
        plan = self.fault
        if plan is None or not plan.matches(party_id, method):
            return None
        with self._lock:
            self._fault_count += 1
            count = self._fault_count
            if plan.kind == "slow" and count >= plan.occurrence:
                return _Fault("slow")  # a slow link stays slow
            if plan.kind in _MESSAGE_FAULTS:  # the first call from then on with a message
                return _Fault(plan.kind) if count >= plan.occurrence and not self._fired else None
        return _Fault(plan.kind) if count == plan.occurrence else None

    def _before_step(self, party_id: PartyId, method: str, fault: _Fault, endpoint: Any,
                     args: tuple) -> None:
        plan = self.fault
        assert plan is not None
        kind = fault.kind
        if kind not in _MESSAGE_FAULTS:
            self._mark_fired()
        if kind == "kill":
            self._on_kill(party_id)
        elif kind == "raise":
            raise RuntimeError(f"injected fault: {party_id}.{method} raised")
        elif kind == "memory":
            import numpy as np

            np.empty(1 << 62, dtype=np.uint8)  # no machine has 4 EiB: MemoryError
        elif kind in ("hang", "slow"):
            if self._stop.wait(plan.delay_s if plan.delay_s is not None else None):
                # abandoned by the runtime: the call ends here, sending nothing more
                raise PartyFailure(party_id, "", -1, f"{kind} (fault injection); abandoned")
        elif kind == "duplicate":
            first = next((a for a in args if isinstance(a, (Message, Envelope))), None)
            if first is not None:
                self._fired = True
                self._mark_fired()
                self._open(endpoint, first)  # delivered a second time: a replay

    def _mark_fired(self) -> None:
        """Write when the fault fired to ``FaultPlan.mark`` (best effort)."""
        if self.fault is not None and self.fault.mark:
            import time

            try:
                with open(self.fault.mark, "w") as f:
                    f.write(repr(time.time()))
            except OSError:
                pass

    def abandon(self) -> None:
        """Release a call waiting in an injected hang (the runtime gave up on it)."""
        self._stop.set()

    def run_chain(self, steps: list[tuple[PartyId, str, tuple]], incoming: Any) -> Any:
        """Consecutive steps of a chain hosted here: each step's output is the next one's input.

        Every hop is still a sealed, recorded message; only the process
        boundary is skipped.
        """
        out = incoming
        for party_id, method, args in steps:
            out = self.invoke(party_id, method, out, *args)
        return out

    def invoke_many(self, calls: list[tuple[PartyId, str, tuple[int, ...]]],
                    *values: Any) -> Any:
        """Independent calls on parties hosted here, in one go.

        ``calls`` lists (party, method, argument positions in ``values``): a
        value shared by many calls (the ring set-up, the query batch) is
        shipped once. Returns the outputs in order (a single output when
        there is one call).
        """
        outs = [self.invoke(party_id, method, *(values[j] for j in idx))
                for party_id, method, idx in calls]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run_scatter(self, source: tuple[PartyId, str, tuple], incoming: Any, n_targets: int,
                    local: list[tuple[int, PartyId, str, tuple[int, ...]]],
                    remote: list[list[int]], *values: Any) -> Any:
        """A sender hosted here sends one output per target (see ``Runtime.scatter``).

        ``local`` lists the targets hosted here as (output position, party,
        method, positions of their further arguments in ``values``); they
        run now. ``remote`` groups the other targets' output positions by
        host. Returns the local targets' results, then one tuple of outputs
        per remote host (a single value when that makes one).
        """
        party_id, method, args = source
        outs = check_outputs(party_id, method, self.invoke(party_id, method, incoming, *args),
                             n_targets)
        results = [self.invoke(target, target_method, outs[pos], *(values[j] for j in idx))
                   for pos, target, target_method, idx in local]
        grouped = [tuple(outs[p] for p in group) for group in remote]
        everything = [*results, *grouped]
        return everything[0] if len(everything) == 1 else tuple(everything)

    def invoke_scattered(self, calls: list[tuple[PartyId, str, tuple[int, ...]]],
                         firsts: tuple, *values: Any) -> Any:
        """Targets hosted here receive their outputs of a scatter (``firsts``, in order).

        ``calls`` lists (party, method, positions of further arguments in
        ``values``). A single output when there is one call.
        """
        outs = [self.invoke(party_id, method, first, *(values[j] for j in idx))
                for (party_id, method, idx), first in zip(calls, firsts, strict=True)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def state(self, party_id: PartyId, attribute: str) -> Any:
        """Simulation-only access to a party attribute (ground truth for scorers)."""
        return getattr(self.parties[party_id], attribute)

    def undelivered(self) -> list[str]:
        """Messages to the parties hosted here that never arrived (holes in sequence numbers).

        A party serving calls concurrently accepts messages in any order, so
        a lost one can only be seen once the run's calls are done.
        """
        with self._lock:
            return [f"message(s) lost from {sender!r} to {party!r}: seq {holes} never arrived"
                    for party, endpoint in self.endpoints.items()
                    for sender, holes in endpoint.missing().items()]

    def flush(self) -> int:
        """Send buffered records to the recorder and wait until it has them."""
        with self._lock:
            batch, self._records, self._record_bytes = self._records, [], 0
        if batch:
            self.recorder.append_sync(batch)
        return len(batch)

    # -- messaging ------------------------------------------------------
    def _open(self, endpoint: Any, arg: Any) -> Any:
        if isinstance(arg, (Message, Envelope)):
            with self._lock:
                return endpoint.open(arg)
        if isinstance(arg, (list, tuple)) and arg and all(
            isinstance(a, (Message, Envelope)) for a in arg
        ):
            with self._lock:
                return type(arg)(endpoint.open(a) for a in arg)
        return arg

    def _send(self, endpoint: Any, result: Any, stamps: CallStamps | None,
              fault: _Fault | None = None, chain: _Chain | None = None) -> Any:
        if isinstance(result, Message):
            return self._seal(endpoint, result, stamps, fault, chain)
        if isinstance(result, (list, tuple)) and result and all(
            isinstance(r, Message) for r in result
        ):
            shared = _Encodings()  # a broadcast: one payload, encoded once for every receiver
            return type(result)(self._seal(endpoint, r, stamps, fault, chain, shared)
                                for r in result)
        return result

    def _stamp(self, endpoint: Any, message: Message, plaintext: bytes | None,
               stamps: CallStamps | None, fault: _Fault | None = None) -> Any:
        """Number and seal ``message`` (the caller holds the lock)."""
        if fault is not None and not fault.fired and fault.kind in ("drop", "reorder", "tamper"):
            fault.fired = self._fired = True
            self._mark_fired()
            return self._stamp_faulty(endpoint, message, plaintext, stamps, fault.kind)
        key = (endpoint.party, message.receiver)
        if stamps is None and key in self._reordered:  # the message that was overtaken
            return endpoint.seal_as(self._reordered.pop(key), message, plaintext)
        if stamps is None:
            return endpoint.seal(message, plaintext)
        return endpoint.seal_as(stamps.next(message.receiver), message, plaintext)

    def _stamp_faulty(self, endpoint: Any, message: Message, plaintext: bytes | None,
                      stamps: CallStamps | None, kind: str) -> Any:
        """Seal ``message`` as a lossy or hostile network would deliver it."""
        def number() -> int:
            return stamps.next(message.receiver) if stamps else endpoint.next_seq(
                message.receiver)

        if kind == "drop":
            number()  # the lost message used this number
            return endpoint.seal_as(number(), message, plaintext)
        if kind == "reorder":
            first, second = number(), number()
            self._reordered[(endpoint.party, message.receiver)] = first
            return endpoint.seal_as(second, message, plaintext)
        wire = endpoint.seal_as(number(), message, plaintext)  # tamper
        if isinstance(wire, Envelope):
            flipped = bytes([wire.ciphertext[0] ^ 0x01]) + wire.ciphertext[1:]
            return dataclasses.replace(wire, ciphertext=flipped)
        payload = {k: (v + 1 if getattr(v, "dtype", None) is not None and v.dtype.kind in "iuf"
                       else v) for k, v in wire.payload.items()}
        return dataclasses.replace(wire, payload=payload)  # undetectable without channels

    def _seal(self, endpoint: Any, message: Message, stamps: CallStamps | None = None,
              fault: _Fault | None = None, chain: _Chain | None = None,
              shared: _Encodings | None = None) -> Any:
        if message.sender != endpoint.party:
            raise ConfigError(
                f"party {endpoint.party!r} tried to send as {message.sender!r}"
            )
        if not getattr(self.recorder, "enabled", True) and not self.secure_channels:
            with self._lock:  # nothing to record, nothing to encrypt
                return self._stamp(endpoint, message, None, stamps, fault)
        if shared is None:  # one message
            plaintext = encode_arrays(message.payload)
            provenance = encode_arrays(message.provenance)
        else:
            plaintext = shared.payload(message.payload)
            provenance = shared.provenance(message.provenance)
        with self._lock:
            wire = self._stamp(endpoint, message, plaintext, stamps, fault)
        sent = wire.header if isinstance(wire, Envelope) else wire  # the header as sent
        record = make_record(
            sent,
            payload=plaintext,
            provenance=provenance,  # the ground truth, encoded above
            wire_bytes=endpoint.wire_bytes(wire, len(plaintext)),
            after=chain.after(sent) if chain is not None else (),
        )
        batch = None
        with self._lock:
            self._records.append(record)
            self._record_bytes += len(plaintext)
            if (len(self._records) >= self.record_batch
                    or self._record_bytes >= self.record_batch_bytes):
                batch, self._records, self._record_bytes = self._records, [], 0
        if batch is not None:
            self.recorder.append(batch)
        return wire


__all__ = ["FAULT_KINDS", "FaultPlan", "NullRecorder", "PartyHost", "PartySpec", "RecorderClient",
           "check_outputs"]
