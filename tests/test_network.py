"""The network replay: causal stamps in the transcript, hand-computed critical paths."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ppknn.core.errors import PrivacyLeakWarning
from ppknn.core.messages import Message
from ppknn.core.runtime import PartySpec, RunContext, make_runtime
from ppknn.simulations.network import (
    PROFILES,
    NetworkProfile,
    replay,
    replay_messages,
)
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario

NET = NetworkProfile(latency_ms=10.0, bandwidth_mbps=8.0)  # 10 ms; 1 byte per microsecond
LAT, PER_BYTE = 0.010, 1e-6


def msg(sender, receiver, seq, size, *after):
    return {"sender": sender, "receiver": receiver, "seq": seq, "wire_bytes": size,
            "after": list(after)}


def ring(n, rounds, size=1000):
    """Owner i passes to owner i+1, n·r times, as the party host stamps it: each message
    follows the one its sender received, then that sender's previous send."""
    out, prev_recv, last_send, seqs = [], None, {}, {}
    for step in range(n * rounds):
        s, r = f"p{step % n}", f"p{(step + 1) % n}"
        seq = seqs.get((s, r), 0)
        seqs[(s, r)] = seq + 1
        after = [k for k in (prev_recv, last_send.get(s)) if k is not None]
        out.append(msg(s, r, seq, size, *after))
        prev_recv = last_send[s] = (s, r, seq)
    return out


@pytest.mark.parametrize("n, rounds", [(4, 1), (6, 2), (64, 2)])
def test_ring_pays_n_times_r_sequential_hops(n, rounds):
    got = replay_messages(ring(n, rounds), NET)
    hop = LAT + 1000 * PER_BYTE
    assert got.critical_hops == n * rounds and got.messages == n * rounds
    assert got.seconds == pytest.approx(n * rounds * hop, rel=1e-12)
    assert got.sum_of_hops == pytest.approx(got.seconds, rel=1e-12)  # nothing overlaps


def test_central_owner_pays_one_round_trip():
    q, a = 200, 3000
    got = replay_messages([msg("analyst", "owner", 0, q),
                           msg("owner", "analyst", 0, a, ("analyst", "owner", 0))], NET)
    assert got.critical_hops == 2
    assert got.seconds == pytest.approx(2 * LAT + (q + a) * PER_BYTE, rel=1e-12)


def test_independent_chains_overlap():
    """Two analysts each run a three-message exchange with their own owner: the replay takes
    one chain's time, far below the sum of hops (what an unstamped hop count charges)."""
    chains = []
    for who in ("x", "y"):
        chains += [msg(f"a{who}", f"o{who}", 0, 500),
                   msg(f"o{who}", f"a{who}", 0, 500, (f"a{who}", f"o{who}", 0)),
                   msg(f"a{who}", f"o{who}", 1, 500, (f"o{who}", f"a{who}", 0),
                       (f"a{who}", f"o{who}", 0))]
    got = replay_messages(chains, NET)
    hop = LAT + 500 * PER_BYTE
    assert got.critical_hops == 3
    assert got.seconds == pytest.approx(3 * hop, rel=1e-12)
    assert got.sum_of_hops == pytest.approx(6 * hop, rel=1e-12)
    assert got.seconds < got.sum_of_hops


def test_a_link_serialises_its_messages():
    """Three 10 kB messages leave at once: on one link they queue (each waits for the one
    before), on three links they travel side by side."""
    size = 10_000
    one_link = [msg("s", "r", i, size, *([("s", "r", i - 1)] if i else [])) for i in range(3)]
    three_links = [msg("s", f"r{i}", 0, size, *([("s", f"r{i - 1}", 0)] if i else []))
                   for i in range(3)]
    tx = size * PER_BYTE
    queued = replay_messages(one_link, NET)
    assert queued.seconds == pytest.approx(3 * tx + LAT, rel=1e-12)
    assert queued.critical_hops == 1  # one hop: the three are in flight together
    side = replay_messages(three_links, NET)
    assert side.seconds == pytest.approx(tx + LAT, rel=1e-12) and side.critical_hops == 1
    # a message waiting for an arrival leaves when it is in; the link is free by then
    late = [msg("s", "r", 0, size), msg("t", "s", 0, 10), msg("s", "r", 1, size,
                                                                ("t", "s", 0), ("s", "r", 0))]
    got = replay_messages(late, NET)
    assert got.seconds == pytest.approx(max(tx, LAT + 10 * PER_BYTE) + tx + LAT, rel=1e-12)


def test_stamps_that_form_a_cycle_and_duplicate_messages_are_refused():
    with pytest.raises(ValueError, match="cycle"):
        replay_messages([msg("a", "b", 0, 1, ("b", "a", 0)), msg("b", "a", 0, 1, ("a", "b", 0))],
                        NET)
    with pytest.raises(ValueError, match="twice"):
        replay_messages([msg("a", "b", 0, 1), msg("a", "b", 0, 1)], NET)
    assert replay_messages([], NET).seconds == 0.0


class Node:
    """Sends, keeps and forwards; a call that keeps a message sends nothing."""

    def __init__(self, *, me):
        self.me, self.kept = me, []

    def send(self, to, round):
        return Message("r", "demo", round, -1, self.me, to, "v", {"v": np.zeros(4)})

    def keep(self, message):
        self.kept.append(message)

    def send_two(self, first, second, round):
        return [self.send(first, round), self.send(second, round)]


