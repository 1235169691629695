"""InProcessRuntime: every party in this process; the deterministic reference."""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from queue import SimpleQueue
from typing import Any

from ppknn.core.errors import ConfigError, PartyFailure
from ppknn.core.messages import PartyId
from ppknn.core.runtime.base import CallRecord, Progress, RunContext, Runtime
from ppknn.core.runtime.host import NullRecorder, PartyHost, PartySpec, check_outputs
from ppknn.core.transcript import TranscriptRecorder

_running = threading.local()
"""Per worker thread: ``batch``, the :class:`_Batch` it runs."""


@dataclass(slots=True)
class LocalRef:
    """The result of an in-process call: a value or the exception it raised."""

    value: Any = None
    error: BaseException | None = None


class _DirectRecorder:
    """The recorder client of every host in this process: records go on in batches.

    Each host hands over every record as it seals it; they wait here, in the order
    sealed, and go to the recorder together when ``batch`` records or ``batch_bytes``
    payload bytes are waiting, and whenever the driver has control back (after each
    batch of calls, a failed or abandoned one included, see
    :meth:`InProcessRuntime._drain`), so at most one batch is held, as on Ray. The
    recorder keeps them as if they came one by one (the same parts:
    :meth:`~core.transcript.TranscriptRecorder.append_each`).
    """

    def __init__(self, recorder: TranscriptRecorder, batch: int, batch_bytes: int) -> None:
        self.recorder = recorder
        self.batch, self.batch_bytes = batch, batch_bytes
        self._records: list[dict[str, Any]] = []
        self._bytes = 0
        self._lock = threading.Lock()  # an abandoned call may send while the driver hands over

    def append(self, records: list[dict[str, Any]]) -> None:
        """Keep records; hand them over once a batch is full."""
        with self._lock:
            for r in records:
                self._records.append(r)
                self._bytes += len(r["payload"])
            if len(self._records) >= self.batch or self._bytes >= self.batch_bytes:
                self._hand_over()

    def append_sync(self, records: list[dict[str, Any]]) -> None:
        """Keep records and hand over everything kept (the recorder has them on return)."""
        with self._lock:
            self._records.extend(records)
            self._hand_over()

    def hand_over(self) -> None:
        """Hand every record kept to the recorder."""
        with self._lock:
            self._hand_over()

    def _hand_over(self) -> None:
        records, self._records, self._bytes = self._records, [], 0
        if records:
            self.recorder.append_each(records)


