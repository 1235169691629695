"""InProcessRuntime: every party in this process; the deterministic reference."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from ppknn.core.errors import ConfigError, PartyFailure
from ppknn.core.messages import PartyId
from ppknn.core.runtime.base import CallRecord, Progress, RunContext, Runtime
from ppknn.core.runtime.host import NullRecorder, PartyHost, PartySpec, check_outputs
from ppknn.core.transcript import TranscriptRecorder


@dataclass
class LocalRef:
    """The result of an in-process call: a value or the exception it raised."""

    value: Any = None
    error: BaseException | None = None


class _DirectRecorder:
    def __init__(self, recorder: TranscriptRecorder) -> None:
        self.recorder = recorder

    def append(self, records: list[dict[str, Any]]) -> None:
        """Hand records to the recorder (synchronously)."""
        self.recorder.append(records)

    append_sync = append


class InProcessRuntime(Runtime):
    """Runs every party in the calling process, one host per party.

    Calls run eagerly, in the order the driver makes them; an exception is
    kept in the returned reference and raised by :meth:`fetch`, and calls
    depending on a failed one do not run (as on Ray). A party with
    ``max_concurrency > 1`` also runs its calls one at a time here, in the
    driver's order: this runtime is the deterministic reference, and the
    party's messages are numbered exactly as on Ray (see
    :mod:`core.runtime.concurrency`).

    Each call runs on one worker thread while the driver waits at most
    ``party_timeout_s`` for it, so a party that hangs fails the run with
    :class:`~core.errors.PartyFailure` naming it, as on Ray; an exception
    raised inside a party step becomes ``PartyFailure`` too (the framework's
    own errors, e.g. :class:`~core.errors.IntegrityError`, pass as they are).
    """

    name = "inprocess"

    def __init__(self) -> None:
        super().__init__()
        self.recorder: TranscriptRecorder | None = None
        self.hosts: dict[PartyId, PartyHost] = {}
        self._dead: set[PartyId] = set()
        self._worker: ThreadPoolExecutor | None = None

    def start(self, specs: Sequence[PartySpec], context: RunContext) -> None:  # noqa: D102
        self.context = context
        self._note_concurrency(specs)
        self.recorder = TranscriptRecorder(context.transcript_dir, flush_every=context.flush_every,
                                           flush_bytes=context.flush_bytes)
        client = _DirectRecorder(self.recorder) if context.record else NullRecorder()
        keys = {}
        for spec in specs:
            host = PartyHost(run_id=context.run_id, recorder=client,
                             secure_channels=context.secure_channels,
                             # the recorder is in this process: hand records straight to
                             # it (it bounds its buffer), so thousands of parties don't each
                             # hold a batch
                             record_batch=1,
                             fault=context.fault if context.fault and
                             context.fault.party == spec.party_id else None,
                             on_kill=self._killed)
            keys[spec.party_id] = host.add_party(spec)
            self.hosts[spec.party_id] = host
            self._parties.append(spec.party_id)
        for host in self.hosts.values():
            host.register_peers(keys, unordered=self._concurrency)

    def _killed(self, party: PartyId) -> None:
        """An injected crash: the party is dead from now on."""
        self._dead.add(party)
        raise PartyFailure(party, "", -1, "party crashed (fault injection)")

    def _run(self, party: PartyId, method: str, protocol: str, round: int,
             fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run one call on the worker thread; a call that outlives the timeout fails the run.

        The driver waits at most ``party_timeout_s`` for each call. A call
        that does not return by then is abandoned (its thread is left to
        finish on its own, its party is dead for the rest of the run) and
        :class:`~core.errors.PartyFailure` names the party.
        """
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ppknn-party")
        future = self._worker.submit(fn, *args, **kwargs)
        timeout = self.context.party_timeout_s if self.context else 60.0
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            self._dead.add(party)
            self.hosts[party].abandon()
            self._worker.shutdown(wait=False)
            self._worker = None  # the stuck thread keeps the old one; later calls get a new one
            raise PartyFailure(party, protocol, round,
                               f"no progress for {timeout:g} s in {method!r}") from None

    def call(self, party: PartyId, method: str, *args: Any, protocol: str = "",
             round: int = 0, num_returns: int = 1) -> Any:
        """See :meth:`core.runtime.base.Runtime.call`."""
        self._check_party(party)
        ticket = self._ticket(party)  # numbered when called, run or not (as on Ray)
        refs = [LocalRef() for _ in range(num_returns)]
        # the record keeps the references only when the call failed: a successful call's
        # outputs live as long as the driver holds them (a long chain's intermediate
        # messages are freed as it goes)
        record = CallRecord((), party, method, protocol, round)
        self._pending.append(record)
        upstream = next((a.error for a in args if isinstance(a, LocalRef) and a.error), None)
        if upstream is not None:
            for r in refs:
                r.error = upstream
            record.refs = refs
            return refs if num_returns > 1 else refs[0]
        try:
            if party in self._dead:
                raise PartyFailure(party, protocol, round, "party process is dead")
            values = [a.value if isinstance(a, LocalRef) else a for a in args]
            out = self._run(party, method, protocol, round, self.hosts[party].invoke, party,
                            method, *values, ticket=ticket)
            if num_returns == 1:
                refs[0].value = out
            else:
                for r, v in zip(refs, check_outputs(party, method, out, num_returns)):
                    r.value = v
        except BaseException as exc:  # kept and raised at fetch, as on Ray
            if isinstance(exc, PartyFailure):
                exc = exc.where(protocol, round)
            for r in refs:
                r.error = exc
            record.refs = refs
        return refs if num_returns > 1 else refs[0]

    def fetch(self, refs: Any, *, progress: Progress | None = None) -> Any:  # noqa: D102
        pending = self._pending
        self._pending = []
        if progress is not None:
            progress(len(pending), len(pending))
        for c in pending:
            err = next((r.error for r in c.refs if r.error is not None), None)
            if err is not None:
                raise err
        return _resolve(refs)

    def state(self, party: PartyId, attribute: str) -> Any:  # noqa: D102
        self._check_party(party)
        return self.hosts[party].state(party, attribute)

    def kill(self, party: PartyId) -> None:  # noqa: D102
        self._check_party(party)
        self._dead.add(party)

    def close_transcript(self) -> dict[str, Any]:  # noqa: D102
        if self.recorder is None:
            return {}
        for party, host in self.hosts.items():
            if party not in self._dead:
                host.flush()
        return self.recorder.close()

    def _undelivered(self) -> list[str]:
        return [p for party, host in self.hosts.items() if party not in self._dead
                for p in host.undelivered()]

    def transcript_table(self):  # noqa: D102
        if self.recorder is None:
            raise ConfigError("no transcript: the runtime was not started")
        return self.recorder.table()

    def shutdown(self) -> None:  # noqa: D102
        for host in self.hosts.values():
            host.abandon()  # a call stuck in an injected hang returns
        self.hosts.clear()
        if self._worker is not None:
            self._worker.shutdown(wait=False)
            self._worker = None


def _resolve(refs: Any) -> Any:
    if isinstance(refs, LocalRef):
        return refs.value
    if isinstance(refs, (list, tuple)):
        return type(refs)(_resolve(r) for r in refs)
    if isinstance(refs, dict):
        return {k: _resolve(v) for k, v in refs.items()}
    return refs


__all__ = ["InProcessRuntime", "LocalRef"]
