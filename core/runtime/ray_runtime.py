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
``party_timeout_s`` fails naming the party it is stuck on. Progress is a call
that completes or a step's beat (:mod:`core.progress`): hosts send
beats to the recorder, and a chain whose time is up asks it how long ago
the last one came.

A party whose spec has ``max_concurrency > 1`` gets a host actor of its own
in either layout, created as a *threaded* actor with that
``max_concurrency``: independent calls to it (several analysts' requests,
say) run at the same time. Its calls are never bundled into host-group
calls (``chain``, ``map``, ``scatter`` send each one separately), and each
carries its ticket (see :mod:`core.runtime.concurrency`). Ray runs a
sequential actor's calls from one caller in submission order, so every
other party still runs its calls in the driver's order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayError, RayTaskError

from ppknn.core.errors import ConfigError, PartyFailure, PpknnError
from ppknn.core.messages import PartyId
from ppknn.core.runtime.base import Call, CallRecord, Progress, RunContext, Runtime, Step
from ppknn.core.runtime.host import NullRecorder, PartyHost, PartySpec
from ppknn.core.transcript import RECORDER_NAME, TranscriptRecorder

_POLL_S = 0.1
RECORDER = RECORDER_NAME
"""The recorder's name: in a :class:`~core.errors.PartyFailure` when it dies, and as a key of
``placement`` (custom resources of the node it must run on; Ray's choice without one)."""
RECORDER_PROBE_S = 0.5
"""How often, at most, a wait on the parties also checks that the recorder is alive."""
BEAT_WAIT_S = 10.0
"""How long, at most, a call's deadline waits for the recorder to say when a step last beat."""
RECORDER_GRACE_S = 1.0
"""How long a recorder found dead gives the pending calls to fail too (a node lost with the
recorder and parties on it names a party, not the recorder)."""
CLOSE_FLUSH_S = 3.0
"""How long closing the transcript waits, in all, for the live hosts' last batches."""
CLOSE_RECORDER_S = 30.0
"""How long closing the transcript waits for the recorder to write its last part."""
LAYOUTS = ("actor-per-party", "hosted")
GROUP_CALL_STEPS = 1000
"""Most steps one actor call of a host group runs (a chain's consecutive hops on one host,
a map's or a scatter's calls on one host). The driver sees progress call by call, so a
host running 50,000 hops in one call would look stuck for minutes with nothing wrong;
in calls of at most this many steps a hung party is still caught within
``party_timeout_s`` of its call starting."""
ACTOR_MEMORY_MIB = 72
"""Memory one more party's Ray worker of its own costs, for the actor-per-party size check
(a ring owner's worker measured 66 MiB proportional set size, 63 MiB of it private, against
59 / 57 MiB for an empty Ray actor's worker; its 137 MiB resident size counts the shared
libraries every worker maps)."""


CONNECT_TIMEOUT_S = 3.0
"""How long attaching to a Ray cluster may wait for its head to answer."""
_HOW_TO_START = ("start one with `ray start --head` (and set RAY_ADDRESS or --address to the "
                 "address it prints), or give no address to run on a local Ray started for the "
                 "run")


def _cluster_record() -> str | None:
    """The address in the record of the last ``ray start`` on this machine, if any."""
    import os
    import tempfile
    from pathlib import Path

    roots = [Path(os.environ["RAY_TMPDIR"]) / "ray"] if os.environ.get("RAY_TMPDIR") else []
    for root in (*roots, Path("/tmp/ray"), Path(tempfile.gettempdir()) / "ray"):
        record = root / "ray_current_cluster"
        if record.is_file():
            text = record.read_text().strip()
            return text or None
    return None


def check_cluster_answers(address: str, *, timeout_s: float = CONNECT_TIMEOUT_S) -> str:
    """Refuse, within ``timeout_s``, an address where no Ray head answers.

    ``"auto"`` means ``RAY_ADDRESS`` or else the record of the last
    ``ray start`` on this machine. Returns the ``host:port`` probed.
    Raises :class:`~core.errors.ConfigError` in one line saying how to start Ray.
    """
    import os
    import socket

    given = address
    if address == "auto":
        resolved = os.environ.get("RAY_ADDRESS") or _cluster_record()
        if not resolved or resolved == "auto":
            raise ConfigError(f"runtime.address = 'auto': no running Ray cluster found (no "
                              f"RAY_ADDRESS, no record of a `ray start` here); {_HOW_TO_START}")
        address = resolved
    target = address.split("://", 1)[-1].split("/", 1)[0]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"runtime.address = {given!r}: expected 'auto', 'HOST:PORT' or "
                          "'ray://HOST:PORT'")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ConfigError(f"runtime.address = {given!r}: no Ray cluster answers at {target} "
                          f"({why}); {_HOW_TO_START}") from None
    return target


