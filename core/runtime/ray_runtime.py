"""RayRuntime: parties in Ray actors, calls chained by ObjectRef.

Each logical party lives in a :class:`~core.runtime.host.PartyHost` actor
(``num_cpus=0`` so many parties fit on a small machine; placement by
resources is the caller's choice through ``actor_options``). The
transcript recorder is an actor too; hosts send it batches of records
fire-and-forget and synchronously on flush.

Calls are chained: an ``ObjectRef`` returned by one party's step is passed
as the argument of the next party's step, so Ray moves the payload from
worker to worker and the driver only waits on the chain. :meth:`fetch`
polls with :func:`ray.wait`; when something fails it walks the chain in
call order to find the first failed call: a dead actor becomes
:class:`~core.errors.PartyFailure` naming the party, an exception raised
by a step is re-raised as is, and a chain with no progress for
``party_timeout_s`` fails naming the party it is stuck on.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from core.errors import ConfigError, PartyFailure
from core.messages import PartyId
from core.runtime.base import CallRecord, Progress, RunContext, Runtime
from core.runtime.host import NullRecorder, PartyHost, PartySpec
from core.transcript import TranscriptRecorder

_POLL_S = 0.1


class RayRecorderClient:
    """Sends records to the recorder actor (picklable: holds the actor handle)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def append(self, records: list[dict[str, Any]]) -> None:
        """Send records without waiting."""
        self.handle.append.remote(records)

    def append_sync(self, records: list[dict[str, Any]]) -> None:
        """Send records and wait until the recorder has them."""
        ray.get(self.handle.append.remote(records))


