"""Start a plain class as a Ray actor (async classes become async actors).

For services that serve many callers concurrently (e.g. the DP owner's
async front end); protocol code stays free of Ray imports.
"""

from __future__ import annotations

from typing import Any


def start_actor(cls: type, *, max_concurrency: int = 16, num_cpus: float = 0,
                kwargs: dict[str, Any] | None = None, **options: Any) -> Any:
    """``cls(**kwargs)`` as a Ray actor; returns its handle (Ray is started if needed)."""
    import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    settings: dict[str, Any] = {"num_cpus": num_cpus, "max_concurrency": int(max_concurrency),
                                **options}
    actor: Any = ray.remote(**settings)(cls)
    return actor.remote(**(kwargs or {}))


__all__ = ["start_actor"]