class _Beats:
    """Where a host actor's progress beats go: the recorder actor (picklable: holds its handle).

    Every host already talks to the recorder; the driver asks it
    (:meth:`~core.transcript.TranscriptRecorder.last_beat`) when a call's time is up.
    """

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def __call__(self) -> None:
        self.handle.beat.remote()


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


def init_keeping_sigterm(**kwargs: Any) -> None:
    """``ray.init(**kwargs)``, keeping the process's own SIGTERM handler.

    ``ray.init`` replaces a driver's SIGTERM handler with a bare ``sys.exit``; a program
    that handles SIGTERM itself (the ``ppknn`` command: a message, what the run recorded
    kept, exit 143) gets its handler back. A default or ignored handler is left to Ray.
    """
    import signal

    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(**kwargs)
    except SystemExit as exc:  # SIGTERM while Ray's handler was in place: hand it over
        if callable(before) and exc.code == signal.SIGTERM:
            before(signal.SIGTERM, None)
        raise
    finally:
        if callable(before):
            signal.signal(signal.SIGTERM, before)


HOST_PER_CPU_FROM = 5000
"""From this many grouped parties on, the hosted layout's default is a host per CPU."""


def default_hosts(cpus: float, parties: int = 0) -> int:
    """Host actors of the hosted layout when the scenario names none.

    Below :data:`HOST_PER_CPU_FROM` parties: ``cpus - 1``, at least 1. With the
    transcript recorder that is one actor per CPU, as many as the workers a local Ray
    starts ahead of its first task; a further host waits for a worker of its own. On the
    2-core machine one host against two started a 64-party run 0.5-0.7 s sooner and ran
    its protocol as fast or faster, and at 2,000 parties the two were level. From
    :data:`HOST_PER_CPU_FROM` parties on: ``cpus``, since the hosts build their parties
    and run their steps in parallel: at 20,000 parties two hosts started 1-2.7 s sooner
    than one (``docs/manual/performance.md``).
    """
    if parties >= HOST_PER_CPU_FROM:
        return max(1, int(cpus))
    return max(1, int(cpus) - 1)


def stop_ray() -> None:
    """``ray.shutdown()``, without its one-second wait on the autoscaler monitor.

    A Ray this process started locally also started an autoscaler monitor (a reporter
    of resource use; nothing in a local run depends on it). ``ray.shutdown`` stops it
    last, after the GCS: its SIGTERM handler then tries to tell the drivers through the
    GCS that is already gone, and Ray waits out a one-second grace period before it
    kills it (1.0 of the ~1.4 s a shutdown took here). The monitor is killed first, so
    its handler never runs; the rest of the shutdown is Ray's own. A driver attached to
    a cluster has no such process of its own: then this is ``ray.shutdown()``.
    """
    for process in _own_monitors():
        try:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=1.0)
        except Exception:  # noqa: BLE001 - Ray's shutdown stops it as before
            pass
    ray.shutdown()


def _own_monitors() -> list[Any]:
    """The autoscaler monitor processes of the Ray instance this process started (if any)."""
    node = getattr(getattr(getattr(ray, "_private", None), "worker", None), "_global_node", None)
    processes = getattr(node, "all_processes", None) or {}
    return [p for info in processes.get("monitor", ())
            if (p := getattr(info, "process", None)) is not None]


def await_ray_shutdown() -> None:
    """Wait for a Ray shutdown left running in the background (``shutdown(wait=False)``)."""
    thread = RayRuntime._shutting_down
    if thread is not None:
        thread.join()
        RayRuntime._shutting_down = None


