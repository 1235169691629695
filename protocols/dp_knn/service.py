"""Serving one DP owner to concurrent analysts: asyncio front, worker threads behind.

The standard runtimes host a party in a plain actor that runs one call at
a time. :class:`DPOwnerService` instead accepts many requests at once: each
:meth:`~DPOwnerService.submit` is a coroutine that hands the owner's
:meth:`~parties.dp_owner.DPOwner.answer` to a thread pool, so batches are
analysed and answered in parallel while the owner's
:class:`~core.dp.PrivacyLedger` (one lock around every check-and-spend)
guarantees that the analysts together never spend more than the budget.

Every request and every answer (or refusal, kind ``"refused"`` with ε 0) is
recorded in a :class:`~core.transcript.TranscriptRecorder`, stamped with a
sequence number per (sender, receiver) under a lock; the service does not
encrypt (use a runtime with channels for that).

On Ray, :func:`serve_on_ray` starts the same class as an *async actor*
(``max_concurrency`` coroutines at a time); Ray is imported lazily, only
there.

Examples
--------
>>> import asyncio, numpy as np
>>> from parties.analyst import Analyst
>>> from protocols.dp_knn.protocol import Query
>>> owner = dict(party_id="owner", X=np.array([[0.1], [0.9]]), y=np.array([0, 1]),
...              classes=[0, 1], lower=[0.0], upper=[1.0], epsilon=1.0, run_id="r")
>>> service = DPOwnerService(owner=owner)
>>> alice = Analyst(party_id="alice", owner="owner", run_id="r")
>>> q = Query(task="rn", algorithm="baseline-laplace", x=np.array([[0.1]]), radius=0.2,
...           epsilon=0.5)
>>> reply = asyncio.run(service.submit(alice.request(q)))
>>> alice.receive(reply).epsilon, asyncio.run(service.close())["messages"]
(0.5, 2)
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from core.dp import LedgerEntry, PrivacyCost
from core.errors import BudgetExhausted
from core.messages import Message, encode_arrays
from core.transcript import TranscriptRecorder, make_record
from parties.dp_owner import DPOwner
from protocols.dp_knn.protocol import PROTOCOL, REFUSED


class DPOwnerService:
    """A :class:`~parties.dp_owner.DPOwner` answering concurrent analysts.

    Parameters
    ----------
    owner:
        Keyword arguments of :class:`~parties.dp_owner.DPOwner`.
    transcript_dir:
        Where the transcript's Parquet parts go (``None``: in memory).
    workers:
        Threads answering requests in parallel.
    """

    def __init__(self, *, owner: Mapping[str, Any], transcript_dir: str | os.PathLike[str] | None
                 = None, workers: int = 4) -> None:
        self.owner = DPOwner(**dict(owner))
        self.recorder = TranscriptRecorder(transcript_dir)
        self._pool = ThreadPoolExecutor(max_workers=int(workers),
                                        thread_name_prefix=f"dp-owner-{self.owner.party_id}")
        self._lock = threading.Lock()
        self._seq: dict[tuple[str, str], int] = {}
        self._in_flight = 0
        self._peak = 0

    def _record(self, message: Message) -> Message:
        with self._lock:
            key = (message.sender, message.receiver)
            seq = self._seq.get(key, 0)
            self._seq[key] = seq + 1
            stamped = message.with_seq(seq)
            payload = encode_arrays(stamped.payload)
            row = make_record(stamped, payload=payload,
                              wire_bytes=len(stamped.associated_data()) + len(payload))
            self.recorder.append([row])
        return stamped

    async def submit(self, request: Message) -> Message:
        """Answer one request; raises :class:`~core.errors.BudgetExhausted` when it does not fit."""
        self._record(request)
        loop = asyncio.get_running_loop()
        with self._lock:
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
        try:
            reply = await loop.run_in_executor(self._pool, self.owner.answer, request)
        except BudgetExhausted:
            refusal = Message(run_id=request.run_id, protocol=PROTOCOL, round=request.round,
                              seq=-1, sender=self.owner.party_id, receiver=request.sender,
                              kind=REFUSED,
                              payload={"request": np.asarray(request.payload["request"]),
                                       "epsilon": np.asarray(0.0)})
            self._record(refusal)
            raise
        finally:
            with self._lock:
                self._in_flight -= 1
        return self._record(reply)

    async def peak_concurrency(self) -> int:
        """The most requests that were being answered at the same time."""
        return self._peak

    async def remaining(self, analyst: str | None = None) -> PrivacyCost:
        """What the owner (or ``analyst``) can still spend."""
        return self.owner.remaining(analyst)

    async def spent(self, analyst: str | None = None) -> PrivacyCost:
        """What the owner (or ``analyst``) has spent."""
        return self.owner.ledger.spent(analyst)

    async def entries(self) -> tuple[LedgerEntry, ...]:
        """The ledger's committed charges."""
        return self.owner.ledger.entries

    async def close(self) -> dict[str, Any]:
        """Stop the workers, flush the transcript; returns communication totals."""
        self._pool.shutdown(wait=True)
        with self._lock:
            return self.recorder.close()

    async def transcript(self) -> Any:
        """The transcript recorded so far, as a table."""
        with self._lock:
            return self.recorder.table()


def serve_on_ray(owner: Mapping[str, Any], *, max_concurrency: int = 16,
                 transcript_dir: str | os.PathLike[str] | None = None, workers: int = 4,
                 **actor_options: Any) -> Any:
    """Start a :class:`DPOwnerService` as a Ray async actor; returns its handle.

    Call ``handle.submit.remote(message)`` from any number of analysts.
    """
    from core.runtime.actors import start_actor

    return start_actor(DPOwnerService, max_concurrency=max_concurrency,
                       kwargs={"owner": dict(owner),
                               "transcript_dir": str(transcript_dir) if transcript_dir else None,
                               "workers": workers},
                       **actor_options)


__all__ = ["DPOwnerService", "serve_on_ray"]
