"""What one request may cost the DP owner, estimated from public facts alone, and its limits.

The proposed r-N classifier (and the converted k-NN classifiers, which call
it) builds the region overlap graph of a batch of n test instances
(:mod:`~protocols.dp_knn.overlap`) and bounds clique numbers under a work
budget (:mod:`~protocols.dp_knn.cliques`): time and memory quadratic in n
when the regions overlap. The owner estimates a request's cost **before
anything else** -- before the request id is claimed and before the ledger
reserves (no ε is spent) -- and refuses one over its limits with
:class:`~core.errors.RequestTooLarge`, naming the largest batch that fits.

The estimate depends only on what the analyst already knows: n, the feature
count d, the task and algorithm, and the owner's public configuration
(``clique_work_limit``). Never on the private data: the training rows, their
number |D| (which the owner releases only with noise) and the data-dependent
radii and density stay out, so it takes the **worst case**: every one of the
``n(n-1)/2`` pairs of query regions overlaps. It is computed in integer
nanoseconds and bytes from fixed constants, so the same request is accepted
or refused on every machine, whatever its speed or load.

Constants
---------
Measured on a 2-core machine (23 GiB, numpy/scipy wheels),
test instances uniform in ``[0, 1]^d`` with radii joining every pair (or 95%
of them), the worst of three runs rounded up:

* :data:`NS_PER_PAIR` = 180 ns and :data:`NS_PER_PAIR_FEATURE` = 1 ns: the
  overlap graph tests every pair (38-130 ns a pair at d = 5, 177-210 ns at
  d = 200, n = 2,000-8,000) and the clique search's preparation (degeneracy
  order, colouring, bitsets) costs 71-86 ns a pair on a graph of 95% of the
  pairs;
* :data:`NS_PER_WORK_UNIT` = 12 ns: the clique search spent 6.0-7.5 ns a
  unit on an idle machine (n = 3,000 and 6,000, the budget run out; 4.7 ns
  on the phoneme graph of 10,000 queries) and up to about 9.2 ns under the
  load of other jobs; charged in full from n = 3 (smaller graphs are
  complete or single vertices);
* :data:`NS_PER_QUERY` = 200 µs: counts, noise and the rest, linear in n
  (phoneme, 1,000 queries: 90 µs a query in all). It depends on the data's
  size, which the estimate must not read: the quadratic terms dominate past a
  few thousand queries;
* :data:`BYTES_PER_PAIR` = 64: tracemalloc's peak of the whole r-N
  classification is 46.6-49.0 bytes a pair (n = 500-8,000: the edge list,
  its CSR form and the components); the process's peak RSS grew by up to
  56 bytes a pair (below);
  :data:`BYTES_PER_QUERY` = 1 KiB, :data:`BYTES_PER_QUERY_FEATURE` = 16 and
  :data:`BYTES_FIXED` = 8 MiB (the direct test's row blocks).

Checked against one owner request per fresh process (``DPOwner.answer``,
3,000 training rows, random test instances with radii joining 60-100% of
the pairs, n = 2,000-8,000, d = 5 and 50, two seeds: 14 settings, each run
twice on a machine running other jobs, load average about 3): the measured time was
0.01-0.88 of the estimate (0.47-0.88 where the clique search ran; 0.01-0.03
on complete graphs) and the peak RSS growth 0.52-0.86 of it. The first run
of each setting set the margins: with 8 ns a unit and 56 bytes a pair, 3 of
those 14 took longer than estimated (up to 1.19x) and the RSS reached 0.99x
(script: ``benchmarks/bench_request_estimate.py``).
Phoneme (d = 5), 10,000 queries, 64% of the pairs overlapping, took 11.2 s;
the estimate is 20 s and 3.2 GB. The estimate is a guide, not a guarantee:
a loaded machine can take longer.

Limits
------
:data:`DEFAULT_REQUEST_TIME_LIMIT_S` (600 s: a request answered within ten
minutes, far inside a run's patience and the owner's beat-kept timeout) and
:data:`DEFAULT_REQUEST_MEMORY_LIMIT_BYTES` (8 GiB: a third of the
measuring machine, leaving room for the other parties and Ray's object
store). The memory limit is a constant, not read from the machine, so the
decision is the same everywhere. With the defaults the memory limit binds
first: the largest proposed batch is 16,359 queries at d = 5 (an estimated
8.6 GB and 37 s); without it the time limit allows 78,859. The other
algorithms are linear: 3,000,000 queries fit 600 s.
``None`` disables a limit.

Examples
--------
>>> e = estimate_request(3, 2, task="rn", algorithm="proposed", clique_work_limit=1000)
>>> e.nanoseconds, e.bytes
(612546, 8391968)
>>> largest_request(2, task="rn", algorithm="proposed", time_limit_s=600,
...                 memory_limit_bytes=8 * 2**30)
16360
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from ppknn.core.errors import ConfigError, RequestTooLarge
from ppknn.core.progress import BEAT_INTERVAL_S, beat
from ppknn.protocols.dp_knn.cliques import DEFAULT_CLIQUE_WORK

NS_PER_PAIR = 180
"""Nanoseconds per pair of test instances: overlap test and clique preparation."""

NS_PER_PAIR_FEATURE = 1
"""Nanoseconds per pair and feature (the distance's share of the overlap test)."""

NS_PER_WORK_UNIT = 12
"""Nanoseconds per work unit of the clique search (:mod:`~protocols.dp_knn.cliques`)."""

NS_PER_QUERY = 200_000
"""Nanoseconds per test instance of the linear part (counts, noise)."""

BYTES_PER_PAIR = 64
"""Peak bytes per pair of test instances (edge list, CSR, components)."""

BYTES_PER_QUERY = 1024
"""Peak bytes per test instance of the linear part."""

BYTES_PER_QUERY_FEATURE = 16
"""Peak bytes per test instance and feature (the batch and its copies)."""

BYTES_FIXED = 8 * 2**20
"""Peak bytes of any request (the direct overlap test's row blocks)."""

DEFAULT_REQUEST_TIME_LIMIT_S = 600.0
"""The owner's default limit on a request's estimated time (seconds)."""

DEFAULT_REQUEST_MEMORY_LIMIT_BYTES = 8 * 2**30
"""The owner's default limit on a request's estimated peak memory (bytes)."""

GRAPH_ALGORITHMS = frozenset({("rn", "proposed"), ("knn", "interactive"),
                              ("knn", "noninteractive")})
"""``(task, algorithm)`` pairs that build the region overlap graph (quadratic in n)."""

WORST_CASE = "worst case: every pair of query regions overlaps"


@dataclass(frozen=True)
class RequestEstimate:
    """The worst-case cost of one request (:func:`estimate_request`).

    Attributes
    ----------
    n, d:
        Test instances and features.
    pairs:
        Pairs of test instances whose overlap is tested (0 without the graph).
    nanoseconds, bytes:
        Estimated time and peak memory.
    """

    n: int
    d: int
    pairs: int
    nanoseconds: int
    bytes: int

    @property
    def seconds(self) -> float:
        """The estimated time in seconds."""
        return self.nanoseconds / 1e9


def _count(value: object, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < least:
        raise ConfigError(f"{name} = {value!r}; allowed: an integer >= {least}")
    return int(value)


def estimate_request(n: int, d: int, *, task: str, algorithm: str,
                     clique_work_limit: int = DEFAULT_CLIQUE_WORK) -> RequestEstimate:
    """The worst-case time and peak memory of a request of ``n`` instances of ``d`` features.

    Public facts only (module docstring): with a graph algorithm
    (:data:`GRAPH_ALGORITHMS`) every pair is taken to overlap and, from n = 3,
    the clique search to spend its whole budget; the other algorithms cost
    the linear terms alone.
    """
    n, d = _count(n, "n", 0), _count(d, "d", 1)
    work = _count(clique_work_limit, "clique_work_limit", 1)
    graph = (task, algorithm) in GRAPH_ALGORITHMS
    pairs = n * (n - 1) // 2 if graph else 0
    ns = pairs * (NS_PER_PAIR + NS_PER_PAIR_FEATURE * d) + n * NS_PER_QUERY
    if graph and n >= 3:
        ns += work * NS_PER_WORK_UNIT
    size = BYTES_FIXED + pairs * BYTES_PER_PAIR + n * (BYTES_PER_QUERY
                                                       + BYTES_PER_QUERY_FEATURE * d)
    return RequestEstimate(n=n, d=d, pairs=pairs, nanoseconds=ns, bytes=size)


def check_request_limits(time_limit_s: object, memory_limit_bytes: object
                         ) -> tuple[float | None, int | None]:
    """The owner's request limits, checked (a :class:`ConfigError` naming the value)."""
    if time_limit_s is not None:
        real = isinstance(time_limit_s, Real) and not isinstance(time_limit_s, (bool, np.bool_))
        limit = float(time_limit_s) if real else math.nan  # type: ignore[arg-type]
        if not (limit > 0 and math.isfinite(limit)):
            raise ConfigError(f"request_time_limit_s = {time_limit_s!r}; allowed: a finite "
                              "number of seconds > 0, or none (no limit)")
        time_limit_s = limit
    if memory_limit_bytes is not None:
        if (isinstance(memory_limit_bytes, bool)
                or not isinstance(memory_limit_bytes, Integral) or memory_limit_bytes < 1):
            raise ConfigError(f"request_memory_limit_bytes = {memory_limit_bytes!r}; allowed: "
                              "an integer number of bytes >= 1, or none (no limit)")
        memory_limit_bytes = int(memory_limit_bytes)
    return time_limit_s, memory_limit_bytes


def _over(e: RequestEstimate, time_limit_s: float | None, memory_limit_bytes: int | None
          ) -> list[str]:
    """The limits ``e`` exceeds, as ``name = value``."""
    over = []
    if time_limit_s is not None and e.nanoseconds > time_limit_s * 1e9:
        over.append(f"request_time_limit_s = {time_limit_s:g}")
    if memory_limit_bytes is not None and e.bytes > memory_limit_bytes:
        over.append(f"request_memory_limit_bytes = {memory_limit_bytes} "
                    f"({_gb(memory_limit_bytes)})")
    return over


def largest_request(d: int, *, task: str, algorithm: str,
                    clique_work_limit: int = DEFAULT_CLIQUE_WORK,
                    time_limit_s: float | None, memory_limit_bytes: int | None) -> int | None:
    """The largest n whose estimate fits both limits (0: none; ``None``: no limit binds)."""
    def fits(n: int) -> bool:
        e = estimate_request(n, d, task=task, algorithm=algorithm,
                             clique_work_limit=clique_work_limit)
        return not _over(e, time_limit_s, memory_limit_bytes)

    if time_limit_s is None and memory_limit_bytes is None:
        return None
    lo, hi = 0, 1
    while fits(hi):  # the estimate grows with n: double, then bisect
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _gb(size: int) -> str:
    return f"{size / 1e9:,.1f} GB" if size >= 1e8 else f"{size / 1e6:,.1f} MB"


def describe(e: RequestEstimate) -> str:
    """``estimated 1,900 s and 5.0 GB``."""
    t = f"{e.seconds:,.0f}" if e.seconds >= 10 else f"{e.seconds:.3g}"
    return f"estimated {t} s and {_gb(e.bytes)}"


def check_request(n: int, d: int, *, task: str, algorithm: str,
                  clique_work_limit: int = DEFAULT_CLIQUE_WORK,
                  time_limit_s: float | None = DEFAULT_REQUEST_TIME_LIMIT_S,
                  memory_limit_bytes: int | None = DEFAULT_REQUEST_MEMORY_LIMIT_BYTES,
                  what: str = "request") -> RequestEstimate:
    """The estimate of a request, or :class:`~core.errors.RequestTooLarge` if over a limit.

    The message names n, the estimate, the limit(s) exceeded and the largest
    batch that fits (``what`` names the request, e.g. ``"request 3"``).
    """
    e = estimate_request(n, d, task=task, algorithm=algorithm,
                         clique_work_limit=clique_work_limit)
    over = _over(e, time_limit_s, memory_limit_bytes)
    if not over:
        return e
    most = largest_request(d, task=task, algorithm=algorithm,
                           clique_work_limit=clique_work_limit, time_limit_s=time_limit_s,
                           memory_limit_bytes=memory_limit_bytes)
    names = " and ".join(o.split(" = ")[0] for o in over)
    if most:
        fix = f"split it into requests of at most {most:,} queries or raise {names}"
    else:
        fix = f"no batch of {task}:{algorithm} fits; raise {names} or lower clique_work_limit"
    raise RequestTooLarge(f"{what} of {n:,} queries ({d} features, {task}:{algorithm}): "
                          f"{describe(e)} ({WORST_CASE}), over {' and '.join(over)}; {fix}")


class MemoryGate:
    """Admits concurrent requests while their estimated peak memory sums within a limit.

    An owner serving several analysts at once (``max_concurrency > 1``) would
    otherwise hold several requests of up to the limit each. A request whose
    estimate would take the admitted sum over ``limit_bytes`` waits until enough
    of the others have finished; one request alone is always admitted (its own
    estimate was checked against the limit by :func:`check_request`). Waiting
    changes no answer: a request's noise depends on its analyst and id only.
    While it waits it beats (:func:`~core.progress.beat`): the requests it
    waits for are working. ``limit_bytes=None`` admits everything at once.

    Examples
    --------
    >>> gate = MemoryGate(100)
    >>> with gate.admitted(60):
    ...     gate.reserved
    60
    >>> gate.reserved, gate.peak
    (0, 60)
    """

    def __init__(self, limit_bytes: int | None) -> None:
        self.limit_bytes = limit_bytes
        self.reserved = 0
        self.peak = 0
        self._changed = threading.Condition()

    @contextmanager
    def admitted(self, size: int) -> Iterator[None]:
        """Hold ``size`` bytes of the limit while the block runs (waiting for room first)."""
        with self._changed:
            while (self.limit_bytes is not None and self.reserved
                   and self.reserved + size > self.limit_bytes):
                self._changed.wait(timeout=BEAT_INTERVAL_S)
                beat()
            self.reserved += size
            self.peak = max(self.peak, self.reserved)
        try:
            yield
        finally:
            with self._changed:
                self.reserved -= size
                self._changed.notify_all()


__all__ = ["BYTES_FIXED", "BYTES_PER_PAIR", "BYTES_PER_QUERY", "BYTES_PER_QUERY_FEATURE",
           "DEFAULT_REQUEST_MEMORY_LIMIT_BYTES", "DEFAULT_REQUEST_TIME_LIMIT_S",
           "GRAPH_ALGORITHMS", "MemoryGate", "NS_PER_PAIR", "NS_PER_PAIR_FEATURE", "NS_PER_QUERY",
           "NS_PER_WORK_UNIT", "RequestEstimate", "check_request", "check_request_limits",
           "describe", "estimate_request", "largest_request"]
