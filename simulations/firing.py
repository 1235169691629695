"""Whether the fault of a ``[faults]`` run fired: a run that completes without it tested nothing.

The runner watches the fault it injects (:class:`FiringWatch`); ``ppknn chaos``
(:mod:`ppknn.simulations.faults`) reports ``fired`` itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ppknn.core.runtime import FaultPlan


class FiringWatch:
    """Whether the fault of a ``[faults]`` run fired (a completed run without it tested nothing).

    The host writes the time to ``FaultPlan.mark`` when the fault fires; a
    fault without a mark of its own gets one in a temporary folder here.
    :meth:`report` warns, naming the fault, when the run completed and the
    mark was never written. A fault with a mark of its own (``ppknn chaos``,
    which reports ``fired`` itself) is left alone.
    """

    def __init__(self, context: Any, *, remote: bool = False) -> None:
        import dataclasses
        import tempfile

        self._folder: Path | None = None
        self._remote = remote
        self.fault: FaultPlan | None = context.fault
        self.context = context
        if self.fault is not None and not self.fault.mark:
            self._folder = Path(tempfile.mkdtemp(prefix="ppknn-fault-"))
            self.fault = dataclasses.replace(self.fault, mark=str(self._folder / "fired-at"))
            self.context = dataclasses.replace(context, fault=self.fault)

    @property
    def fired(self) -> bool | None:
        """Whether the fault fired (``None``: no fault watched here)."""
        if self._folder is None or self.fault is None:
            return None
        return Path(str(self.fault.mark)).is_file()

    def report(self) -> None:
        """Warn that the fault never fired (the run completed); then forget the mark."""
        import warnings

        fired, fault = self.fired, self.fault
        self.discard()
        if fired is False and fault is not None:
            where = (" (on a multi-node cluster the host may have fired it on another "
                     "machine, out of this check's sight)" if self._remote else "")
            warnings.warn(f"[faults] kind = {fault.kind!r} on party {fault.party!r} (method "
                          f"{fault.method!r}, occurrence {fault.occurrence}) never fired: "
                          "the run completed without it and tested nothing; lower "
                          "faults.occurrence or name a method the party calls"
                          f"{where}", UserWarning, stacklevel=3)

    def discard(self) -> None:
        """Remove the temporary mark folder (if any)."""
        if self._folder is not None:
            import shutil

            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


__all__ = ["FiringWatch"]
