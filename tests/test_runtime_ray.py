"""Ray runtime: identical to in-process, payloads chained, failures named promptly."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ppknn.core.errors import IntegrityError, PartyFailure
from ppknn.core.runtime import FaultPlan, PartySpec, RunContext, make_runtime
from ppknn.core.transcript import Transcript
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario

pytestmark = pytest.mark.ray


def _scenario(kind, layout="actor-per-party", hosts=None, **protocol):
    runtime = {"kind": kind, "channels": True, "party_timeout_s": 30}
    if kind == "ray":
        runtime |= {"layout": layout, "hosts": hosts}
    return parse_scenario({
        "run": {"name": "equiv", "seed": 11},
        "data": {"dataset": "glass"},
        "parties": {"n": 5},
        "protocol": {"k": 4, "rounds": 2, **protocol},
        "runtime": runtime,
    })


@pytest.mark.parametrize("protocol, layout, hosts", [
    ({"secure_sum": "ring", "weighting": "uniform"}, "actor-per-party", None),
    ({"secure_sum": "shared", "weighting": "distance"}, "actor-per-party", None),
    ({"secure_sum": "ring", "weighting": "distance"}, "hosted", 2),
    ({"secure_sum": "shared", "weighting": "uniform"}, "hosted", 3),
])
def test_ray_and_inprocess_give_identical_transcripts(ray_local, tmp_path, protocol, layout,
                                                       hosts):
    local = execute(_scenario("inprocess", **protocol), transcript_dir=tmp_path / "local")
    on_ray = execute(_scenario("ray", layout, hosts, **protocol), transcript_dir=tmp_path / "ray")
    np.testing.assert_array_equal(local.predictions, on_ray.predictions)
    np.testing.assert_array_equal(local.outcome.result.detail.final_vector,
                                  on_ray.outcome.result.detail.final_vector)
    rows_local = Transcript(tmp_path / "local").canonical_rows()
    rows_ray = Transcript(tmp_path / "ray").canonical_rows()
    assert len(rows_local) == len(rows_ray) > 0
    assert rows_local == rows_ray
    assert local.outcome.leakage == on_ray.outcome.leakage
    assert local.communication == on_ray.communication


class Relay:
    """A party that relays a vector, adding one; can be told to sleep."""

    def __init__(self, *, me, to, sleep=0.0):
        self.me, self.to, self.sleep = me, to, sleep

    def step(self, msg, round):
        from ppknn.core.messages import Message

        time.sleep(self.sleep)
        v = np.zeros(3) if msg is None else msg.payload["v"] + 1
        return Message("r", "relay", round, -1, self.me, self.to, "v", {"v": v})


def _relay_runtime(kind, fault=None, sleep=None, timeout=30.0):
    names = ["p0", "p1", "p2"]
    specs = [PartySpec(n, Relay, {"me": n, "to": names[(i + 1) % 3],
                                  "sleep": (sleep or {}).get(n, 0.0)})
             for i, n in enumerate(names)]
    rt = make_runtime(kind)
    rt.start(specs, RunContext(run_id="r", secure_channels=True, fault=fault,
                               party_timeout_s=timeout))
    return rt, names


def _chain(rt, names, rounds=3):
    msg = None
    for r in range(1, rounds + 1):
        for n in names:
            msg = rt.call(n, "step", msg, r, protocol="relay", round=r)
    return msg


def test_chained_relay_on_ray(ray_local):
    rt, names = _relay_runtime("ray")
    try:
        out = rt.fetch(_chain(rt, names))
        assert out.header.sender == "p2"  # an envelope: channels on
        rt.call("p0", "step", out, 4)
        rt.fetch(None)
    finally:
        rt.shutdown()


def test_crashed_party_fails_run_promptly(ray_local, tmp_path):
    sc = _scenario("ray").with_overrides(parties={"n": 4})
    from ppknn.simulations import runner

    prepared = runner.prepare(sc)
    victim = prepared.plan.public["ring"][2]
    rt = make_runtime("ray")
    original_start = rt.start

    def start_with_fault(specs, context):
        from dataclasses import replace

        original_start(specs, replace(context, fault=FaultPlan(victim, "topk_step", 2)))

    rt.start = start_with_fault
    started: list[float] = []  # the failure's latency counts from the protocols' start
    with pytest.raises(PartyFailure) as err:
        execute(sc, transcript_dir=tmp_path / "t", runtime=rt,
                progress=lambda *_: started.append(time.monotonic()))
    elapsed = time.monotonic() - started[0]
    rt.shutdown()
    assert err.value.party == victim
    assert err.value.protocol == "pp-topk" and err.value.round == 2
    assert elapsed < 30 + 5  # party_timeout_s + closing
    # what the recorder had is on disk: the first round's messages at least
    table = Transcript(tmp_path / "t").table()
    assert table.num_rows >= 4
    assert (tmp_path / "t" / "totals.json").is_file()


def test_killed_actor_mid_run_names_the_party(ray_local):
    rt, names = _relay_runtime("ray", sleep={"p1": 0.3})
    try:
        ref = _chain(rt, names, rounds=20)
        killer = threading.Timer(1.0, rt.kill, args=("p1",))
        killer.start()
        t0 = time.monotonic()
        with pytest.raises(PartyFailure) as err:
            rt.fetch(ref)
        killer.join()
        assert err.value.party == "p1"
        assert time.monotonic() - t0 < 30
    finally:
        rt.shutdown()


def test_hung_party_times_out_with_its_name(ray_local):
    rt, names = _relay_runtime("ray", sleep={"p2": 30.0}, timeout=2.0)
    try:
        t0 = time.monotonic()
        with pytest.raises(PartyFailure, match="no progress") as err:
            rt.fetch(_chain(rt, names, rounds=1))
        assert err.value.party == "p2"
        assert time.monotonic() - t0 < 10
    finally:
        rt.shutdown()


def test_step_exception_is_reraised_on_ray(ray_local):
    import dataclasses

    rt, names = _relay_runtime("ray")
    try:
        env = rt.fetch(rt.call("p0", "step", None, 1))
        forged = dataclasses.replace(env, ciphertext=b"\x00" * len(env.ciphertext))
        rt.call("p1", "step", forged, 1)
        with pytest.raises(IntegrityError):
            rt.fetch(None)
    finally:
        rt.shutdown()


def test_inprocess_fault_plan_and_kill():
    rt, names = _relay_runtime("inprocess", fault=FaultPlan("p1", "step", 1))
    with pytest.raises(PartyFailure) as err:
        rt.fetch(_chain(rt, names))
    assert err.value.party == "p1"


def test_hosted_layout_chain_runs_in_hosts_and_fails_with_cohosted_names(ray_local):
    from ppknn.core.runtime import Step
    from ppknn.core.runtime.ray_runtime import RayRuntime

    names = [f"p{i}" for i in range(6)]
    specs = [PartySpec(n, Relay, {"me": n, "to": names[(i + 1) % 6], "sleep": 0.02})
             for i, n in enumerate(names)]
    rt = RayRuntime(layout="hosted", hosts=2)
    rt.start(specs, RunContext(run_id="r", secure_channels=True, party_timeout_s=30))
    try:
        assert rt.host_members == [names[:3], names[3:]]
        out = rt.fetch(rt.chain([Step(n, "step", (1,), "relay", 1) for n in names]))
        assert out.header.sender == "p5"
        ref = rt.chain([Step(n, "step", (r,), "relay", r) for r in range(2, 60) for n in names],
                       out)  # p5's message to p0 is delivered: nothing is lost
        killer = threading.Timer(1.0, rt.kill, args=("p4",))
        killer.start()
        with pytest.raises(PartyFailure) as err:
            rt.fetch(ref)
        killer.join()
        assert err.value.party in names[3:]
        assert "also held" in err.value.reason
    finally:
        rt.shutdown()


class Caster:
    """Sends one message per other party; receivers return what they got plus their name."""

    def __init__(self, *, me, names, wrong_count=False):
        self.me, self.names, self.wrong_count = me, names, wrong_count

    def cast(self, incoming, scale):
        from ppknn.core.messages import Message

        base = 0.0 if incoming is None else float(incoming)
        others = [n for n in self.names if n != self.me]
        if self.wrong_count:
            others = others[:-1]
        return [Message("r", "cast", 1, -1, self.me, o, "v", {"v": np.array([base + scale * i])})
                for i, o in enumerate(others)]

    def take(self, msg, tag):
        return (self.me, tag, float(msg.payload["v"][0]), msg.sender)


def _scatter_runtime(kind, wrong_count=False, **options):
    names = [f"p{i}" for i in range(7)]
    specs = [PartySpec(n, Caster, {"me": n, "names": names, "wrong_count": wrong_count})
             for n in names]
    rt = make_runtime(kind, **options)
    rt.start(specs, RunContext(run_id="r", secure_channels=True, party_timeout_s=30))
    return rt, names


@pytest.mark.parametrize("kind, options", [
    ("inprocess", {}),
    ("ray", {"layout": "actor-per-party"}),
    ("ray", {"layout": "hosted", "hosts": 1}),
    ("ray", {"layout": "hosted", "hosts": 3}),
])
@pytest.mark.parametrize("source", ["p0", "p4"])
def test_scatter_delivers_each_output_to_its_target_in_order(ray_local, tmp_path, kind, options,
                                                             source):
    from ppknn.core.runtime import Call, Step

    rt, names = _scatter_runtime(kind, **options)
    targets = [n for n in names if n != source]
    refs = rt.scatter(Step(source, "cast", (10.0,), "cast", 1), 5.0,
                      [Call(t, "take", (f"tag-{t}",), "cast", 1) for t in targets])
    try:
        got = rt.fetch(refs)
    finally:
        rt.shutdown()
    # the sealed messages were opened by their own receivers: sender is the source
    assert got == [(t, f"tag-{t}", 5.0 + 10.0 * i, source) for i, t in enumerate(targets)]


@pytest.mark.parametrize("kind, options", [
    ("inprocess", {}),
    ("ray", {"layout": "hosted", "hosts": 2}),
    ("ray", {"layout": "actor-per-party"}),
])
def test_scatter_with_wrong_output_count_is_a_protocol_error(ray_local, kind, options):
    from ppknn.core.errors import ProtocolError
    from ppknn.core.runtime import Call, Step

    rt, names = _scatter_runtime(kind, wrong_count=True, **options)
    try:
        refs = rt.scatter(Step("p1", "cast", (1.0,)), None,
                          [Call(t, "take", ("x",)) for t in names if t != "p1"])
        with pytest.raises(ProtocolError, match=r"p1\.cast returned 5 values, expected 6"):
            rt.fetch(refs)
    finally:
        rt.shutdown()


def test_scatter_needs_targets():
    from ppknn.core.errors import ConfigError
    from ppknn.core.runtime import Step

    rt, _ = _scatter_runtime("inprocess")
    with pytest.raises(ConfigError, match="at least one target"):
        rt.scatter(Step("p0", "cast", (1.0,)), None, [])


@pytest.mark.parametrize("layout", ["actor-per-party", "hosted"])
def test_in_memory_transcript_on_ray_equals_in_process(ray_local, layout):
    """No transcript directory: the table comes back from the recorder actor."""
    from ppknn.core.runtime import Step

    tables = {}
    for kind, options in (("inprocess", {}), ("ray", {"layout": layout, "hosts": 2})):
        names = ["p0", "p1", "p2"]
        specs = [PartySpec(n, Relay, {"me": n, "to": names[(i + 1) % 3]})
                 for i, n in enumerate(names)]
        rt = make_runtime(kind, **options)
        rt.start(specs, RunContext(run_id="r", secure_channels=True, party_timeout_s=30))
        try:
            rt.fetch(rt.chain([Step(n, "step", (r,), "relay", r)
                               for r in (1, 2) for n in names]))
            rt.close_transcript()
            tables[kind] = Transcript(rt.transcript_table()).canonical_rows()
        finally:
            rt.shutdown()
    assert len(tables["ray"]) == 6
    assert tables["ray"] == tables["inprocess"]
    from ppknn.core.errors import ConfigError

    with pytest.raises(ConfigError, match="not started"):
        make_runtime("ray").transcript_table()


def test_pack_ships_each_shared_argument_once():
    from ppknn.core.runtime.ray_runtime import _pack

    setup, queries = ("ring",), np.zeros((2, 2))
    positions, values = _pack([(setup,), (setup,), (queries, None), (queries, None), (), (7,)])
    assert positions == [(0,), (0,), (1, 2), (1, 2), (), (3,)]
    assert values[0] is setup and values[1] is queries and values[2] is None
    assert values[3] == 7
    equal_but_distinct = [np.zeros(2), np.zeros(2)]  # identity, not equality, decides
    positions, values = _pack([(equal_but_distinct[0],), (equal_but_distinct[1],)])
    assert positions == [(0,), (1,)] and len(values) == 2


def test_actor_per_party_refuses_more_parties_than_memory_holds(ray_local):
    import ray

    from ppknn.core.errors import ConfigError
    from ppknn.core.runtime.ray_runtime import ACTOR_MEMORY_MIB, RayRuntime

    memory = ray.cluster_resources()["memory"]
    n = int(memory / (ACTOR_MEMORY_MIB * 2**20)) + 5
    specs = [PartySpec(f"p{i}", Relay, {"me": f"p{i}", "to": "p0"}) for i in range(n)]
    rt = RayRuntime(layout="actor-per-party")
    with pytest.raises(ConfigError, match=rf"{n:,} parties need about .* GiB.*use layout "
                                          "'hosted'"):
        rt.start(specs, RunContext(run_id="r"))
    assert rt.hosts == {}  # refused before any actor was created
    rt.shutdown()


# --------------------------------------------------------------------------- concurrent parties
class Server:
    """Answers each request after sleeping as long as it asks; counts overlapping calls."""

    def __init__(self, *, me):
        self.me = me
        self.in_flight = self.peak = 0
        self.lock = threading.Lock()

    def serve(self, msg):
        from ppknn.core.messages import Message

        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(float(msg.payload["sleep"]))
            return Message("r", "serve", msg.round, -1, self.me, msg.sender, "reply",
                           {"v": msg.payload["v"] * 2})
        finally:
            with self.lock:
                self.in_flight -= 1

    def broadcast(self, incoming, names):
        from ppknn.core.messages import Message

        return [Message("r", "serve", 9, -1, self.me, n, "news", {"v": np.array([float(i)])})
                for i, n in enumerate(names)]


class Client:
    def __init__(self, *, me, server):
        self.me, self.server = me, server

    def ask(self, v, sleep, round):
        from ppknn.core.messages import Message

        return Message("r", "serve", round, -1, self.me, self.server, "ask",
                       {"v": np.array([float(v)]), "sleep": np.array(sleep)})

    def start(self, incoming, v, sleep, round):
        """``ask`` as the first step of a chain (which passes ``incoming``, here None)."""
        return self.ask(v, sleep, round)

    def take(self, msg):
        return (self.me, msg.sender, float(msg.payload["v"][0]), int(msg.seq))


def _serving(kind, max_concurrency=4, **options):
    from ppknn.core.runtime import PartySpec

    clients = ["c0", "c1", "c2"]
    specs = [PartySpec(c, Client, {"me": c, "server": "srv"}) for c in clients[:2]]
    specs += [PartySpec("srv", Server, {"me": "srv"}, max_concurrency=max_concurrency)]
    specs += [PartySpec("c2", Client, {"me": "c2", "server": "srv"})]
    rt = make_runtime(kind, **options)
    rt.start(specs, RunContext(run_id="r", secure_channels=True, party_timeout_s=30))
    return rt, clients


def _drive(rt, clients):
    """Requests whose answers finish in reverse order, through call, map, chain and scatter."""
    from ppknn.core.runtime import Call, Step

    sleeps = [0.6, 0.45, 0.3, 0.15]
    asks = [rt.call("c0", "ask", i, s, 1) for i, s in enumerate(sleeps)]
    replies = rt.map([Call("srv", "serve", (a,)) for a in asks])
    taken = [rt.call("c0", "take", r) for r in replies]
    taken.append(rt.chain([Step("c1", "start", (5, 0.2, 2)), Step("srv", "serve"),
                           Step("c1", "take")]))
    taken.append(rt.call("c2", "take", rt.call("srv", "serve", rt.call("c2", "ask", 7, 0.0, 3))))
    taken += rt.scatter(Step("srv", "broadcast", (clients,)), None,
                        [Call(c, "take") for c in clients])
    return rt.fetch(taken)


@pytest.mark.parametrize("max_concurrency", [0, -2, 1.5, True, "4", None])
def test_max_concurrency_must_be_a_positive_integer(max_concurrency):
    from ppknn.core.errors import ConfigError

    with pytest.raises(ConfigError, match=rf"max_concurrency of party 'srv' must be an integer "
                                          rf">= 1, got {max_concurrency!r}"):
        PartySpec("srv", Server, {"me": "srv"}, max_concurrency=max_concurrency)


@pytest.mark.parametrize("options", [{"layout": "actor-per-party"},
                                     {"layout": "hosted", "hosts": 1}])
def test_concurrent_party_overlaps_calls_and_keeps_the_transcript(ray_local, tmp_path, options):
    from ppknn.core.runtime.concurrency import SEQ_STRIDE

    out, peaks, rows = {}, {}, {}
    for kind, opts in (("inprocess", {}), ("ray", options)):
        rt, clients = _serving(kind, **opts)
        try:
            if kind == "ray" and options["layout"] == "hosted":
                # alone in its (threaded) host; the others grouped around it
                assert rt.host_members == [["c0", "c1"], ["srv"], ["c2"]]
            t0 = time.monotonic()
            out[kind] = _drive(rt, clients)
            elapsed = time.monotonic() - t0
            peaks[kind] = rt.state("srv", "peak")
            rt.close_transcript()
            rows[kind] = Transcript(rt.transcript_table()).canonical_rows()
        finally:
            rt.shutdown()
    assert peaks == {"inprocess": 1, "ray": 4}  # the four map calls were all in flight
    assert elapsed < 1.5  # sequentially the sleeps alone take 1.7 s
    assert out["ray"] == out["inprocess"]
    # the server's messages are numbered from the driver's call order (tickets), not from
    # the order its calls finished in (the reverse, here)
    assert [t[3] for t in out["ray"][:4]] == [k * SEQ_STRIDE for k in range(4)]
    assert out["ray"][4][1:] == ("srv", 10.0, 4 * SEQ_STRIDE)
    assert [t[3] for t in out["ray"][6:]] == [6 * SEQ_STRIDE] * 3  # one message to each
    assert rows["ray"] == rows["inprocess"] and len(rows["ray"]) == 15


def test_concurrent_party_refuses_replays_and_unnumbered_calls():
    from ppknn.core.errors import ConfigError

    rt, _ = _serving("inprocess")
    try:
        env = rt.fetch(rt.call("c0", "ask", 1, 0.0, 1))
        rt.fetch(rt.call("srv", "serve", env))
        rt.call("srv", "serve", env)
        with pytest.raises(IntegrityError, match="seq 0 was already accepted"):
            rt.fetch(None)
        with pytest.raises(ConfigError, match="serves calls concurrently"):
            rt.hosts["srv"].invoke_many([("srv", "serve", (0,))], env)
    finally:
        rt.shutdown()


def test_max_concurrency_is_set_on_the_spec_not_the_actor_options(ray_local):
    from ppknn.core.errors import ConfigError
    from ppknn.core.runtime.ray_runtime import RayRuntime

    rt = RayRuntime(actor_options={"srv": {"max_concurrency": 4}})
    with pytest.raises(ConfigError, match="set it on the party's PartySpec"):
        rt.start([PartySpec("srv", Server, {"me": "srv"})], RunContext(run_id="r"))
    assert rt.hosts == {}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_embedded_default_starts_its_own_local_ray_despite_a_stale_record(tmp_path,
                                                                          monkeypatch):
    """No address: ``ray.init(address="local")``, whatever a stale ``ray start`` left behind."""
    import ray as ray_module

    from ppknn.core.runtime.ray_runtime import RayRuntime

    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{_free_port()}\n")
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    calls = []
    monkeypatch.setattr(ray_module, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_module, "init", lambda **kw: calls.append(kw))
    rt = RayRuntime(num_cpus=1)
    rt._ensure_ray()
    rt._started_ray = False
    RayRuntime._users_of_started_ray -= 1
    assert calls and calls[0]["address"] == "local" and calls[0]["num_cpus"] == 1


def test_address_auto_with_a_stale_record_fails_within_seconds_in_one_line(tmp_path):
    """``--address auto`` where the recorded head is dead: exit 2, one line, nothing written."""
    import os
    import subprocess
    import sys

    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{_free_port()}\n")
    env = {**os.environ, "RAY_TMPDIR": str(tmp_path)}
    env.pop("RAY_ADDRESS", None)
    for address in ("auto", f"127.0.0.1:{_free_port()}"):
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "ppknn", "run", "--runtime", "ray", "--address", address,
             "--output", str(tmp_path / "out"), "--set", "data.max_queries=10"],
            capture_output=True, text=True, env=env, timeout=120)
        elapsed = time.monotonic() - t0
        err = proc.stderr.strip()
        assert proc.returncode == 2, (proc.stdout, err)
        assert "no Ray cluster answers at 127.0.0.1:" in err and "ray start --head" in err
        assert "Traceback" not in err and len(err.splitlines()) <= 3  # one (wrapped) line
        assert not (tmp_path / "out").exists()
        assert elapsed < 60  # the interpreter start dominates; the probe waits at most 3 s


@pytest.mark.parametrize("source, hosts", [("p0", 1), ("p4", 3)])
def test_hosted_group_calls_are_split_and_deliver_the_same(ray_local, monkeypatch, hosts,
                                                           source):
    """Host-group calls of at most GROUP_CALL_STEPS steps: same outputs, progress per call."""
    from ppknn.core.runtime import Call, Step, ray_runtime

    monkeypatch.setattr(ray_runtime, "GROUP_CALL_STEPS", 2)
    rt, names = _scatter_runtime("ray", layout="hosted", hosts=hosts)
    targets = [n for n in names if n != source]
    try:
        refs = rt.scatter(Step(source, "cast", (10.0,), "cast", 1), 5.0,
                          [Call(t, "take", (f"tag-{t}",), "cast", 1) for t in targets])
        # the sender seals 6 messages in one step: 3 calls' worth of time without progress
        assert [c.work for c in rt._pending] == [3] + [1] * (len(rt._pending) - 1)
        got = rt.fetch(refs)
        assert got == [(t, f"tag-{t}", 5.0 + 10.0 * i, source) for i, t in enumerate(targets)]
        casts = rt.map([Call(n, "cast", (None, 1.0), "cast", 2) for n in names])
        assert len(rt._pending) == sum(-(-len(m) // 2) for m in rt.host_members)
        assert all(len(c.refs) <= 2 for c in rt._pending)  # no call ran more than 2 steps
        assert [len(out) for out in rt.fetch(casts)] == [6] * 7
    finally:
        rt.shutdown()


def test_hosted_chain_split_into_short_calls_keeps_the_transcript(ray_local, tmp_path,
                                                                   monkeypatch):
    from ppknn.core.runtime import ray_runtime

    protocol = {"secure_sum": "ring", "weighting": "distance"}
    local = execute(_scenario("inprocess", **protocol), transcript_dir=tmp_path / "local")
    monkeypatch.setattr(ray_runtime, "GROUP_CALL_STEPS", 2)
    calls = []
    original = ray_runtime.RayRuntime.chain

    def chain(self, steps, incoming=None):
        before = len(self._pending)
        out = original(self, steps, incoming)
        calls.append((len(steps), len(self._pending) - before))
        return out

    monkeypatch.setattr(ray_runtime.RayRuntime, "chain", chain)
    on_ray = execute(_scenario("ray", "hosted", 1, **protocol), transcript_dir=tmp_path / "ray")
    assert calls and all(n_calls == -(-n_steps // 2) for n_steps, n_calls in calls)
    np.testing.assert_array_equal(local.predictions, on_ray.predictions)
    assert (Transcript(tmp_path / "local").canonical_rows()
            == Transcript(tmp_path / "ray").canonical_rows())


def test_background_shutdown_is_awaited_before_ray_starts_again(tmp_path):
    """``wait_for_shutdown=False``: the run returns while its Ray stops; the next run (or the
    pool) waits for that shutdown before it starts Ray again, and gets the same results.

    In a fresh interpreter: this process's Ray belongs to the other tests.
    """
    import subprocess
    import sys

    script = """
import ray
from ppknn.core.runtime import ray_runtime
from ppknn.core.runtime.pool import fan_out
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario

sc = parse_scenario({"run": {"name": "bg", "seed": 3}, "data": {"dataset": "glass"},
                     "parties": {"n": 4}, "protocol": {"k": 3},
                     "runtime": {"kind": "ray", "layout": "hosted"}})
first = execute(sc, wait_for_shutdown=False)
stopping = ray_runtime.RayRuntime._shutting_down
assert stopping is not None and stopping.name == "ppknn-ray-shutdown"
second = execute(sc)  # waits for the first shutdown, starts a fresh Ray, stops it
assert not stopping.is_alive() and ray_runtime.RayRuntime._shutting_down is None
assert (first.outcome.result.predictions == second.outcome.result.predictions).all()
assert not ray.is_initialized()
execute(sc, wait_for_shutdown=False)
assert fan_out(abs, [-1, 2], use_ray=True) == [1, 2]  # the pool waits too, starts Ray
assert ray.is_initialized()
ray.shutdown()
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