def _drive(kind, secure):
    rt = make_runtime(kind)
    specs = [PartySpec(p, Node, {"me": p}) for p in "abc"]
    specs.append(PartySpec("srv", Node, {"me": "srv"}, max_concurrency=3))
    rt.start(specs, RunContext(run_id="r", secure_channels=secure))
    try:
        m1 = rt.call("a", "send", "b", 1)
        rt.call("b", "keep", m1)                         # b sends nothing here ...
        m2 = rt.call("b", "send", "c", 1)                # ... so its next send follows m1
        m3, m4 = rt.fetch(rt.call("b", "send_two", "c", "a", 2))  # b's previous send only
        rt.fetch([rt.call("c", "keep", m2), rt.call("c", "keep", m3),
                  rt.call("a", "keep", m4)])
        q = rt.call("c", "send", "srv", 3)
        rt.fetch(rt.call("a", "keep", rt.call("srv", "send", "a", 3)))  # a concurrent call:
        rt.fetch(rt.call("srv", "keep", q))                             # its own chain
        rt.fetch(rt.call("b", "keep", rt.call("srv", "send", "b", 3)))
        rt.close_transcript()
        table = rt.transcript_table()
    finally:
        rt.shutdown()
    return {(r["sender"], r["receiver"], r["seq"]): [tuple(d.values()) for d in r["after"]]
            for r in table.select(["sender", "receiver", "seq", "after"]).to_pylist()}


EXPECTED_STAMPS = {
    ("a", "b", 0): [],
    ("b", "c", 0): [("a", "b", 0)],
    ("b", "c", 1): [("b", "c", 0)],
    ("b", "a", 0): [("b", "c", 1)],
    ("c", "srv", 0): [("b", "c", 0), ("b", "c", 1)],
}


@pytest.mark.parametrize("secure", [False, True])
def test_the_host_stamps_what_each_message_follows(secure):
    from ppknn.core.runtime.concurrency import SEQ_STRIDE

    got = _drive("inprocess", secure)
    assert {k: v for k, v in got.items() if k[0] != "srv"} == EXPECTED_STAMPS
    # each call of a concurrent party is a chain of its own: its sends follow only what
    # that call received (here nothing), whatever the party received in other calls
    srv = {k: v for k, v in got.items() if k[0] == "srv"}
    assert srv == {("srv", "a", 0): [], ("srv", "b", 2 * SEQ_STRIDE): []}


def test_stamps_are_not_part_of_any_view():
    """The stamp is simulation metadata: a party's view (messages) carries no such field."""
    from ppknn.core.transcript import Transcript, View

    sc = parse_scenario({"data": {"dataset": "sklearn:iris", "max_queries": 5},
                         "protocol": {"name": "dp-knn", "task": "knn"},
                         "runtime": {"kind": "inprocess"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        t = execute(sc).transcript
    assert isinstance(t, Transcript) and "after" in t.table().column_names
    view = View.of(t.messages(), t.messages()[0].receiver)
    assert view.received and all(not hasattr(m, "after") for m in view.received + view.sent)


def _ring_run(n, rounds):
    sc = parse_scenario({"data": {"dataset": "sklearn:iris", "max_queries": 10},
                         "parties": {"n": n}, "protocol": {"name": "ppknn-ring",
                                                           "rounds": rounds},
                         "runtime": {"kind": "inprocess"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return execute(sc)


@pytest.mark.parametrize("n, rounds", [(3, 1), (5, 2)])
def test_a_real_ring_run_replays_to_its_hand_computed_critical_path(n, rounds):
    """The ring's top-k goes round n·r times, then the final vector goes out (one more
    hop); its secure sum goes round once (n hops) and back to the start (one more). Run
    together, the sum's first message leaves with the final vector (same link, in flight
    together), so the run pays n·r + n + 1 hops."""
    t = _ring_run(n, rounds).transcript.table()
    only_latency = NetworkProfile(latency_ms=1.0, bandwidth_mbps=1e12)
    per = replay(t, only_latency)
    assert per["pp-topk"].critical_hops == n * rounds + 1
    assert per["secure-sum"].critical_hops == n + 1
    whole = replay(t, only_latency, per_protocol=False)["run"]
    assert whole.critical_hops == n * rounds + n + 1
    assert whole.seconds == pytest.approx(whole.critical_hops * 1e-3, rel=1e-6)
    # bytes: the WAN time is the critical path's latencies plus its messages' transmission
    wan = replay(t, PROFILES["wan"], per_protocol=False)["run"]
    assert wan.critical_hops == whole.critical_hops
    assert whole.critical_hops * 0.050 < wan.seconds < whole.critical_hops * 0.050 + \
        int(np.sum(t["wire_bytes"].to_numpy())) * 8 / 100e6


def test_a_scenario_reports_the_replay_in_its_summary():
    from ppknn.simulations.results import summary_of

    sc = parse_scenario({"data": {"dataset": "sklearn:iris", "max_queries": 10},
                         "parties": {"n": 4}, "protocol": {"name": "ppknn-ring"},
                         "runtime": {"kind": "inprocess"},
                         "network": {"profiles": ["lan"],
                                     "custom": {"slow": {"latency_ms": 100.0,
                                                         "bandwidth_mbps": 1e12}}}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        summary = summary_of(execute(sc))
    net = summary["network"]
    assert net["model"].startswith("transcript replay")
    hops = net["profiles"]["slow"]["critical_path_hops"]["ppknn-ring"]
    assert hops == 4 * 2 + 4 + 1  # two rounds by default (see above)
    assert net["profiles"]["slow"]["seconds"]["ppknn-ring"] == pytest.approx(hops * 0.1,
                                                                            rel=1e-6)
    assert net["profiles"]["lan"]["critical_path_hops"]["ppknn-ring"] == hops
