"""Runtimes: where parties live and how calls reach them.

``InProcessRuntime`` and ``RayRuntime`` share one interface
(:class:`~core.runtime.base.Runtime`). This package is the only place in the
framework that imports Ray, and it does so lazily.
"""

from ppknn.core.runtime.base import Call, RunContext, Runtime, Step
from ppknn.core.runtime.host import FaultPlan, PartyHost, PartySpec
from ppknn.core.runtime.inprocess import InProcessRuntime
from ppknn.core.runtime.typed import PREVIOUS, Parties, typed


def make_runtime(kind: str, *, address: str | None = None, num_cpus: int | None = None,
                 **options) -> Runtime:
    """Build a runtime by name: ``"inprocess"`` (alias ``"local"``) or ``"ray"``."""
    from ppknn.core.errors import ConfigError

    if kind in ("inprocess", "local"):
        return InProcessRuntime()
    if kind == "ray":
        from ppknn.core.runtime.ray_runtime import RayRuntime

        return RayRuntime(address=address, num_cpus=num_cpus, **options)
    raise ConfigError(f"unknown runtime {kind!r}; allowed: 'inprocess', 'ray'")


__all__ = [
    "Call",
    "FaultPlan",
    "InProcessRuntime",
    "PREVIOUS",
    "Parties",
    "PartyHost",
    "PartySpec",
    "RunContext",
    "Runtime",
    "Step",
    "make_runtime",
    "typed",
]
