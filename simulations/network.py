"""A network model: what a run would take on a real network, from its critical path.

Each driver reports the hops on its protocol's critical path (messages that must follow
one another). :func:`predict_network` charges each hop a link's latency plus the time to
push one message of the run's mean size through the link's bandwidth. ``[network]`` in a
scenario asks ``ppknn run`` to report it (``summary.json`` → ``network``); ``ppknn
compare`` reports it for every cell::

    [network]
    profiles = ["lan", "wan"]          # built-in profiles to report
    [network.custom.campus]            # and profiles of your own
    latency_ms = 5.0
    bandwidth_mbps = 200.0
"""

from __future__ import annotations

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
    """Predicted network time (s) of a run's critical path on ``profile``.

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


def predicted(summary: dict[str, Any], section: NetworkSection) -> dict[str, Any]:
    """The ``network`` section of a run's ``summary.json``.

    Predicted seconds per profile and protocol: hops from each protocol's result, the mean
    message size from the run's whole transcript.
    """
    comm = summary["communication"]
    out: dict[str, Any] = {"model": "hops x (latency + mean message bytes / bandwidth); "
                                    "computation ignored", "profiles": {}}
    for name, prof in section.resolved().items():
        per: dict[str, float] = {}
        for proto, result in summary["results"].items():
            messages, bytes_ = comm["messages"], comm["bytes"]
            per[proto] = predict_network(hops=int(result.get("hops") or 0),
                                         messages=int(messages or 0), bytes_=int(bytes_ or 0),
                                         profile=prof)
        out["profiles"][name] = {"latency_ms": prof.latency_ms,
                                 "bandwidth_mbps": prof.bandwidth_mbps, "seconds": per}
    return out


__all__ = ["PROFILES", "NetworkProfile", "NetworkSection", "predict_network", "predicted"]
