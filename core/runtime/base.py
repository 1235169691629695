r"""The runtime interface: host parties, deliver calls, wait, fail loudly.

A protocol driver builds a *chain of calls*: ``ref = runtime.call(party,
"step", prev_ref)``. A call's arguments may be references returned by
earlier calls; on Ray they are ``ObjectRef``\\ s, so payloads move from
party to party without passing through the driver. :meth:`Runtime.fetch`
waits for everything called since the last fetch and returns the values
asked for. Every failure inside a party -- it raises, its process dies, it
hangs for ``party_timeout_s``, its node is lost, it runs out of memory --
fails the run with one error, :class:`~core.errors.PartyFailure` naming the
party, protocol and round, with the cause's traceback (``cause``); the
framework's own errors raised in a step (e.g.
:class:`~core.errors.IntegrityError` for a tampered, replayed, dropped or
reordered message) pass as they are.

Ordering. A party with ``PartySpec.max_concurrency == 1`` (the default)
runs its calls one at a time in the order the driver made them, on both
runtimes. A party with ``max_concurrency > 1`` runs independent calls at
the same time on Ray (in-process they still run one at a time, in order:
the deterministic reference); the runtime numbers the calls to such a
party in the driver's order (its *tickets*), and its messages' sequence
numbers come from those tickets, so the transcript is the same on both
runtimes whatever the interleaving -- only the order in which records
reach the recorder may differ (compare with
:meth:`~core.transcript.Transcript.canonical_rows`). See
:mod:`core.runtime.concurrency`.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppknn.core.errors import ConfigError, IntegrityError
from ppknn.core.messages import PartyId
from ppknn.core.runtime.host import FaultPlan, PartySpec

Progress = Callable[[int, int], None]
"""Called with (calls done, calls total) while a fetch waits."""


@dataclass(frozen=True)
class RunContext:
    """Settings for one run on a runtime.

    Parameters
    ----------
    run_id:
        Bound into every message and channel key.
    transcript_dir:
        Where the transcript's Parquet parts go; ``None`` keeps it in memory.
    secure_channels:
        Encrypt and authenticate every message.
    record_batch, record_batch_bytes:
        A host in another process (Ray) sends its buffered records to the
        recorder once it holds this many, or this many payload bytes
        (in-process hosts hand each record to the recorder at once).
    flush_every, flush_bytes:
        The recorder writes a Parquet part once it buffers this many records,
        or this many payload bytes (so memory stays bounded for large payloads).
    party_timeout_s:
        A fetch fails with ``PartyFailure`` when no call completes for this long.
    startup_timeout_s:
        How long creating a party (an actor, on Ray) may take.
    fault:
        Optional injected fault (:class:`~core.runtime.host.FaultPlan`: tests,
        ``[faults]`` in a scenario, ``ppknn chaos``).
    record:
        Record the transcript; off for sweeps that only need the outputs
        (no message is encoded unless channels are on).
    """

    run_id: str
    transcript_dir: Path | None = None
    secure_channels: bool = False
    record_batch: int = 256
    flush_every: int = 4096
    record_batch_bytes: int = 8 << 20
    flush_bytes: int = 64 << 20
    party_timeout_s: float = 60.0
    startup_timeout_s: float = 180.0
    fault: FaultPlan | None = None
    record: bool = True

    def __post_init__(self) -> None:
        if not self.run_id:
            raise ConfigError("run_id must be a non-empty string")
        if not (self.party_timeout_s > 0 and math.isfinite(self.party_timeout_s)):
            raise ConfigError(f"party_timeout_s must be a finite number of seconds > 0, got "
                              f"{self.party_timeout_s} (a run must fail, not hang, when a "
                              "party stops)")
        for name in ("record_batch", "flush_every", "record_batch_bytes", "flush_bytes"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (self.startup_timeout_s > 0 and math.isfinite(self.startup_timeout_s)):
            raise ConfigError(f"startup_timeout_s must be a finite number of seconds > 0, got "
                              f"{self.startup_timeout_s}")


@dataclass(frozen=True)
class Step:
    """One hop of a chain: ``party.method(previous_output, *args)``."""

    party: PartyId
    method: str
    args: tuple = ()
    protocol: str = ""
    round: int = 0


@dataclass(frozen=True)
class Call:
    """One independent call: ``party.method(*args)``."""

    party: PartyId
    method: str
    args: tuple = ()
    protocol: str = ""
    round: int = 0


@dataclass
class CallRecord:
    """A call made since the last fetch, for failure attribution."""

    refs: Sequence[Any]
    party: PartyId
    method: str
    protocol: str
    round: int
    work: int = 1
    """How many ``party_timeout_s`` the call may take without progress (a party step that
    sends to thousands of parties seals thousands of messages)."""


class Runtime(abc.ABC):
    """Hosts parties and delivers calls between them (see module docstring)."""

    name: str = "runtime"
    _pending: list[CallRecord]

    def __init__(self) -> None:
        self.context: RunContext | None = None
        self._pending: list[CallRecord] = []
        self._parties: list[PartyId] = []
        self._party_set: set[PartyId] = set()
        self._concurrency: dict[PartyId, int] = {}
        self._tickets: dict[PartyId, int] = {}

    # -- lifecycle --------------------------------------------------------
    @abc.abstractmethod
    def start(self, specs: Sequence[PartySpec], context: RunContext) -> None:
        """Create the parties of a run, exchange channel keys, start the recorder."""

    @abc.abstractmethod
    def close_transcript(self) -> dict[str, Any]:
        """Flush every live host and close the recorder; returns communication totals."""

    def check_delivery(self) -> None:
        """Refuse a run in which a message never arrived (call once every call is done).

        Raises :class:`~core.errors.IntegrityError` naming the sender, the
        receiver and the missing sequence numbers. Sequential receivers
        refuse a gap at the next message already; this catches the messages
        lost on their way to a party that serves calls concurrently.
        """
        problems = self._undelivered()
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise IntegrityError(problems[0] + more)

    def _undelivered(self) -> list[str]:
        """Every host's :meth:`~core.runtime.host.PartyHost.undelivered`."""
        return []

    @abc.abstractmethod
    def transcript_table(self) -> Any:
        """Everything recorded so far as one Arrow table (in memory or from disk).

        Call after :meth:`close_transcript` to get the whole run.
        """

    @abc.abstractmethod
    def shutdown(self, *, wait: bool = True) -> None:
        """Release everything this runtime created.

        With ``wait=False`` a runtime may finish releasing in the background
        (the Ray runtime stops a Ray instance it started on a thread); the
        parties are gone either way.
        """

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def parties(self) -> list[PartyId]:
        """The hosted parties, in creation order."""
        return list(self._parties)

    # -- calls ------------------------------------------------------------
    @abc.abstractmethod
    def call(self, party: PartyId, method: str, *args: Any, protocol: str = "",
             round: int = 0, num_returns: int = 1) -> Any:
        """Schedule ``party.method(*args)``; returns a reference.

        A list of references when ``num_returns > 1``.
        """

    def chain(self, steps: Sequence[Step], incoming: Any = None) -> Any:
        """Pass a message along ``steps``; returns a reference to the last output.

        Runtimes that host several parties per process run consecutive steps
        on the same host in one call (see :class:`~core.runtime.ray_runtime.RayRuntime`).
        """
        out = incoming
        for s in steps:
            out = self.call(s.party, s.method, out, *s.args, protocol=s.protocol, round=s.round)
        return out

    def map(self, calls: Sequence[Call]) -> list[Any]:
        """Independent calls; returns one reference per call."""
        return [self.call(c.party, c.method, *c.args, protocol=c.protocol, round=c.round)
                for c in calls]

    def scatter(self, source: Step, incoming: Any, targets: Sequence[Call | Step]
                ) -> list[Any]:
        """One party sends a message to each of ``targets``; returns one reference per target.

        ``source.party.source.method(incoming, *source.args)`` returns a
        sequence with one output per target, in order; target ``i`` then
        runs ``party.method(output_i, *args)``. Runtimes that host several
        parties per process deliver all outputs bound for one host in one
        call, and run the targets that share the sender's host in the
        sender's call. A target is a :class:`Call` or (planned through a typed
        handle with :data:`~core.runtime.typed.PREVIOUS`) a :class:`Step`;
        either way its ``args`` follow the output it is handed.
        """
        if not targets:
            raise ConfigError(f"scatter from {source.party!r} needs at least one target")
        outs = self.call(source.party, source.method, incoming, *source.args,
                         protocol=source.protocol, round=source.round, num_returns=len(targets))
        outs = outs if len(targets) > 1 else [outs]
        return self.map([Call(t.party, t.method, (o, *t.args), t.protocol, t.round)
                         for t, o in zip(targets, outs)])

    @abc.abstractmethod
    def fetch(self, refs: Any, *, progress: Progress | None = None) -> Any:
        """Wait for all pending calls; return the values of ``refs`` (same nesting)."""

    @abc.abstractmethod
    def state(self, party: PartyId, attribute: str) -> Any:
        """Simulation-only read of a party attribute (ground truth for scorers)."""

    @abc.abstractmethod
    def kill(self, party: PartyId) -> None:
        """Kill the process hosting ``party`` (failure tests)."""

    def _note_concurrency(self, specs: Sequence[PartySpec]) -> None:
        """Remember which parties serve calls concurrently (called by :meth:`start`)."""
        self._concurrency = {s.party_id: s.max_concurrency for s in specs
                             if s.max_concurrency > 1}
        self._tickets = {}

    def _ticket(self, party: PartyId) -> int | None:
        """The next call number of a concurrent party (``None`` for the others)."""
        if party not in self._concurrency:
            return None
        ticket = self._tickets.get(party, 0)
        self._tickets[party] = ticket + 1
        return ticket

    def _check_party(self, party: PartyId) -> None:
        if party not in self._party_set:
            if len(self._party_set) != len(self._parties):  # parties were added: refresh
                self._party_set = set(self._parties)
                if party in self._party_set:
                    return
            shown = self._parties if len(self._parties) <= 20 else self._parties[:20] + ["..."]
            raise ConfigError(f"unknown party {party!r}; hosted parties: {shown}")


__all__ = ["Call", "CallRecord", "Progress", "RunContext", "Runtime", "Step"]
