"""fan_out: job order, chunking, progress and errors, on Ray and one by one."""

from __future__ import annotations

import pytest

from ppknn.core.errors import ConfigError
from ppknn.core.runtime.pool import TASKS_PER_CPU, chunk_size_for, fan_out


def square_or_fail(x: int) -> int:
    if x == 13:
        raise ValueError("job 13 failed on purpose")
    return x * x


@pytest.mark.parametrize("n, cpus, per_job, expected", [
    (100, 2, 1.0, 13),   # 8 tasks of <= 13 jobs
    (8, 2, 1.0, 1),      # fewer jobs than slots x tasks per slot: one job per task
    (100, 2, 0.5, 7),    # 4 slots
    (0, 2, 1.0, 1),
    (100, 0.5, 1.0, 25),  # less than one CPU: one slot
])
def test_chunk_size_for(n, cpus, per_job, expected):
    assert chunk_size_for(n, cpus, per_job) == expected
    if n:
        slots = max(1, int(cpus // per_job))
        assert -(-n // expected) <= slots * TASKS_PER_CPU


def test_sequential_order_and_progress():
    seen = []
    out = fan_out(square_or_fail, [3, 1, 2], use_ray=False,
                  progress=lambda d, t: seen.append((d, t)))
    assert out == [9, 1, 4]
    assert seen == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("kwargs, message", [
    ({"chunk_size": 0}, "chunk_size must be >= 1"),
    ({"num_cpus_per_job": 0}, "num_cpus_per_job must be > 0"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        fan_out(square_or_fail, [1], use_ray=False, **kwargs)


@pytest.mark.ray
@pytest.mark.parametrize("chunk_size", [None, 1, 3, 7, 50])
def test_ray_results_in_job_order_for_any_chunking(ray_local, chunk_size):
    items = list(range(20))
    items.remove(13)
    seen = []
    out = fan_out(square_or_fail, items, use_ray=True, chunk_size=chunk_size,
                  progress=lambda d, t: seen.append((d, t)))
    assert out == [x * x for x in items]
    assert seen[-1] == (len(items), len(items))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


@pytest.mark.ray
def test_ray_job_error_is_raised_here(ray_local):
    with pytest.raises(ValueError, match="job 13 failed on purpose"):
        fan_out(square_or_fail, list(range(20)), use_ray=True, chunk_size=4)


@pytest.mark.ray
def test_ray_no_jobs(ray_local):
    assert fan_out(square_or_fail, [], use_ray=True) == []
