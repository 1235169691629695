"""Progress beats: a long party step says it is still working.

A runtime fails a run when a party makes no progress for ``party_timeout_s``
(a hung or crashed party is named promptly). Progress is a call that
completes -- or a **beat**: party code that can run long (the DP owner's
overlap graph, clique search and counts on a big request) calls
:func:`beat` in its loops, and while beats keep coming the timeout does
not end the call. A party that stops beating (stuck in a loop that does
not beat, deadlocked, killed) is failed ``party_timeout_s`` after its last
beat, as before.

The step's host installs where beats go (:func:`beats_to`) around each
call: the in-process runtime restarts the running call's clock; on Ray the
host counts the beat at the transcript recorder, the one actor every host
already talks to, where the driver looks when a call's time is up. Party
code only calls :func:`beat`: it knows nothing of the runtime, and outside
a runtime (a unit test, a notebook) a beat does nothing.

A beat costs a clock read; at most one per :data:`BEAT_INTERVAL_S` per step
goes further.

Examples
--------
>>> from ppknn.core.progress import beat, beats_to
>>> seen = []
>>> with beats_to(lambda: seen.append(1)):
...     beat(); beat()  # the second is within the interval: not sent
>>> len(seen)
1
>>> beat()  # no runtime: nothing happens
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable

BEAT_INTERVAL_S = 0.25
"""At most one beat per this many seconds goes to the runtime (per running step)."""


class _Sink:
    __slots__ = ("last", "send")

    def __init__(self, send: Callable[[], None]) -> None:
        self.send = send
        self.last = -float("inf")


_sink: contextvars.ContextVar[_Sink | None] = contextvars.ContextVar("ppknn_beats",
                                                                    default=None)


def beat() -> None:
    """Say the running party step is still making progress (see the module docstring)."""
    sink = _sink.get()
    if sink is None:
        return
    now = time.monotonic()
    if now - sink.last >= BEAT_INTERVAL_S:
        sink.last = now
        sink.send()


class beats_to:  # noqa: N801 - used as a function: ``with beats_to(send):``
    """Send the beats of the step run inside to ``send`` (None: nowhere).

    A context manager; a class rather than a generator, since a host enters one around
    every party step (a generator-based one costs several times as much per call).
    """

    __slots__ = ("_send", "_token")

    def __init__(self, send: Callable[[], None] | None) -> None:
        self._send = send

    def __enter__(self) -> None:
        self._token = _sink.set(None if self._send is None else _Sink(self._send))

    def __exit__(self, *exc: object) -> None:
        _sink.reset(self._token)


__all__ = ["BEAT_INTERVAL_S", "beat", "beats_to"]
