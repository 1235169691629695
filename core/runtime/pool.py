"""Fan independent jobs out over a Ray cluster (or run them here, one by one).

Used by scenario sweeps: each job is a whole simulation run with the
in-process runtime, so a sweep keeps every core of the cluster busy and
returns results in job order, identical to a sequential run of the same
jobs. Jobs go out in chunks (several jobs per Ray task): a run of a small
scenario takes tens of milliseconds, about what a Ray task costs, so one
task per job would spend as much time scheduling as working.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ppknn.core.errors import ConfigError

T = TypeVar("T")
R = TypeVar("R")

TASKS_PER_CPU = 4
"""Default chunking: about this many tasks per CPU, for load balance and progress."""


def _run_chunk(fn: Callable[[T], R], chunk: Sequence[T]) -> list[R]:
    return [fn(item) for item in chunk]


def chunk_size_for(n_items: int, cpus: float, num_cpus_per_job: float) -> int:
    """Jobs per task so that each CPU gets about :data:`TASKS_PER_CPU` tasks."""
    slots = max(1, int(cpus // num_cpus_per_job)) if num_cpus_per_job > 0 else 1
    return max(1, math.ceil(n_items / (slots * TASKS_PER_CPU)))


def fan_out(fn: Callable[[T], R], items: Sequence[T], *, use_ray: bool,
            address: str | None = None, num_cpus_per_job: float = 1.0,
            chunk_size: int | None = None,
            progress: Callable[[int, int], None] | None = None,
            on_result: Callable[[int, R], None] | None = None) -> list[R]:
    """``[fn(item) for item in items]``, on Ray tasks when ``use_ray``.

    ``fn`` must be importable (module level). Results come back in item
    order whatever order the tasks finish in; an exception in a job is
    re-raised here. ``chunk_size`` jobs run in one task (``None``: about
    :data:`TASKS_PER_CPU` tasks per CPU of the cluster); ``progress`` is
    called with (jobs done, jobs in all) as chunks finish, and ``on_result``
    with (item index, result) for every result as it arrives (before a later
    job's exception is raised: a caller can keep what finished).
    """
    if chunk_size is not None and chunk_size < 1:
        raise ConfigError(f"chunk_size must be >= 1 (or None for automatic), got {chunk_size}")
    if num_cpus_per_job <= 0:
        raise ConfigError(f"num_cpus_per_job must be > 0, got {num_cpus_per_job}")
    total = len(items)
    if not use_ray:
        out = []
        for i, item in enumerate(items):
            out.append(fn(item))
            if on_result:
                on_result(i, out[-1])
            if progress:
                progress(i + 1, total)
        return out
    import ray

    from ppknn.core.runtime.ray_runtime import await_ray_shutdown, init_keeping_sigterm

    await_ray_shutdown()  # a run's Ray still stopping in the background
    if not ray.is_initialized():
        if address:  # attach only when asked, and fail fast when nobody answers
            from ppknn.core.runtime.ray_runtime import check_cluster_answers

            check_cluster_answers(address)
        init_keeping_sigterm(address=address or "local", include_dashboard=False,
                             logging_level=logging.WARNING, log_to_driver=False)
    if not total:
        return []
    size = chunk_size or chunk_size_for(total, ray.cluster_resources().get("CPU", 1),
                                        num_cpus_per_job)
    chunks = [list(items[i : i + size]) for i in range(0, total, size)]
    task: Any = ray.remote(num_cpus=num_cpus_per_job, max_retries=0)(_run_chunk)
    fn_ref = ray.put(fn)
    refs = [task.remote(fn_ref, chunk) for chunk in chunks]
    index = {ref: i for i, ref in enumerate(refs)}
    results: list[list[Any]] = [[] for _ in chunks]
    remaining = list(refs)
    done = 0
    starts = list(range(0, total, size))
    while remaining:
        ready, remaining = ray.wait(remaining, num_returns=1)
        for ref in ready:
            i = index[ref]
            results[i] = ray.get(ref)
            done += len(chunks[i])
            if on_result:
                for j, result in enumerate(results[i]):
                    on_result(starts[i] + j, result)
        if progress:
            progress(done, total)
    return [r for chunk in results for r in chunk]


__all__ = ["TASKS_PER_CPU", "chunk_size_for", "fan_out"]
