"""A party host: runs one or more logical parties and does their messaging.

The host is a plain class. :class:`~core.runtime.inprocess.InProcessRuntime`
uses it directly; :class:`~core.runtime.ray_runtime.RayRuntime` wraps it in
a Ray actor. For every call it

1. opens incoming messages (authenticates and decrypts them when channels
   are on; checks receiver and sequence number either way),
2. runs the party's step,
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

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ppknn.core.channels import Envelope, SecureEndpoint, make_endpoint
from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import Message, PartyId, encode_arrays
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


@dataclass(frozen=True)
class FaultPlan:
    """Simulated failure: the host process dies when ``party`` runs ``method``.

    ``occurrence`` counts calls of that method on that party (1 = the first).
    Used by failure tests and scenario fault injection.
    """

    party: PartyId
    method: str
    occurrence: int = 1


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
        self.parties: dict[PartyId, Any] = {}
        self.endpoints: dict[PartyId, Any] = {}
        self._records: list[dict[str, Any]] = []
        self._concurrent: set[PartyId] = set()
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

    def register_peers(self, directory: Mapping[PartyId, bytes]) -> None:
        """Give every hosted party the public-key directory."""
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
        if self.fault is not None and self.fault.party == party_id and self.fault.method == method:
            with self._lock:
                self._fault_count += 1
                crash = self._fault_count >= self.fault.occurrence
            if crash:
                os._exit(17)  # simulate a crash: the process dies without cleanup
        stamps = None
        if party_id in self._concurrent:
            if ticket is None:
                raise ConfigError(f"party {party_id!r} serves calls concurrently: call it through "
                                  "Runtime.call (which numbers its calls), not in a host group")
            stamps = CallStamps(ticket)
        endpoint = self.endpoints[party_id]
        opened = [self._open(endpoint, a) for a in args]
        result = getattr(party, method)(*opened)
        return self._send(endpoint, result, stamps)

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

    def _send(self, endpoint: Any, result: Any, stamps: CallStamps | None) -> Any:
        if isinstance(result, Message):
            return self._seal(endpoint, result, stamps)
        if isinstance(result, (list, tuple)) and result and all(
            isinstance(r, Message) for r in result
        ):
            return type(result)(self._seal(endpoint, r, stamps) for r in result)
        return result

    @staticmethod
    def _stamp(endpoint: Any, message: Message, plaintext: bytes | None,
               stamps: CallStamps | None) -> Any:
        """Number and seal ``message`` (the caller holds the lock)."""
        if stamps is None:
            return endpoint.seal(message, plaintext)
        return endpoint.seal_as(stamps.next(message.receiver), message, plaintext)

    def _seal(self, endpoint: Any, message: Message, stamps: CallStamps | None = None) -> Any:
        if message.sender != endpoint.party:
            raise ConfigError(
                f"party {endpoint.party!r} tried to send as {message.sender!r}"
            )
        if not getattr(self.recorder, "enabled", True) and not self.secure_channels:
            with self._lock:  # nothing to record, nothing to encrypt
                return self._stamp(endpoint, message, None, stamps)
        plaintext = encode_arrays(message.payload)
        with self._lock:
            wire = self._stamp(endpoint, message, plaintext, stamps)
        stamped = wire.header if isinstance(wire, Envelope) else wire
        record = make_record(
            stamped.__class__(**{**stamped.header(), "payload": {}},
                              provenance=message.provenance),
            payload=plaintext,
            wire_bytes=endpoint.wire_bytes(wire, len(plaintext)),
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


__all__ = ["FaultPlan", "NullRecorder", "PartyHost", "PartySpec", "RecorderClient",
           "check_outputs"]