class RayRuntime(Runtime):
    """Hosts parties in Ray actors (see module docstring).

    Parameters
    ----------
    address:
        Ray cluster address (``"auto"``, ``"ray://..."``); ``None`` starts or
        reuses a local Ray instance.
    num_cpus:
        CPUs for a local Ray started here (``None``: all).
    actor_options:
        Extra ``.options(...)`` per party (e.g. custom resources to pin a
        party to a node).
    """

    name = "ray"

    def __init__(self, *, address: str | None = None, num_cpus: int | None = None,
                 actor_options: Mapping[PartyId, Mapping[str, Any]] | None = None) -> None:
        super().__init__()
        self.address = address
        self.num_cpus = num_cpus
        self.actor_options = dict(actor_options or {})
        self._started_ray = False
        self.hosts: dict[PartyId, Any] = {}
        self.recorder: Any = None
        self._dead: set[PartyId] = set()
        self._consumed: set[Any] = set()

    def _ensure_ray(self) -> None:
        if ray.is_initialized():
            return
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "logging_level": "WARNING",
            "log_to_driver": False,
            "configure_logging": True,
        }
        if self.address:
            kwargs["address"] = self.address
        elif self.num_cpus is not None:
            kwargs["num_cpus"] = self.num_cpus
        ray.init(**kwargs)
        self._started_ray = True

    def start(self, specs: Sequence[PartySpec], context: RunContext) -> None:  # noqa: D102
        self._ensure_ray()
        self.context = context
        recorder_cls = ray.remote(num_cpus=0, max_restarts=0)(TranscriptRecorder)
        self.recorder = recorder_cls.remote(
            str(context.transcript_dir) if context.transcript_dir else None,
            flush_every=context.flush_every,
        )
        client = RayRecorderClient(self.recorder) if context.record else NullRecorder()
        host_cls = ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(PartyHost)
        key_refs = {}
        for spec in specs:
            options = dict(self.actor_options.get(spec.party_id, {}))
            options.setdefault("name", None)
            options.pop("name")
            host = host_cls.options(**options).remote(
                run_id=context.run_id, recorder=client,
                secure_channels=context.secure_channels,
                record_batch=context.record_batch,
                fault=context.fault if context.fault and context.fault.party == spec.party_id
                else None,
            )
            self.hosts[spec.party_id] = host
            self._parties.append(spec.party_id)
            key_refs[spec.party_id] = host.add_party.remote(spec)  # type: ignore[union-attr]
        keys = self._get_setup(key_refs, "setup")
        self._get_setup({p: h.register_peers.remote(keys) for p, h in self.hosts.items()},
                        "key exchange")

    def _get_setup(self, refs: Mapping[PartyId, Any], phase: str) -> dict[PartyId, Any]:
        out = {}
        timeout = self.context.startup_timeout_s if self.context else 180.0
        for party, ref in refs.items():
            try:
                out[party] = ray.get(ref, timeout=timeout)
            except RayActorError as exc:
                raise PartyFailure(party, phase, 0, f"actor died: {exc}") from exc
            except GetTimeoutError as exc:
                raise PartyFailure(party, phase, 0, f"no answer within {timeout} s") from exc
        return out

    def call(self, party: PartyId, method: str, *args: Any, protocol: str = "",
             round: int = 0, num_returns: int = 1) -> Any:
        """See :meth:`core.runtime.base.Runtime.call`."""
        self._check_party(party)
        host = self.hosts[party]
        self._consumed.update(a for a in args if isinstance(a, ray.ObjectRef))
        if num_returns == 1:
            ref = host.invoke.remote(party, method, *args)
            self._pending.append(CallRecord([ref], party, method, protocol, round))
            return ref
        refs = host.invoke.options(num_returns=num_returns).remote(party, method, *args)
        self._pending.append(CallRecord(list(refs), party, method, protocol, round))
        return list(refs)

    def fetch(self, refs: Any, *, progress: Progress | None = None) -> Any:  # noqa: D102
        pending, self._pending = self._pending, []
        timeout = self.context.party_timeout_s if self.context else 60.0
        remaining = list(pending)
        total = len(pending)
        last_progress = time.monotonic()
        while remaining:
            firsts = [c.refs[0] for c in remaining]
            ready, _ = ray.wait(firsts, num_returns=len(firsts), timeout=_POLL_S)
            if ready:
                done = set(ready)
                remaining = [c for c in remaining if c.refs[0] not in done]
                last_progress = time.monotonic()
                if progress is not None:
                    progress(total - len(remaining), total)
            elif time.monotonic() - last_progress > timeout:
                stuck = remaining[0]
                self._raise_first_failure(pending)
                raise PartyFailure(stuck.party, stuck.protocol, stuck.round,
                                   f"no progress for {timeout:.0f} s in {stuck.method!r}")
        # Errors travel down a chain, so the chains' ends (results nobody consumed) tell
        # whether anything failed; a failure is attributed to the first failed call.
        leaves = [r for c in pending for r in c.refs if r not in self._consumed]
        self._consumed.clear()
        try:
            ray.get(leaves)
            return _get_nested(refs)
        except (RayActorError, RayTaskError):
            self._raise_first_failure(pending)
            raise

    def _raise_first_failure(self, calls: Sequence[CallRecord]) -> None:
        for c in calls:
            ready, _ = ray.wait(list(c.refs), num_returns=len(c.refs), timeout=0)
            if len(ready) < len(c.refs):
                continue
            try:
                ray.get(list(c.refs))
            except RayActorError as exc:
                self._dead.add(c.party)
                raise PartyFailure(c.party, c.protocol, c.round,
                                   f"actor died during {c.method!r}") from exc
            except RayTaskError as exc:
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                if isinstance(cause, PartyFailure):
                    raise cause from exc
                raise exc  # the step's own exception (e.g. IntegrityError), as Ray re-raises it

    def state(self, party: PartyId, attribute: str) -> Any:  # noqa: D102
        self._check_party(party)
        try:
            return ray.get(self.hosts[party].state.remote(party, attribute),
                           timeout=self.context.party_timeout_s if self.context else 60)
        except RayActorError as exc:
            raise PartyFailure(party, "state", 0, "actor died") from exc

    def kill(self, party: PartyId) -> None:  # noqa: D102
        self._check_party(party)
        ray.kill(self.hosts[party], no_restart=True)
        self._dead.add(party)

    def close_transcript(self) -> dict[str, Any]:  # noqa: D102
        if self.recorder is None:
            return {}
        flushes = {p: h.flush.remote() for p, h in self.hosts.items() if p not in self._dead}
        for party, ref in flushes.items():
            try:
                ray.get(ref, timeout=10)
            except (RayActorError, GetTimeoutError):
                self._dead.add(party)  # a dead host's unflushed batch is lost; the rest is kept
        totals = ray.get(self.recorder.close.remote(), timeout=60)
        return totals

    def shutdown(self) -> None:  # noqa: D102
        for h in self.hosts.values():
            try:
                ray.kill(h, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.hosts.clear()
        if self.recorder is not None:
            try:
                ray.kill(self.recorder, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
            self.recorder = None
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False


def _get_nested(refs: Any) -> Any:
    if isinstance(refs, ray.ObjectRef):
        return ray.get(refs)
    if isinstance(refs, (list, tuple)):
        flat = list(refs)
        if flat and all(isinstance(r, ray.ObjectRef) for r in flat):
            return type(refs)(ray.get(flat))
        return type(refs)(_get_nested(r) for r in flat)
    if isinstance(refs, dict):
        return {k: _get_nested(v) for k, v in refs.items()}
    if refs is None:
        return None
    raise ConfigError(f"cannot fetch {type(refs).__name__}")


__all__ = ["RayRecorderClient", "RayRuntime"]
