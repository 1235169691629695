"""A network model: what a run would take on a real network, replayed over its transcript.

:func:`replay` replays a run's transcript on a network profile (per-link latency and
bandwidth). Every message carries a causal stamp (the transcript's ``after`` column: the
messages its sender received since its previous send, then that send), so the replay knows
exactly what each message waited for:

* a message leaves when its sender has everything it follows: its **send time** is the
  latest arrival of the messages it follows and its sender's previous send time (0 when it
  follows nothing);
* a directed link carries one message at a time: the message starts when the link is free
  (links serve messages in the order they are sent), occupies it for ``bytes × 8 /
  bandwidth`` and **arrives** ``latency`` later;
* the run takes as long as its last arrival; the **critical path** is the chain of
  messages that set it (each one waited for the previous one of the chain).

So a ring of n parties over r rounds pays n·r sequential hops, a central owner one round
trip, and two independent chains overlap instead of adding up. Computation time is not
modelled (a party answers the moment its inputs are in), nor are a sender's links sharing
its network interface. :func:`predict_network` (hops × per-hop time, a cruder
approximation from the driver's hop count) remains for runs without a transcript.

``[network]`` in a scenario asks ``ppknn run`` to report it (``summary.json`` →
``network``); ``ppknn compare`` reports it for every cell::

    [network]
    profiles = ["lan", "wan"]          # built-in profiles to report
    [network.custom.campus]            # and profiles of your own
    latency_ms = 5.0
    bandwidth_mbps = 200.0
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class NetworkProfile(BaseModel):
    """One network: per-link latency (one way) and bandwidth."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    latency_ms: float = Field(ge=0, allow_inf_nan=False)
    bandwidth_mbps: float = Field(gt=0, allow_inf_nan=False)


PROFILES: dict[str, NetworkProfile] = {
    "lan": NetworkProfile(latency_ms=0.5, bandwidth_mbps=1000.0),
    "wan": NetworkProfile(latency_ms=50.0, bandwidth_mbps=100.0),
}
"""Built-in profiles: a LAN (0.5 ms, 1 Gbit/s) and a WAN (50 ms, 100 Mbit/s) per link."""


def predict_network(*, hops: int, messages: int, bytes_: int, profile: NetworkProfile) -> float:
    """Predicted network time (s) from a hop count: the approximation without a transcript.

    :func:`replay` is the model the reports use; this one needs only totals.

    The protocol's driver reports the hops on the critical path: messages that must follow
    one another (a ring of n parties over r rounds: about n·r; a central owner: one round
    trip, 2). Each hop pays the link's latency and the time to push one message of the
    run's mean size through the link's bandwidth::

        hops × (latency + (bytes / messages) × 8 / bandwidth)

    A model, not a measurement: it ignores computation, assumes messages off the critical
    path overlap with it, and spreads bytes evenly over messages.

    >>> lan = PROFILES["lan"]
    >>> round(predict_network(hops=128, messages=128, bytes_=128_000, profile=lan), 6)
    0.065024
    >>> predict_network(hops=0, messages=0, bytes_=0, profile=lan)
    0.0
    """
    if hops <= 0 or messages <= 0:
        return 0.0
    mean_bytes = bytes_ / messages
    per_hop = profile.latency_ms / 1e3 + mean_bytes * 8 / (profile.bandwidth_mbps * 1e6)
    return hops * per_hop



