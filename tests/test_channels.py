"""Authenticated channels: tampering, replay and misdirection raise IntegrityError."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ppknn.core.channels import Envelope, PlainEndpoint, SecureEndpoint
from ppknn.core.errors import IntegrityError
from ppknn.core.messages import Message, decode_arrays, encode_arrays


def _trio(secure=True):
    cls = SecureEndpoint if secure else PlainEndpoint
    eps = {p: cls(p, "run-1") for p in ("a", "b", "c")}
    if secure:
        directory = {p: e.public_key for p, e in eps.items()}
        for e in eps.values():
            e.register_peers(directory)
    return eps


def _msg(sender="a", receiver="b", value=1.0):
    return Message("run-1", "demo", 1, -1, sender, receiver, "vec",
                   {"v": np.full((2, 3), value)}, {"v": np.zeros((2, 3), np.int64)})


def test_roundtrip_and_sequence_numbers():
    eps = _trio()
    e1, e2 = eps["a"].seal(_msg()), eps["a"].seal(_msg(value=2.0))
    assert (e1.header.seq, e2.header.seq) == (0, 1)
    assert eps["b"].open(e1).payload["v"][0, 0] == 1.0
    assert eps["b"].open(e2).payload["v"][0, 0] == 2.0
    assert e1.wire_bytes > len(encode_arrays(_msg().payload))  # tag + header


def test_ciphertext_tampering_detected():
    eps = _trio()
    env = eps["a"].seal(_msg())
    flipped = bytearray(env.ciphertext)
    flipped[5] ^= 0x01
    with pytest.raises(IntegrityError, match="authentication failed"):
        eps["b"].open(dataclasses.replace(env, ciphertext=bytes(flipped)))


@pytest.mark.parametrize("field, value", [("round", 2), ("protocol", "other"), ("kind", "x"),
                                          ("seq", 5)])
def test_header_tampering_detected(field, value):
    eps = _trio()
    env = eps["a"].seal(_msg())
    forged = dataclasses.replace(env, header=dataclasses.replace(env.header, **{field: value}))
    with pytest.raises(IntegrityError):
        eps["b"].open(forged)


def test_replay_detected():
    eps = _trio()
    env = eps["a"].seal(_msg())
    eps["b"].open(env)
    with pytest.raises(IntegrityError, match="replayed"):
        eps["b"].open(env)


def test_misdirected_delivery_detected():
    eps = _trio()
    env = eps["a"].seal(_msg(receiver="b"))
    with pytest.raises(IntegrityError, match="misdirected"):
        eps["c"].open(env)


def test_rewritten_receiver_detected():
    eps = _trio()
    env = eps["a"].seal(_msg(receiver="b"))
    forged = dataclasses.replace(env, header=dataclasses.replace(env.header, receiver="c"))
    with pytest.raises(IntegrityError, match="authentication failed"):
        eps["c"].open(forged)


def test_other_run_rejected():
    eps = _trio()
    other = SecureEndpoint("b", "run-2")
    other.register_peers({"a": eps["a"].public_key})
    with pytest.raises(IntegrityError):
        other.open(eps["a"].seal(_msg()))


def test_plain_channels_still_check_receiver_and_replay():
    eps = _trio(secure=False)
    m = eps["a"].seal(_msg())
    eps["b"].open(m)
    with pytest.raises(IntegrityError, match="replayed"):
        eps["b"].open(m)
    with pytest.raises(IntegrityError, match="misdirected"):
        eps["c"].open(eps["a"].seal(_msg()))


def test_secure_endpoint_refuses_plaintext():
    eps = _trio()
    with pytest.raises(IntegrityError, match="unauthenticated"):
        eps["b"].open(_msg().with_seq(0))
    plain = PlainEndpoint("b", "run-1")
    with pytest.raises(IntegrityError, match="channels are off"):
        plain.open(eps["a"].seal(_msg()))
    assert isinstance(eps["a"].seal(_msg()), Envelope)


@settings(max_examples=100, deadline=None)
@given(arrays(st.sampled_from([np.float64, np.int64, np.uint64, np.bool_]),
              st.tuples(st.integers(0, 4), st.integers(0, 4))))
def test_payload_encoding_roundtrip(arr):
    out = decode_arrays(encode_arrays({"a": arr, "b": arr[:1]}))
    np.testing.assert_array_equal(out["a"], arr)
    assert out["a"].dtype == arr.dtype and out["a"].shape == arr.shape


def test_zero_dimensional_payload_keeps_its_shape():
    out = decode_arrays(encode_arrays({"x": np.float64(2.5), "n": np.array(3)}))
    assert out["x"].shape == () and float(out["x"]) == 2.5
    assert out["n"].shape == () and int(out["n"]) == 3


def test_tampered_message_through_runtime_raises():
    """A party step that receives a forged envelope fails the run with IntegrityError."""
    from ppknn.core.runtime import InProcessRuntime, PartySpec, RunContext

    rt = InProcessRuntime()
    rt.start([PartySpec("a", Echo, {"me": "a", "to": "b"}),
              PartySpec("b", Echo, {"me": "b", "to": "a"})],
             RunContext(run_id="run-1", secure_channels=True))
    env = rt.fetch(rt.call("a", "send", 1.0))
    flipped = env.ciphertext[:-1] + bytes([env.ciphertext[-1] ^ 1])
    forged = dataclasses.replace(env, ciphertext=flipped)
    rt.call("b", "receive", forged)
    with pytest.raises(IntegrityError):
        rt.fetch(None)
    rt.call("b", "receive", env)
    assert rt.fetch(None) is None
    rt.call("b", "receive", env)  # replayed
    with pytest.raises(IntegrityError, match="replayed"):
        rt.fetch(None)


class Echo:
    def __init__(self, *, me, to):
        self.me, self.to = me, to

    def send(self, value):
        return Message("run-1", "demo", 1, -1, self.me, self.to, "x", {"v": np.array([value])})

    def receive(self, msg):
        self.last = msg.payload["v"]


@pytest.mark.parametrize("secure", [True, False])
def test_dropped_message_detected_at_the_next_one(secure):
    eps = _trio(secure)
    first, lost, third = (eps["a"].seal(_msg(value=v)) for v in (1.0, 2.0, 3.0))
    eps["b"].open(first)
    with pytest.raises(IntegrityError, match=r"lost or reordered from 'a' to 'b': expected seq 1, "
                                             r"got 2 \(1 missing"):
        eps["b"].open(third)
    eps["b"].open(lost)  # the refused one was not accepted: the stream goes on in order
    eps["b"].open(third)


@pytest.mark.parametrize("secure", [True, False])
def test_reordered_messages_detected(secure):
    eps = _trio(secure)
    first, second = eps["a"].seal(_msg()), eps["a"].seal(_msg(value=2.0))
    with pytest.raises(IntegrityError, match="expected seq 0, got 1"):
        eps["b"].open(second)  # overtook the first
    eps["b"].open(first)


def test_first_message_lost_is_a_gap_too():
    eps = _trio()
    eps["a"].seal(_msg())  # lost on the wire
    with pytest.raises(IntegrityError, match="expected seq 0, got 1"):
        eps["b"].open(eps["a"].seal(_msg(value=2.0)))


def test_senders_numbering_from_tickets_may_skip_numbers():
    """A concurrent party's numbers have gaps by design: only replays are refused from it."""
    eps = _trio()
    eps["b"].expect_unordered(["a"])
    eps["b"].open(eps["a"].seal_as(0, _msg()))
    eps["b"].open(eps["a"].seal_as(3_000_000, _msg()))
    with pytest.raises(IntegrityError, match="replayed"):
        eps["b"].open(eps["a"].seal_as(5, _msg()))  # below the last accepted