class InProcessRuntime(Runtime):
    """Runs every party in the calling process, one host per party.

    Calls run eagerly, in the order the driver makes them; an exception is
    kept in the returned reference and raised by :meth:`fetch`, and calls
    depending on a failed one do not run (as on Ray). A party with
    ``max_concurrency > 1`` also runs its calls one at a time here, in the
    driver's order: this runtime is the deterministic reference, and the
    party's messages are numbered exactly as on Ray (see
    :mod:`core.runtime.concurrency`).

    Calls are queued when made and run, in the driver's order, by one
    worker thread as soon as the driver needs a result (:meth:`fetch`,
    :meth:`state`, :meth:`close_transcript`, ...): one hand-over between
    threads per batch of calls, not per call. The driver waits at most
    ``party_timeout_s`` for each call of the batch, so a party that hangs
    fails the run with :class:`~core.errors.PartyFailure` naming it, as on
    Ray, and the calls after it still run on a fresh worker; an exception
    raised inside a party step becomes ``PartyFailure`` too (the framework's
    own errors, e.g. :class:`~core.errors.IntegrityError`, pass as they are).
    What each call does, sends and records is the same as if it had run
    when it was made.
    """

    name = "inprocess"

    def __init__(self) -> None:
        super().__init__()
        self.recorder: TranscriptRecorder | None = None
        self.hosts: dict[PartyId, PartyHost] = {}
        self._dead: set[PartyId] = set()
        self._queue: list[_Queued | None] = []  # calls made, not yet run
        self._batch: _Batch | None = None  # the batch being run (set while draining)
        self._worker: _Worker | None = None  # runs the queued calls (one thread)
        self._client: _DirectRecorder | NullRecorder = NullRecorder()

    def start(self, specs: Sequence[PartySpec], context: RunContext) -> None:  # noqa: D102
        self.context = context
        self._note_concurrency(specs)
        self.recorder = TranscriptRecorder(context.transcript_dir, flush_every=context.flush_every,
                                           flush_bytes=context.flush_bytes)
        client = (_DirectRecorder(self.recorder, context.record_batch, context.record_batch_bytes)
                  if context.record else NullRecorder())
        self._client = client
        keys = {}
        for spec in specs:
            host = PartyHost(run_id=context.run_id, recorder=client,
                             secure_channels=context.secure_channels,
                             # every record straight to the one client of this process
                             # (it batches them), so thousands of parties don't each hold
                             # a batch
                             record_batch=1,
                             fault=context.fault if context.fault and
                             context.fault.party == spec.party_id else None,
                             on_kill=self._killed, beats=self._beat)
            keys[spec.party_id] = host.add_party(spec)
            self.hosts[spec.party_id] = host
            self._parties.append(spec.party_id)
        for host in self.hosts.values():
            host.register_peers(keys, unordered=self._concurrency)

    def _killed(self, party: PartyId) -> None:
        """An injected crash: the party is dead from now on."""
        self._dead.add(party)
        raise PartyFailure(party, "", -1, "party crashed (fault injection)")

    def call(self, party: PartyId, method: str, *args: Any, protocol: str = "",
             round: int = 0, num_returns: int = 1) -> Any:
        """See :meth:`core.runtime.base.Runtime.call` (queued; run when a result is needed)."""
        self._check_party(party)
        ticket = self._ticket(party)  # numbered when called, run or not (as on Ray)
        refs = [LocalRef() for _ in range(num_returns)]
        # the record keeps the references only when the call failed: a successful call's
        # outputs live as long as the driver holds them (a long chain's intermediate
        # messages are freed as it goes)
        record = CallRecord((), party, method, protocol, round)
        self._pending.append(record)
        self._queue.append(_Queued(party, method, args, protocol, round, num_returns, ticket,
                                   refs, record))
        return refs if num_returns > 1 else refs[0]

    def _execute(self, q: _Queued) -> None:
        """Run one queued call (on the worker thread); its outcome goes into its references."""
        refs = q.refs
        upstream = next((a.error for a in q.args if isinstance(a, LocalRef) and a.error), None)
        if upstream is not None:
            for r in refs:
                r.error = upstream
            q.record.refs = refs
            return
        try:
            if q.party in self._dead:
                raise PartyFailure(q.party, q.protocol, q.round, "party process is dead")
            values = [a.value if isinstance(a, LocalRef) else a for a in q.args]
            out = self.hosts[q.party].invoke(q.party, q.method, *values, ticket=q.ticket)
            if q.num_returns == 1:
                refs[0].value = out
            else:
                for r, v in zip(refs, check_outputs(q.party, q.method, out, q.num_returns)):
                    r.value = v
        except BaseException as exc:  # kept and raised at fetch, as on Ray
            if isinstance(exc, PartyFailure):
                exc = exc.where(q.protocol, q.round)
            for r in refs:
                r.error = exc
            q.record.refs = refs

    def _drain(self) -> None:
        """Run every queued call, in order; a call that outlives the timeout fails the run.

        The calls run on a worker thread while the driver waits at most
        ``party_timeout_s`` for each of them. A call that does not return
        by then is abandoned (its thread is left to finish on its own and
        its outcome is discarded; its party is dead for the rest of the
        run); its references hold :class:`~core.errors.PartyFailure` naming
        the party, and the calls after it run on a new worker thread.
        """
        if self._batch is not None:  # re-entered from a party step: nothing to do
            return
        timeout = self.context.party_timeout_s if self.context else 60.0
        while self._queue:
            calls, self._queue = self._queue, []
            start = 0
            while start < len(calls):
                batch = _Batch(self, calls, start)
                if self._worker is None:
                    self._worker = _Worker()
                self._batch = batch
                self._worker.inbox.put(batch)
                try:
                    start = batch.wait(timeout)
                finally:
                    self._batch = None
                    # what the batch sent is the recorder's before the driver goes on (also
                    # when the wait is interrupted, e.g. by SIGTERM)
                    self._hand_over()
                if batch.cancelled:
                    self._worker = None  # stuck in the hung call; the next batch gets a new one

    def _beat(self) -> None:
        """A running step's progress beat: its call's clock starts again.

        The batch is the one this thread runs (an abandoned call still running
        on its old thread restarts nobody's clock).
        """
        batch = getattr(_running, "batch", None)
        if batch is not None:
            batch.restart_clock()

    def _hand_over(self) -> None:
        if isinstance(self._client, _DirectRecorder):
            self._client.hand_over()

    def fetch(self, refs: Any, *, progress: Progress | None = None) -> Any:  # noqa: D102
        self._drain()
        pending = list(self._pending)
        self._pending.clear()
        if progress is not None:
            progress(len(pending), len(pending))
        for c in pending:
            err = next((r.error for r in c.refs if r.error is not None), None)
            if err is not None:
                raise err
        return _resolve(refs)

    def state(self, party: PartyId, attribute: str) -> Any:  # noqa: D102
        self._check_party(party)
        self._drain()
        return self.hosts[party].state(party, attribute)

    def kill(self, party: PartyId) -> None:  # noqa: D102
        self._check_party(party)
        if self._batch is None:
            self._drain()  # the calls made before the kill have run (as they would have)
        self._dead.add(party)

    def close_transcript(self) -> dict[str, Any]:  # noqa: D102
        if self.recorder is None:
            return {}
        self._drain()
        for party, host in self.hosts.items():
            if party not in self._dead:
                host.flush()
        self._hand_over()
        return self.recorder.close()

    def _undelivered(self) -> list[str]:
        self._drain()
        return [p for party, host in self.hosts.items() if party not in self._dead
                for p in host.undelivered()]

    def transcript_table(self):  # noqa: D102
        if self.recorder is None:
            raise ConfigError("no transcript: the runtime was not started")
        return self.recorder.table()

    def shutdown(self, *, wait: bool = True) -> None:  # noqa: D102
        self._queue = []  # calls never waited on: nothing needs their outcome any more
        for host in self.hosts.values():
            host.abandon()  # a call stuck in an injected hang returns
        self.hosts.clear()
        if self._worker is not None:
            self._worker.inbox.put(None)
            self._worker = None