class RayRuntime(Runtime):
    """Hosts parties in Ray actors (see module docstring).

    Parameters
    ----------
    address:
        Ray cluster address to attach to (``"auto"``, ``"HOST:PORT"``,
        ``"ray://..."``; refused within seconds when no head answers);
        ``None`` reuses this process's Ray or starts a fresh local instance,
        never attaching to a cluster record left by ``ray start``.
    num_cpus:
        CPUs for a local Ray started here (``None``: all).
    layout:
        ``"actor-per-party"``: one host actor per party, the honest model of
        a real deployment (every hop crosses a process boundary).
        ``"hosted"``: parties are grouped, in the order given to
        :meth:`start` (give ring order), into ``hosts`` host actors, so
        consecutive ring parties share a process and most hops of a
        :meth:`chain` are in-process calls. Every logical message is still
        sealed, opened and recorded exactly as in the other layout.
    hosts:
        Number of host actors for the hosted layout (``None``: :func:`default_hosts`,
        one fewer than the cluster's CPUs, at least one, so that with the transcript
        recorder there is one actor per CPU; one per CPU from
        :data:`HOST_PER_CPU_FROM` parties on).
    placement:
        Custom resources per party (``{"owner-00": {"org_a": 0.01}}``): the
        party's host is scheduled on a node that has them. Parties with
        different placements never share a host. Hosts without placement are
        spread over the nodes. The key ``"transcript-recorder"`` places the
        recorder (whose parts are written on its node's disk).
    actor_options:
        Extra ``.options(...)`` per party's host.
    """

    name = "ray"

    def __init__(self, *, address: str | None = None, num_cpus: int | None = None,
                 layout: str = "actor-per-party", hosts: int | None = None,
                 placement: Mapping[PartyId, Mapping[str, float]] | None = None,
                 actor_options: Mapping[PartyId, Mapping[str, Any]] | None = None) -> None:
        super().__init__()
        if layout not in LAYOUTS:
            raise ConfigError(f"layout must be one of {list(LAYOUTS)}, got {layout!r}")
        if hosts is not None and hosts < 1:
            raise ConfigError(f"hosts must be >= 1, got {hosts}")
        self.address = address
        self.num_cpus = num_cpus
        self.layout = layout
        self.n_hosts = hosts
        self.placement = {p: dict(r) for p, r in (placement or {}).items()}
        self.actor_options = dict(actor_options or {})
        self.host_members: list[list[PartyId]] = []
        self._host_index: dict[PartyId, int] = {}
        self._started_ray = False
        self.hosts: dict[PartyId, Any] = {}
        self.recorder: Any = None
        self._dead: set[PartyId] = set()
        self._consumed: set[Any] = set()
        self._probe: Any = None
        self._probed_at = 0.0
        self._recorder_lost = False

    # Runtimes in this process that use a Ray instance one of them started: Ray is shut
    # down only when the last of them shuts down, not under the others' feet.
    _users_of_started_ray = 0
    # A shutdown left to finish in the background (``shutdown(wait=False)``): joined before
    # Ray is used or started again, and by the interpreter at exit (not a daemon thread).
    _shutting_down: threading.Thread | None = None

    def _ensure_ray(self) -> None:
        """Use the Ray of this process, or start one: a local instance unless asked to attach.

        With no address, a fresh local instance is started (``address="local"``)
        even when a cluster record of an earlier ``ray start`` exists (its head
        may be long dead). With an address (``"auto"``, ``"host:port"``,
        ``"ray://host:port"``) the cluster must answer within
        :data:`CONNECT_TIMEOUT_S`, else :class:`~core.errors.ConfigError` says
        how to start one.
        """
        await_ray_shutdown()
        if ray.is_initialized():
            if RayRuntime._users_of_started_ray and not self._started_ray:
                RayRuntime._users_of_started_ray += 1
                self._started_ray = True
            return
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "logging_level": "WARNING",
            "log_to_driver": False,
            "configure_logging": True,
        }
        if self.address:
            check_cluster_answers(self.address)
            kwargs["address"] = self.address
        else:
            kwargs["address"] = "local"
            if self.num_cpus is not None:
                kwargs["num_cpus"] = self.num_cpus
        try:
            init_keeping_sigterm(**kwargs)
        except ConnectionError as exc:
            raise ConfigError(f"runtime.address = {self.address!r}: cannot attach to Ray "
                              f"({str(exc).splitlines()[0]}); {_HOW_TO_START}") from None
        self._started_ray = True
        RayRuntime._users_of_started_ray += 1

    def start(self, specs: Sequence[PartySpec], context: RunContext) -> None:  # noqa: D102
        for party, options in self.actor_options.items():
            if "max_concurrency" in options:
                raise ConfigError(f"actor_options of {party!r} set max_concurrency: set it on the "
                                  "party's PartySpec (the host then numbers its calls)")
        self._ensure_ray()
        if self.layout == "actor-per-party":
            self._check_actor_memory(len(specs))
        self.context = context
        self._note_concurrency(specs)
        recorder_cls = ray.remote(num_cpus=0, max_restarts=0)(TranscriptRecorder)
        if RECORDER in self.placement:
            recorder_cls = recorder_cls.options(resources=self.placement[RECORDER])
        self._probe, self._probed_at, self._recorder_lost = None, time.monotonic(), False
        self.recorder = recorder_cls.remote(
            str(context.transcript_dir) if context.transcript_dir else None,
            flush_every=context.flush_every, flush_bytes=context.flush_bytes,
        )
        client = RayRecorderClient(self.recorder) if context.record else NullRecorder()
        host_cls = ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(PartyHost)
        groups = self._groups(specs)
        key_refs: dict[PartyId, Any] = {}  # one batch per host, named by its first party
        for members in groups:
            first = members[0].party_id
            options = dict(self.actor_options.get(first, {}))
            options.pop("name", None)
            if first in self.placement:
                options.setdefault("resources", self.placement[first])
            else:
                options.setdefault("scheduling_strategy", "SPREAD")
            if members[0].max_concurrency > 1:  # a threaded actor of its own (see _groups)
                options["max_concurrency"] = members[0].max_concurrency
            names = [m.party_id for m in members]
            fault = context.fault if context.fault and context.fault.party in names else None
            host = host_cls.options(**options).remote(
                run_id=context.run_id, recorder=client,
                secure_channels=context.secure_channels,
                record_batch=context.record_batch,
                record_batch_bytes=context.record_batch_bytes, fault=fault,
                beats=_Beats(self.recorder),
            )
            index = len(self.host_members)
            self.host_members.append(names)
            for spec in members:
                self.hosts[spec.party_id] = host
                self._host_index[spec.party_id] = index
                self._parties.append(spec.party_id)
            key_refs[names[0]] = host.add_parties.remote(members)
        # every host is created and asked for its parties before the first wait
        batches = self._get_setup(key_refs, "setup")
        keys = {party: key for members, batch in zip(self.host_members, batches.values(),
                                                     strict=True)
                for party, key in zip(members, batch, strict=True)}
        unique = {i: self.hosts[m[0]] for i, m in enumerate(self.host_members)}
        unordered = sorted(self._concurrency)
        self._get_setup({self.host_members[i][0]: h.register_peers.remote(keys, unordered)
                         for i, h in unique.items()}, "key exchange")

    def _check_actor_memory(self, n_actors: int) -> None:
        """Refuse a layout that cannot fit: one Ray worker process per party.

        Each worker holds about :data:`ACTOR_MEMORY_MIB` of its own; starting
        more than the cluster's memory can hold would get processes killed
        by the operating system half-way through start-up.
        """
        memory = ray.cluster_resources().get("memory")
        if not memory:
            return
        need = n_actors * ACTOR_MEMORY_MIB * 2**20
        if need > memory:
            raise ConfigError(
                f"layout 'actor-per-party' starts one Ray worker per party (about "
                f"{ACTOR_MEMORY_MIB} MiB each): {n_actors:,} parties need about "
                f"{need / 2**30:.1f} GiB and the cluster offers {memory / 2**30:.1f} GiB; "
                "use layout 'hosted' (parties grouped into a few host actors) or a bigger "
                "cluster")

    def _groups(self, specs: Sequence[PartySpec]) -> list[list[PartySpec]]:
        """Contiguous groups of parties, one per host actor.

        A party with ``max_concurrency > 1`` is always alone in its group.
        """
        if self.layout == "actor-per-party":
            return [[s] for s in specs]
        n_grouped = sum(1 for s in specs if s.max_concurrency == 1)
        n_hosts = self.n_hosts or default_hosts(ray.cluster_resources().get("CPU", 1), n_grouped)
        size = max(1, -(-n_grouped // n_hosts))  # ceil
        groups: list[list[PartySpec]] = []
        alone = False  # the last group holds a concurrent party
        for spec in specs:
            if spec.max_concurrency > 1:
                groups.append([spec])
                alone = True
                continue
            key = tuple(sorted(self.placement.get(spec.party_id, {}).items()))
            if (groups and not alone and len(groups[-1]) < size and
                    tuple(sorted(self.placement.get(groups[-1][0].party_id, {}).items())) == key):
                groups[-1].append(spec)
            else:
                groups.append([spec])
            alone = False
        return groups

    def _get_setup(self, refs: Mapping[PartyId, Any], phase: str) -> dict[PartyId, Any]:
        """Wait for all set-up calls at once (within ``startup_timeout_s`` in all).

        A failed call is reported as soon as it is seen: a dead actor as
        :class:`~core.errors.PartyFailure` naming the party, an error raised
        by the call as is; calls still unanswered at the deadline fail naming
        the first of them.
        """
        timeout = self.context.startup_timeout_s if self.context else 180.0
        deadline = time.monotonic() + timeout
        party_of = {ref: party for party, ref in refs.items()}
        out: dict[PartyId, Any] = {}
        pending = list(refs.values())
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                party = party_of[pending[0]]
                raise PartyFailure(party, phase, 0, f"no answer within {timeout} s")
            ready, pending = ray.wait(pending, num_returns=len(pending),
                                      timeout=min(left, 1.0), fetch_local=False)
            for ref in ready:
                try:
                    out[party_of[ref]] = ray.get(ref, timeout=max(1.0, left))
                except RayActorError as exc:
                    raise PartyFailure(party_of[ref], phase, 0, f"actor died: {exc}") from exc
                except GetTimeoutError as exc:
                    raise PartyFailure(party_of[ref], phase, 0,
                                       f"no answer within {timeout} s") from exc
        return {party: out[party] for party in refs}

    def call(self, party: PartyId, method: str, *args: Any, protocol: str = "",
             round: int = 0, num_returns: int = 1) -> Any:
        """See :meth:`core.runtime.base.Runtime.call`."""
        self._check_party(party)
        host = self.hosts[party]
        self._consumed.update(a for a in args if isinstance(a, ray.ObjectRef))
        ticket = self._ticket(party)
        kwargs = {} if ticket is None else {"ticket": ticket}
        if num_returns == 1:
            ref = host.invoke.remote(party, method, *args, **kwargs)
            self._pending.append(CallRecord([ref], party, method, protocol, round))
            return ref
        refs = host.invoke.options(num_returns=num_returns).remote(party, method, *args, **kwargs)
        self._pending.append(CallRecord(list(refs), party, method, protocol, round))
        return list(refs)

    def chain(self, steps: Sequence[Step], incoming: Any = None) -> Any:
        """Consecutive steps on the same host run as one actor call (see the class)."""
        for s in steps:
            self._check_party(s.party)
        out = incoming
        i = 0
        while i < len(steps):
            s0 = steps[i]
            if s0.party in self._concurrency:  # a call of its own (with its ticket)
                out = self.call(s0.party, s0.method, out, *s0.args, protocol=s0.protocol,
                                round=s0.round)
                i += 1
                continue
            host_i = self._host_index[s0.party]
            j = i
            while (j < len(steps) and j - i < GROUP_CALL_STEPS
                   and self._host_index[steps[j].party] == host_i):
                j += 1
            group = steps[i:j]
            if isinstance(out, ray.ObjectRef):
                self._consumed.add(out)
            for s in group:
                self._consumed.update(a for a in s.args if isinstance(a, ray.ObjectRef))
            out = self.hosts[group[0].party].run_chain.remote(
                [(s.party, s.method, s.args) for s in group], out)
            self._pending.append(CallRecord([out], group[0].party, _describe(group),
                                            group[0].protocol, group[0].round))
            i = j
        return out

    def map(self, calls: Sequence[Call]) -> list[Any]:
        """Calls on the same host go out as one actor call (see the class)."""
        refs: list[Any] = [None] * len(calls)
        for members in self._by_host(calls).values():
            if calls[members[0]].party in self._concurrency:  # each call on its own, concurrently
                for k in members:
                    c = calls[k]
                    refs[k] = self.call(c.party, c.method, *c.args, protocol=c.protocol,
                                        round=c.round)
            else:
                for part in _chunks(members):
                    self._group_call("invoke_many", calls, part, refs)
        return refs

    def _by_host(self, calls: Sequence[Call]) -> dict[int, list[int]]:
        """Positions of ``calls`` grouped by the host actor of their party."""
        by_host: dict[int, list[int]] = {}
        for k, c in enumerate(calls):
            self._check_party(c.party)
            by_host.setdefault(self._host_index[c.party], []).append(k)
        return by_host

    def _group_call(self, method: str, calls: Sequence[Call], members: list[int],
                    refs: list[Any], *leading: Any) -> None:
        """One actor call running ``calls[members]`` on their shared host.

        ``method`` is the host's ``invoke_many`` or ``invoke_scattered``
        (``leading``: the scattered outputs); shared arguments are shipped once.
        Fills ``refs`` at ``members`` and records the call for :meth:`fetch`.
        """
        group = [calls[k] for k in members]
        positions, values = _pack([c.args for c in group])
        self._consumed.update(a for a in values if isinstance(a, ray.ObjectRef))
        spec = [(c.party, c.method, idx) for c, idx in zip(group, positions)]
        host_method = getattr(self.hosts[group[0].party], method)
        out = host_method.options(num_returns=len(group)).remote(spec, *leading, *values)
        outs = [out] if len(group) == 1 else list(out)
        for k, r in zip(members, outs):
            refs[k] = r
        self._pending.append(CallRecord(outs, group[0].party, _describe(group),
                                        group[0].protocol, group[0].round))

    def scatter(self, source: Step, incoming: Any, targets: Sequence[Call | Step]
                ) -> list[Any]:
        """One actor call on the sender's host, then one per other host holding targets.

        The sender's call also runs the targets its host holds (see the class).
        """
        if not targets:
            raise ConfigError(f"scatter from {source.party!r} needs at least one target")
        self._check_party(source.party)
        if self._concurrency and (source.party in self._concurrency
                                  or any(t.party in self._concurrency for t in targets)):
            return Runtime.scatter(self, source, incoming, targets)  # calls of their own
        by_host = self._by_host(targets)
        local = by_host.pop(self._host_index[source.party], [])
        # the sender's call runs at most GROUP_CALL_STEPS local targets; the others are
        # delivered like remote ones, in calls of at most that many
        local, local_rest = local[:GROUP_CALL_STEPS], local[GROUP_CALL_STEPS:]
        remote = [part for group in ([local_rest] if local_rest else []) + list(by_host.values())
                  for part in _chunks(group)]
        positions, local_values = _pack([targets[k].args for k in local])
        local_spec = [(k, targets[k].party, targets[k].method, idx)
                      for k, idx in zip(local, positions)]
        if isinstance(incoming, ray.ObjectRef):
            self._consumed.add(incoming)
        self._consumed.update(a for a in (*source.args, *local_values)
                              if isinstance(a, ray.ObjectRef))
        n_out = len(local) + len(remote)
        host = self.hosts[source.party]
        out = host.run_scatter.options(num_returns=n_out).remote(
            (source.party, source.method, source.args), incoming, len(targets),
            local_spec, remote, *local_values)
        outs = [out] if n_out == 1 else list(out)
        # the sender seals one message per target in one step: a broadcast to 100,000
        # parties gets the time of 100 calls of GROUP_CALL_STEPS steps
        self._pending.append(CallRecord(outs, source.party, source.method, source.protocol,
                                        source.round,
                                        work=-(-len(targets) // GROUP_CALL_STEPS)))
        refs: list[Any] = [None] * len(targets)
        for k, r in zip(local, outs):
            refs[k] = r
        for group, grouped in zip(remote, outs[len(local):]):
            self._consumed.add(grouped)
            self._group_call("invoke_scattered", targets, group, refs, grouped)
        return refs

    def fetch(self, refs: Any, *, progress: Progress | None = None) -> Any:  # noqa: D102
        pending = list(self._pending)
        self._pending.clear()
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
            if remaining and not self._recorder_alive():
                self._consumed.clear()
                # a party that died with it (its node lost) is named: its calls fail too
                ray.wait(firsts, num_returns=len(firsts), timeout=RECORDER_GRACE_S)
                self._raise_first_failure(pending)
                here = remaining[0]
                raise PartyFailure(RECORDER, here.protocol, here.round,
                                   f"the transcript recorder died (actor died) while "
                                   f"{here.party!r} ran {here.method!r}; the transcript it "
                                   "had received is kept")
            allowed = timeout * remaining[0].work if remaining else timeout
            if not ready and time.monotonic() - last_progress > allowed:
                beat_age = self._beat_age(allowed)
                if beat_age is not None and beat_age < allowed:  # a step is still working
                    last_progress = max(last_progress, time.monotonic() - beat_age)
                    continue
                self._consumed.clear()
                stuck = remaining[0]
                self._raise_first_failure(pending)
                members = self.host_members[self._host_index[stuck.party]]
                self._abandon(stuck.party)  # it cannot flush while stuck: do not wait for it
                cohosted = _cohosted(members)
                raise PartyFailure(stuck.party, stuck.protocol, stuck.round,
                                   f"no progress for {timeout * stuck.work:g} s in "
                                   f"{stuck.method!r}"
                                   f"{cohosted}")
        # Errors travel down a chain, so the chains' ends (results nobody consumed) tell
        # whether anything failed; a failure is attributed to the first failed call.
        leaves = [r for c in pending for r in c.refs if r not in self._consumed]
        self._consumed.clear()
        try:
            ray.get(leaves, timeout=timeout)
            return _get_nested(refs)
        except (RayError, GetTimeoutError) as exc:
            self._raise_first_failure(pending)
            last = pending[-1] if pending else CallRecord((), "?", "?", "", -1)
            raise PartyFailure(last.party, last.protocol, last.round,
                               f"{type(exc).__name__}: {exc}") from exc

    def _beat_age(self, timeout: float) -> float | None:
        """Seconds since a host's step last beat (None: no beat, or no answer in time)."""
        if self.recorder is None:
            return None
        try:
            return ray.get(self.recorder.last_beat.remote(), timeout=min(timeout, BEAT_WAIT_S))
        except (RayError, GetTimeoutError):
            return None

    def _recorder_alive(self) -> bool:
        """Whether the recorder actor still answers (checked every :data:`RECORDER_PROBE_S`).

        One probe is in flight at a time; it queues behind the batches sent before it, so
        an answer means the recorder is alive, and an error that it is gone.
        """
        if self._recorder_lost:
            return False
        if self.recorder is None or (self.context is not None and not self.context.record):
            return True
        if self._probe is None:
            if time.monotonic() - self._probed_at >= RECORDER_PROBE_S:
                self._probe = self.recorder.ping.remote()
                self._probed_at = time.monotonic()
            return True
        ready, _ = ray.wait([self._probe], timeout=0)
        if not ready:
            return True
        probe, self._probe = self._probe, None
        try:
            ray.get(probe, timeout=0)
        except RayActorError:
            self._recorder_lost = True
            return False
        except (RayError, GetTimeoutError):  # a recorder error, not its death: seen at close
            pass
        return True

    def _abandon(self, party: PartyId) -> None:
        """Give up on the host of ``party`` (stuck or unreachable): kill it, mark it dead."""
        members = self.host_members[self._host_index[party]]
        self._dead.update(members)
        try:
            ray.kill(self.hosts[party], no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def _raise_first_failure(self, calls: Sequence[CallRecord]) -> None:
        for c in calls:
            ready, _ = ray.wait(list(c.refs), num_returns=len(c.refs), timeout=0)
            if len(ready) < len(c.refs):
                continue
            try:
                ray.get(list(c.refs))
            except RayTaskError as exc:
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                if isinstance(cause, PartyFailure):
                    raise cause.where(c.protocol, c.round) from exc
                if isinstance(cause, PpknnError):  # the framework's own (e.g. IntegrityError):
                    raise cause.with_traceback(None) from exc  # its message, not Ray's
                raise PartyFailure(c.party, c.protocol, c.round,
                                   f"{type(cause).__name__} during {c.method!r}: {cause}",
                                   cause=str(exc)) from exc
            except RayError as exc:  # the actor died, its node was lost, its result is gone
                members = self.host_members[self._host_index[c.party]]
                self._dead.update(members)
                cohosted = _cohosted(members)
                what = ("actor died" if isinstance(exc, RayActorError)
                        else f"{type(exc).__name__}")
                raise PartyFailure(c.party, c.protocol, c.round,
                                   f"{what} during {c.method!r}{cohosted}",
                                   cause=str(exc)) from exc

    def state(self, party: PartyId, attribute: str) -> Any:  # noqa: D102
        self._check_party(party)
        try:
            return ray.get(self.hosts[party].state.remote(party, attribute),
                           timeout=self.context.party_timeout_s if self.context else 60)
        except RayActorError as exc:
            raise PartyFailure(party, "state", 0, "actor died") from exc

    def kill(self, party: PartyId) -> None:
        """Kill the host actor of ``party`` (and so every party it hosts)."""
        self._check_party(party)
        ray.kill(self.hosts[party], no_restart=True)
        self._dead.update(self.host_members[self._host_index[party]])

    def party_nodes(self) -> dict[PartyId, str]:
        """The Ray node id each party runs on."""
        refs = {i: self.hosts[m[0]].node_id.remote() for i, m in enumerate(self.host_members)}
        nodes = {i: ray.get(r, timeout=60) for i, r in refs.items()}
        return {p: nodes[i] for i, m in enumerate(self.host_members) for p in m}

    def host_peak_rss_mb(self) -> list[float]:
        """Peak resident memory of each live host actor, in MiB."""
        refs = [self.hosts[m[0]].peak_rss_mb.remote() for m in self.host_members
                if m[0] not in self._dead]
        return list(ray.get(refs, timeout=60))

    def host_pids(self) -> list[int]:
        """Process ids of the live host actors (for memory reports)."""
        refs = [self.hosts[m[0]].ping.remote() for m in self.host_members
                if m[0] not in self._dead]
        return list(ray.get(refs, timeout=60))

    def close_transcript(self) -> dict[str, Any]:
        """Flush the live hosts and close the recorder, in bounded time.

        The live hosts get :data:`CLOSE_FLUSH_S` seconds *in all* to hand over
        their last batches (a host that does not answer by then is given up:
        its unflushed batch is lost, the rest is kept); the recorder then gets
        :data:`CLOSE_RECORDER_S` to write its last part and ``totals.json``.
        """
        if self.recorder is None:
            return {}
        if self._recorder_lost:  # nobody to flush to: what it had is on disk (journaled)
            raise PartyFailure(RECORDER, "transcript", 0, "the transcript recorder died; "
                               "what it had received is on disk, its totals are not")
        flushes = {}
        for m in self.host_members:
            if m[0] in self._dead:
                continue
            try:
                flushes[m[0]] = self.hosts[m[0]].flush.remote()
            except Exception:  # noqa: BLE001 - the actor (or Ray) is gone: nothing to flush
                self._dead.update(m)
        if flushes:
            refs = list(flushes.values())
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=CLOSE_FLUSH_S)
            done = set(ready)
            for party, ref in flushes.items():
                if ref not in done:
                    self._abandon(party)
                    continue
                try:
                    ray.get(ref, timeout=0)
                except (RayError, GetTimeoutError):
                    self._dead.add(party)  # a dead host's unflushed batch is lost
        try:
            return ray.get(self.recorder.close.remote(), timeout=CLOSE_RECORDER_S)
        except (RayError, GetTimeoutError) as exc:
            self._recorder_lost = True
            try:  # a recorder that is only slow must not write on while its parts are read
                ray.kill(self.recorder, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
            raise PartyFailure(RECORDER, "transcript", 0,
                               f"the recorder did not close: {exc}") from exc

    def _undelivered(self) -> list[str]:
        live = [self.hosts[m[0]] for m in self.host_members if m[0] not in self._dead]
        timeout = self.context.party_timeout_s if self.context else 60.0
        try:
            found = ray.get([h.undelivered.remote() for h in live], timeout=timeout)
        except (RayError, GetTimeoutError):
            return []  # a host gone at the very end: nothing more to check there
        return [p for problems in found for p in problems]

    def transcript_table(self) -> Any:  # noqa: D102
        if self.recorder is None:
            raise ConfigError("no transcript: the runtime was not started (or was shut down)")
        try:
            return ray.get(self.recorder.table.remote(), timeout=120)
        except (RayActorError, GetTimeoutError) as exc:
            raise PartyFailure("transcript-recorder", "transcript", 0,
                               f"the recorder did not answer: {exc}") from exc

    def shutdown(self, *, wait: bool = True) -> None:
        """Kill the hosts and the recorder; stop Ray if this runtime started it.

        With ``wait=False`` the Ray instance this runtime started is stopped on a
        background thread (``ray.shutdown`` mostly waits for Ray's processes to
        exit, about a second), so a caller that has no more use for Ray (``ppknn
        run`` measuring and writing its results) does not wait for it; the next
        start of Ray in this process, and the interpreter's exit, wait for it
        (:func:`await_ray_shutdown`).
        """
        for h in {id(h): h for h in self.hosts.values()}.values():
            try:
                ray.kill(h, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.hosts.clear()
        self.host_members.clear()
        self._host_index.clear()
        # an object reference still held after ray.shutdown ends the process from its
        # destructor ("the core worker has already been shutdown"): drop them first
        self._probe = None
        self._pending.clear()
        self._consumed.clear()
        if self.recorder is not None:
            try:
                ray.kill(self.recorder, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
            self.recorder = None
        if self._started_ray:
            self._started_ray = False
            RayRuntime._users_of_started_ray -= 1
            if RayRuntime._users_of_started_ray == 0:
                if wait:
                    stop_ray()
                else:
                    thread = threading.Thread(target=stop_ray, name="ppknn-ray-shutdown")
                    RayRuntime._shutting_down = thread
                    thread.start()


def _pack(arg_lists: Sequence[Sequence[Any]]) -> tuple[list[tuple[int, ...]], list[Any]]:
    """Each distinct argument object once, and each call's argument positions.

    A host call carrying thousands of parties' calls ships a value they
    share (the ring set-up, the query batch) once instead of once per party
    (Ray serialises every argument separately).
    """
    values: list[Any] = []
    index: dict[int, int] = {}
    positions = []
    for args in arg_lists:
        idx = []
        for a in args:
            j = index.get(id(a))
            if j is None:
                j = index[id(a)] = len(values)
                values.append(a)
            idx.append(j)
        positions.append(tuple(idx))
    return positions, values


def _chunks(items: list[int]) -> list[list[int]]:
    """``items`` in consecutive pieces of at most :data:`GROUP_CALL_STEPS`."""
    return [items[k:k + GROUP_CALL_STEPS] for k in range(0, len(items), GROUP_CALL_STEPS)]


def _cohosted(members: Sequence[PartyId]) -> str:
    """`` (its host also held [...])`` for an error message, at most 8 names shown."""
    if len(members) <= 1:
        return ""
    shown = list(members) if len(members) <= 8 else [*members[:8], "..."]
    more = f", {len(members):,} parties in all" if len(members) > 8 else ""
    return f" (its host also held {shown}{more})"


def _describe(group: Sequence[Any]) -> str:
    methods = sorted({g.method for g in group})
    return f"{'/'.join(methods)} x{len(group)}" if len(group) > 1 else group[0].method


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


__all__ = ["CONNECT_TIMEOUT_S", "HOST_PER_CPU_FROM", "RECORDER", "RayRecorderClient", "RayRuntime",
           "check_cluster_answers", "default_hosts", "stop_ray"]