def test_concurrent_receiver_reports_holes_at_the_end():
    from ppknn.core.runtime.concurrency import make_concurrent_endpoint

    owner = make_concurrent_endpoint("b", "run-1", secure=False)
    a = PlainEndpoint("a", "run-1")
    wires = [a.seal(_msg()) for _ in range(4)]
    for w in (wires[3], wires[0], wires[1]):  # any order; seq 2 never arrives
        owner.open(w)
    assert owner.missing() == {"a": [2]}
    owner.open(wires[2])
    assert owner.missing() == {}


def test_lost_message_to_a_concurrent_party_fails_the_run():
    """Host level: a message lost on its way to a concurrent party is refused at run end."""
    from ppknn.core.runtime import InProcessRuntime, PartySpec, RunContext

    class Sender:
        def __init__(self, *, me):
            self.me = me

        def send(self, i):
            return Message("r", "demo", 1, -1, self.me, "owner", "x", {"v": np.arange(2)})

    class Owner:
        def __init__(self):
            self.got = 0

        def take(self, msg):
            self.got += 1

    from ppknn.core.runtime import FaultPlan

    for fault, lost in ((None, False), (FaultPlan("alice", "send", 2, "drop"), True)):
        rt = InProcessRuntime()
        rt.start([PartySpec("alice", Sender, {"me": "alice"}),
                  PartySpec("owner", Owner, max_concurrency=4)],
                 RunContext(run_id="r", fault=fault))
        for i in range(3):
            rt.call("owner", "take", rt.call("alice", "send", i))
        rt.fetch(None)
        if lost:
            with pytest.raises(IntegrityError, match=r"lost from 'alice' to 'owner': seq \[1\]"):
                rt.check_delivery()
        else:
            rt.check_delivery()


