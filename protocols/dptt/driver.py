"""DP-TT (Lepert 2022): the driver of the client/server protocol.

1. The server describes its tree (size, dimension, worst-case height);
   client and server accept the public :class:`~protocols.dptt.config.DPTTSetup`
   and agree on the number of rounds R.
2. The client pays for the batch and announces its size (``open``).
3. For r = 1..R: the server sends the node values of every pending
   decision (``nodes``), the client answers one exponential-mechanism bit
   each (``bits``). Levels are synchronous: one message each way per level
   carries the whole batch.
4. The server sends the released points (``release``).

The driver only builds the call chain; on Ray every message goes from actor
to actor by reference and is recorded by the host, so the server's view in
the transcript is exactly what it received: the batch size and the bits.

The client and server classes are bound to their roles in
:mod:`parties.specs` (``dptt_specs``), whose examples run this driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.errors import ConfigError, ProtocolError
from core.messages import PartyId
from core.runtime.base import Progress, Runtime
from protocols.dptt.config import PROTOCOL, ClientOutcome, DPTTSetup, ServerInfo
from protocols.dptt.variants import PrivacyAccount


@dataclass(frozen=True)
class DPTTResult:
    """One batch's outcome.

    Attributes
    ----------
    outcome:
        What the client received (released points, counts).
    account:
        Final ε per query (bounded-range with δ, and summation).
    info:
        The server's public facts.
    setup:
        The public set-up of the batch.
    rounds:
        Client/server rounds R (levels at which the client answered).
    messages:
        Messages exchanged: ``2 R + 2``.
    """

    outcome: ClientOutcome
    account: PrivacyAccount
    info: ServerInfo
    setup: DPTTSetup
    rounds: int
    messages: int


def run_dptt(runtime: Runtime, queries: Any, setup: DPTTSetup, *, client: PartyId = "client",
             server: PartyId = "server", progress: Progress | None = None) -> DPTTResult:
    """Run one batch of private queries ``(Q, k)`` on a started runtime (module docstring)."""
    if not isinstance(setup, DPTTSetup):
        raise ConfigError(f"setup must be a DPTTSetup, got {type(setup).__name__}")
    info = runtime.fetch(runtime.call(server, "describe", protocol="setup"))
    q = np.asarray(queries, dtype=np.float64)
    if q.ndim == 1 and info.dim == 1:
        q = q[:, None]
    if q.ndim != 2 or q.shape[1] != info.dim or len(q) == 0:
        raise ConfigError(f"queries must have shape (Q, {info.dim}) with Q >= 1 to match the "
                          f"server's {info.dim}-D data, got shape {q.shape}")
    rounds = runtime.fetch([runtime.call(server, "configure", setup, protocol="setup"),
                            runtime.call(client, "configure", setup, info, protocol="setup")])
    if rounds[0] != rounds[1]:
        raise ProtocolError(f"client and server disagree on the rounds: {rounds}")
    n_rounds = int(rounds[0])
    runtime.call(client, "load_queries", q, protocol="setup")
    msg = runtime.call(client, "open", protocol=PROTOCOL, round=0)
    msg = runtime.call(server, "begin", msg, protocol=PROTOCOL, round=1)
    for r in range(1, n_rounds + 1):
        bits = runtime.call(client, "choose", msg, protocol=PROTOCOL, round=r)
        msg = runtime.call(server, "advance", bits, protocol=PROTOCOL, round=r)
    outcome = runtime.fetch(runtime.call(client, "receive", msg, protocol=PROTOCOL,
                                         round=n_rounds + 1), progress=progress)
    return DPTTResult(outcome=outcome, account=setup.account(info.height), info=info,
                      setup=setup, rounds=n_rounds, messages=2 * n_rounds + 2)


def server_view_bits(messages: Sequence[Any], server: PartyId = "server") -> list[np.ndarray]:
    """The bits the server received, one array per round (from transcript messages)."""
    got = sorted((m for m in messages if m.receiver == server and m.kind == "bits"),
                 key=lambda m: m.round)
    return [np.asarray(m.payload["bits"]) for m in got]


__all__ = ["DPTTResult", "run_dptt", "server_view_bits"]
