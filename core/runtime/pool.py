"""Fan independent jobs out over a Ray cluster (or run them here, one by one).

Used by scenario sweeps: each job is a whole simulation run with the
in-process runtime inside a Ray task, so a sweep keeps every core of the
cluster busy and returns results in job order, identical to a sequential
run of the same jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def fan_out(fn: Callable[[T], R], items: Sequence[T], *, use_ray: bool,
            address: str | None = None, num_cpus_per_job: float = 1.0,
            progress: Callable[[int, int], None] | None = None) -> list[R]:
    """``[fn(item) for item in items]``, on Ray tasks when ``use_ray``.

    ``fn`` must be importable (module level). Results come back in item
    order whatever order the tasks finish in; an exception in a job is
    re-raised here.
    """
    total = len(items)
    if not use_ray:
        out = []
        for i, item in enumerate(items):
            out.append(fn(item))
            if progress:
                progress(i + 1, total)
        return out
    import ray

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, logging_level="WARNING",
                 log_to_driver=False)
    task = ray.remote(num_cpus=num_cpus_per_job, max_retries=0)(fn)
    refs = [task.remote(item) for item in items]
    index = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * total
    remaining = list(refs)
    done = 0
    while remaining:
        ready, remaining = ray.wait(remaining, num_returns=1)
        for ref in ready:
            results[index[ref]] = ray.get(ref)
            done += 1
        if progress:
            progress(done, total)
    return results


__all__ = ["fan_out"]