_NAMES = st.one_of(st.text(max_size=12),
                   st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127),
                           max_size=12),
                   st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=127),
                           max_size=12),  # printable ASCII, DEL, quotes and backslashes
                   st.from_regex(r"owner-[0-9]{1,6}", fullmatch=True))


@settings(max_examples=400, deadline=None)
@example(run_id="r", protocol="p", sender='a"b', receiver="c", kind="k", round=0, seq=1)
@example(run_id="r", protocol="p", sender="a", receiver="c\\d", kind="k", round=0, seq=1)
@example(run_id="r", protocol="p", sender="a", receiver="c", kind="\x7f", round=0, seq=1)
@given(run_id=_NAMES, protocol=_NAMES, sender=_NAMES, receiver=_NAMES, kind=_NAMES,
       round=st.integers(-2**70, 2**70), seq=st.integers(0, 2**64))
def test_associated_data_is_the_headers_sorted_compact_json(run_id, protocol, sender,
                                                            receiver, kind, round, seq):
    """The bytes a channel binds are ``json.dumps`` of the header (sorted keys, compact),
    whatever the names: quotes, backslashes, control and non-ASCII characters included."""
    import json

    m = Message(run_id, protocol, round, seq, sender, receiver, kind, {})
    expected = json.dumps({"run_id": run_id, "protocol": protocol, "round": round, "seq": seq,
                           "sender": sender, "receiver": receiver, "kind": kind},
                          sort_keys=True, separators=(",", ":")).encode()
    assert m.associated_data() == expected


@pytest.mark.parametrize("secure", [True, False])
def test_a_sequence_number_is_sealed_once_per_pair(secure):
    """seal_as cannot reuse a number (the AES-GCM nonce of the pair's key), whether it was
    used by seal_as or by the ordinary counter; another receiver's numbers are its own."""
    a = _trio(secure)["a"]
    a.seal_as(7, _msg())
    with pytest.raises(IntegrityError, match="already sealed sequence number 7 to 'b'"):
        a.seal_as(7, _msg(value=2.0))
    a.seal(_msg())  # the counter's 0
    with pytest.raises(IntegrityError, match="sequence number 0"):
        a.seal_as(0, _msg())
    a.seal_as(7, _msg(receiver="c"))  # another pair, another key