@dataclass(eq=False, slots=True)
class _Queued:
    """A call made and not yet run."""

    party: PartyId
    method: str
    args: tuple
    protocol: str
    round: int
    num_returns: int
    ticket: int | None
    refs: list[LocalRef]
    record: CallRecord


class _Worker:
    """One thread running the batches handed to it, one after the other.

    A worker whose batch was cancelled (a call hung) is left behind: it
    exits once that call returns, if ever; the runtime starts a new one.
    """

    def __init__(self) -> None:
        self.inbox: SimpleQueue[_Batch | None] = SimpleQueue()
        threading.Thread(target=self._loop, name="ppknn-party", daemon=True).start()

    def _loop(self) -> None:
        while True:
            batch = self.inbox.get()
            if batch is None:
                return
            batch.run()
            if batch.cancelled:
                return


class _Batch:
    """Queued calls run in order by one worker thread, watched by the driver.

    The worker stamps the start of each call (a progress beat stamps it
    again); the driver sleeps until the batch ends or the running call's
    deadline passes. Under ``_guard`` the
    driver either sees the call finished or cancels the batch (the worker
    then discards that call's outcome and runs nothing more).
    """

    __slots__ = ("_done", "_guard", "calls", "cancelled", "index", "rt", "started")

    def __init__(self, rt: InProcessRuntime, calls: list[_Queued | None], start: int) -> None:
        self.rt = rt
        self.calls = calls
        self.index = start
        self.started = time.monotonic()
        self.cancelled = False
        self._guard = threading.Lock()
        self._done = _thread.allocate_lock()
        self._done.acquire()

    def run(self) -> None:
        """Run the calls (on the worker thread); releases the driver when done or cancelled."""
        calls, guard = self.calls, self._guard
        _running.batch = self  # where this thread's progress beats go
        self.started = time.monotonic()
        try:
            i = self.index
            while i < len(calls):
                q = calls[i]
                assert q is not None
                self.rt._execute(q)
                with guard:
                    if self.cancelled:  # the driver gave up on this call: its outcome is void
                        return
                    calls[i] = None  # its arguments and outputs are the driver's to keep
                    i += 1
                    self.index = i
                    self.started = time.monotonic()
        finally:
            self._done.release()

    def restart_clock(self) -> None:
        """The running call made progress (a beat): its deadline is ``timeout`` from now."""
        with self._guard:
            if not self.cancelled:
                self.started = time.monotonic()

    def wait(self, timeout: float) -> int:
        """Wait for the batch; returns the index to resume from (``len(calls)``: all done)."""
        while True:
            with self._guard:
                index, started = self.index, self.started
            left = started + timeout - time.monotonic()
            if left > 0 and self._done.acquire(timeout=left):
                return len(self.calls)  # every call ran (only the driver cancels)
            with self._guard:
                if self.index >= len(self.calls):
                    return len(self.calls)
                if self.index != index or time.monotonic() - self.started < timeout:
                    continue  # progress since: the next call has its own deadline
                self.cancelled = True
            q = self.calls[index]
            assert q is not None
            self.rt._dead.add(q.party)
            self.rt.hosts[q.party].abandon()
            err = PartyFailure(q.party, q.protocol, q.round,
                               f"no progress for {timeout:g} s in {q.method!r}")
            for r in q.refs:
                r.error = err
            q.record.refs = q.refs
            self.calls[index] = None
            return index + 1


def _resolve(refs: Any) -> Any:
    if isinstance(refs, LocalRef):
        return refs.value
    if isinstance(refs, (list, tuple)):
        return type(refs)(_resolve(r) for r in refs)
    if isinstance(refs, dict):
        return {k: _resolve(v) for k, v in refs.items()}
    return refs


__all__ = ["InProcessRuntime", "LocalRef"]
