"""Authenticated channels: tampering, replay and misdirection raise IntegrityError."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
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
