"""A call's messages are recorded with their own bytes, a broadcast's payload encoded once.

The host encodes the payload (and provenance) of a call's message list once when the
messages carry the same array objects (a broadcast); each record must still hold exactly
``encode_arrays`` of its own message, and equal names with different arrays must not
share an encoding (a cache keyed on names alone fails the second test).
"""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.messages import Message, decode_arrays, encode_arrays
from ppknn.core.runtime.host import PartyHost, PartySpec


class Sender:
    """Sends one list of messages: ``arrays`` gives each receiver's payload array."""

    def __init__(self, *, arrays):
        self.arrays = arrays

    def send(self):
        return [Message("r", "demo", 1, -1, "a", f"b{i}", "x", {"v": v},
                        {"v": np.full((1, 1), i, dtype=np.int32)})
                for i, v in enumerate(self.arrays)]


class _Records:
    def __init__(self):
        self.rows = []

    def append(self, records):
        self.rows.extend(records)

    append_sync = append


def _records(arrays, *, secure):
    records = _Records()
    host = PartyHost(run_id="r", recorder=records, secure_channels=secure, record_batch=1)
    host.add_party(PartySpec("a", Sender, {"arrays": arrays}))
    receivers = [PartyHost(run_id="r", recorder=_Records(), secure_channels=secure)
                 for _ in arrays]
    keys = {"a": b""}
    for i, h in enumerate(receivers):
        keys[f"b{i}"] = h.add_party(PartySpec(f"b{i}", Sender, {"arrays": []}))
    if secure:
        keys["a"] = host.endpoints["a"].public_key
    for h in (host, *receivers):
        h.register_peers(keys)
    wires = host.invoke("a", "send")
    opened = [h._open(h.endpoints[f"b{i}"], w) for i, (h, w) in enumerate(zip(receivers, wires))]
    return records.rows, opened


@pytest.mark.parametrize("secure", [True, False])
def test_broadcast_records_hold_each_message_bytes(secure):
    shared = np.arange(12.0).reshape(3, 4)
    rows, opened = _records([shared, shared, shared], secure=secure)
    assert len(rows) == 3
    for i, (row, message) in enumerate(zip(rows, opened)):
        assert row["payload"] == encode_arrays({"v": shared})
        assert row["provenance"] == encode_arrays({"v": np.full((1, 1), i, dtype=np.int32)})
        assert row["plaintext_bytes"] == len(row["payload"])
        np.testing.assert_array_equal(message.payload["v"], shared)


@pytest.mark.parametrize("secure", [True, False])
def test_different_arrays_under_one_name_are_encoded_each(secure):
    arrays = [np.full((3, 4), float(i)) for i in range(3)]  # equal names, shapes, dtypes
    rows, opened = _records(arrays, secure=secure)
    for row, message, v in zip(rows, opened, arrays):
        assert row["payload"] == encode_arrays({"v": v})
        np.testing.assert_array_equal(decode_arrays(row["payload"])["v"], v)
        np.testing.assert_array_equal(message.payload["v"], v)