class NetworkSection(BaseModel):
    """``[network]`` of a scenario: the profiles whose predicted time the run reports."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    profiles: list[str] = Field(default_factory=lambda: ["lan", "wan"])
    custom: dict[str, NetworkProfile] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> NetworkSection:
        for name in self.profiles:
            if name not in PROFILES and name not in self.custom:
                raise ValueError(f"profile {name!r} is neither built in "
                                 f"({sorted(PROFILES)}) nor in [network.custom]")
        return self

    def resolved(self) -> dict[str, NetworkProfile]:
        """The profiles to report, by name (the listed built-ins, then every custom one)."""
        out = {name: PROFILES[name] for name in self.profiles if name in PROFILES}
        return {**out, **self.custom}


def predicted(summary: dict[str, Any], section: NetworkSection,
              table: Any | None = None) -> dict[str, Any]:
    """The ``network`` section of a run's ``summary.json``.

    With the run's transcript ``table``: predicted seconds per profile and protocol from
    :func:`replay` (the whole run for a run of one protocol, else per transcript protocol),
    with the sequential hops on the critical path.
    Without one: :func:`predict_network` over each protocol's hops and the run's mean
    message size (said in ``model``).
    """
    if table is not None:
        out: dict[str, Any] = {"model": REPLAY_MODEL, "profiles": {}}
        one = list(summary["results"]) if len(summary["results"]) == 1 else []
        for name, prof in section.resolved().items():
            per = replay(table, prof, per_protocol=not one)
            if one:  # one registered protocol: the whole run (its sub-protocols together)
                per = {one[0]: per["run"]}
            out["profiles"][name] = {
                "latency_ms": prof.latency_ms, "bandwidth_mbps": prof.bandwidth_mbps,
                "seconds": {p: r.seconds for p, r in per.items()},
                "critical_path_hops": {p: r.critical_hops for p, r in per.items()}}
        return out
    comm = summary["communication"]
    out = {"model": "hops x (latency + mean message bytes / bandwidth); "
                    "computation ignored", "profiles": {}}
    for name, prof in section.resolved().items():
        per_hops: dict[str, float] = {}
        for proto, result in summary["results"].items():
            messages, bytes_ = comm["messages"], comm["bytes"]
            per_hops[proto] = predict_network(hops=int(result.get("hops") or 0),
                                              messages=int(messages or 0),
                                              bytes_=int(bytes_ or 0), profile=prof)
        out["profiles"][name] = {"latency_ms": prof.latency_ms,
                                 "bandwidth_mbps": prof.bandwidth_mbps, "seconds": per_hops}
    return out


REPLAY_MODEL = ("transcript replay: a message leaves when the messages its sender received "
                "before it have arrived (and after its sender's previous send); a directed "
                "link carries one message at a time (bytes x 8 / bandwidth) and delivers it "
                "latency later; computation ignored")
"""What :func:`predicted` says about the replay model."""

REPLAY_COLUMNS = ("protocol", "sender", "receiver", "seq", "wire_bytes", "after")
"""The transcript columns :func:`replay` reads."""

Key = tuple[str, str, int]


@dataclass(frozen=True)
class Replayed:
    """One protocol's replay on one network profile.

    Attributes
    ----------
    seconds:
        When the last message arrives (the protocol's network time).
    critical_hops:
        Sequential hops on the critical path (the chain of waits that ends with the last
        arrival): the latencies it pays. A message that waited for its link to be free
        shares its hop with the one before it (both are in flight together).
    messages:
        Messages replayed.
    sum_of_hops:
        Every message's own time (latency + transmission) added up: what a run with no
        overlap at all would take.
    """

    seconds: float
    critical_hops: int
    messages: int
    sum_of_hops: float


def replay_messages(messages: Sequence[Mapping[str, Any]], profile: NetworkProfile) -> Replayed:
    """Replay messages (dicts with sender, receiver, seq, wire_bytes, after) on ``profile``.

    ``after`` lists the (sender, receiver, seq) keys, as dicts or tuples, of the messages
    the message follows (module docstring); keys of messages not in ``messages`` are
    ignored (they count as done at time 0).

    A chain a -> b -> c of 1,000-byte messages on a 1 ms, 8 Mbit/s network takes two hops
    of 1 ms + 1 ms:

    >>> chain = [dict(sender="a", receiver="b", seq=0, wire_bytes=1000, after=[]),
    ...          dict(sender="b", receiver="c", seq=0, wire_bytes=1000,
    ...               after=[("a", "b", 0)])]
    >>> r = replay_messages(chain, NetworkProfile(latency_ms=1.0, bandwidth_mbps=8.0))
    >>> round(r.seconds, 9), r.critical_hops
    (0.004, 2)
    """
    latency = profile.latency_ms / 1e3
    per_byte = 8 / (profile.bandwidth_mbps * 1e6)
    keys, deps, dependents, waiting = _causal_graph(messages)
    n = len(keys)
    size = [int(m["wire_bytes"]) * per_byte for m in messages]
    send = [0.0] * n
    arrive = [0.0] * n
    held = [-1] * n  # the received message that set the send time
    cause = [-1] * n  # the message that held this one back (its arrival, or its link)
    on_link = [False] * n  # ... by its link (a pipelined wait: no latency of its own)
    ready: list[tuple[float, Key, int]] = []
    for i in range(n):
        if not waiting[i]:
            heapq.heappush(ready, (0.0, keys[i], i))
    link_free: dict[tuple[str, str], tuple[float, int]] = {}
    done = 0
    while ready:  # in order of send time: a link serves its messages first come, first served
        t, key, i = heapq.heappop(ready)
        done += 1
        free, last = link_free.get(key[:2], (0.0, -1))
        if free > t:
            start, cause[i], on_link[i] = free, last, True
        else:
            start, cause[i] = t, held[i]
        end = start + size[i]
        link_free[key[:2]] = (end, i)
        arrive[i] = end + latency
        for j in dependents[i]:
            waiting[j] -= 1
            if not waiting[j]:
                send[j], held[j] = _send_time(j, deps[j], keys, send, arrive, held)
                heapq.heappush(ready, (send[j], keys[j], j))
    if done < n:
        raise ValueError(f"the transcript's causal stamps form a cycle ({n - done} messages "
                         "never become ready)")
    if not n:
        return Replayed(0.0, 0, 0, 0.0)
    last_i = max(range(n), key=lambda i: (arrive[i], keys[i]))
    hops, i = 1, last_i
    while cause[i] >= 0:
        hops += 0 if on_link[i] else 1
        i = cause[i]
    return Replayed(seconds=arrive[last_i], critical_hops=hops, messages=n,
                    sum_of_hops=sum(size) + n * latency)


def _causal_graph(messages: Sequence[Mapping[str, Any]]
                  ) -> tuple[list[Key], list[list[int]], list[list[int]], list[int]]:
    """Each message's key, the messages it follows, those following it, and their count."""
    keys: list[Key] = []
    deps: list[list[int]] = []
    index: dict[Key, int] = {}
    for m in messages:
        key = (str(m["sender"]), str(m["receiver"]), int(m["seq"]))
        if key in index:
            raise ValueError(f"message {key} appears twice in the transcript")
        index[key] = len(keys)
        keys.append(key)
    n = len(keys)
    waiting = [0] * n
    dependents: list[list[int]] = [[] for _ in range(n)]
    for i, m in enumerate(messages):
        own: list[int] = []
        for d in m.get("after") or ():
            dk = ((d["sender"], d["receiver"], int(d["seq"])) if isinstance(d, Mapping)
                  else (str(d[0]), str(d[1]), int(d[2])))
            j = index.get(dk)
            if j is not None and j != i:
                own.append(j)
                dependents[j].append(i)
        deps.append(own)
        waiting[i] = len(own)
    return keys, deps, dependents, waiting


def _send_time(i: int, deps: list[int], keys: list[Key], send: list[float],
               arrive: list[float], held: list[int]) -> tuple[float, int]:
    """When message ``i`` can leave, and the received message that decided it (-1: none).

    A previous send of the same sender passes on what held it back.
    """
    sender = keys[i][0]
    best, cause = 0.0, -1
    for j in deps:
        if keys[j][1] == sender:  # a message the sender received: its arrival
            t, c = arrive[j], j
        else:  # the sender's previous send
            t, c = send[j], held[j]
        if t > best:
            best, cause = t, c
    return best, cause


def _rows(table: Any) -> list[dict[str, Any]]:
    if hasattr(table, "table") and not hasattr(table, "column_names"):
        table = table.table()
    cols = [c for c in REPLAY_COLUMNS if c in table.column_names]
    return table.select(cols).to_pylist()


def replay(table: Any, profile: NetworkProfile, *, per_protocol: bool = True
           ) -> dict[str, Replayed]:
    """Replay a transcript on ``profile`` (module docstring).

    ``table``: a pyarrow table of the transcript, or a
    :class:`~ppknn.core.transcript.Transcript`. Returns the replay per transcript protocol
    (a stamp naming another protocol's message counts as done at time 0), or with
    ``per_protocol=False`` the whole run's as ``{"run": ...}`` (a protocol made of
    sub-protocols, e.g. the ring's secure sum then its top-k, is one run). A transcript
    written before messages carried their causal stamp has no ``after`` column: its
    messages are taken as independent.
    """
    rows = _rows(table)
    if not per_protocol:
        return {"run": replay_messages(rows, profile)}
    by_protocol: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_protocol.setdefault(r["protocol"], []).append(r)
    return {p: replay_messages(ms, profile) for p, ms in sorted(by_protocol.items())}


__all__ = ["PROFILES", "REPLAY_MODEL", "NetworkProfile", "NetworkSection", "Replayed",
           "predict_network", "predicted", "replay", "replay_messages"]
