"""Fault injection: run a scenario with one injected fault and check that it fails cleanly.

A fault is injected at the runtime's host, around the calls of one party
(:class:`~core.runtime.host.FaultPlan`: party, method, call number, kind),
so party and protocol code run unchanged and, with no fault configured,
exactly as in an honest run. A scenario asks for one with a ``[faults]``
section; ``ppknn chaos SCENARIO`` runs the scenario once per fault kind.

A case *holds* when the run ends in :class:`~core.errors.PartyFailure` (or
:class:`~core.errors.IntegrityError`, for messages dropped, duplicated,
reordered or tampered with on the wire) that names the faulty party,
within ``party_timeout_s`` + :data:`SLACK_S` seconds, with the transcript
recorded up to the failure readable on disk (``totals.json`` written) and a
``failure.json`` beside it saying who failed, where and why.

Examples
--------
>>> [c.kind for c in chaos_cases("owner-01", channels=True)][:3]
['kill', 'raise', 'hang']
>>> "tamper" in [c.kind for c in chaos_cases("owner-01", channels=False)]
False
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppknn.core.errors import ConfigError, IntegrityError, PartyFailure, PpknnError
from ppknn.core.runtime import FaultPlan
from ppknn.core.runtime.host import FAULT_KINDS
from ppknn.core.transcript import Transcript
from ppknn.simulations.reporting import jsonio

SLACK_S = 5.0
"""Seconds a failure may take beyond ``party_timeout_s`` (detection and closing)."""

SLOW_FACTOR = 3.0
"""A slow link waits this many times ``party_timeout_s`` per call: the run must time out."""


def chaos_cases(party: str, *, channels: bool, method: str = "*", occurrence: int = 1,
                party_timeout_s: float = 2.0,
                kinds: Sequence[str] | None = None) -> list[FaultPlan]:
    """One fault of each kind on ``party`` (``tamper`` only with channels on).

    Without channels a flipped payload byte cannot be detected by design
    (the channel only checks the receiver and sequence numbers), so it is
    left out unless asked for by name.
    """
    chosen = list(kinds) if kinds else [k for k in FAULT_KINDS if channels or k != "tamper"]
    unknown = sorted(set(chosen) - set(FAULT_KINDS))
    if unknown:
        raise ConfigError(f"fault kinds {unknown} unknown; allowed: {list(FAULT_KINDS)}")
    return [FaultPlan(party, method, occurrence, kind,
                      SLOW_FACTOR * party_timeout_s if kind == "slow" else None)
            for kind in chosen]


@dataclass(frozen=True)
class ChaosOutcome:
    """How one injected fault ended.

    Attributes
    ----------
    fault:
        The fault injected.
    error:
        The exception type the run ended with (``""``: it completed).
    message:
        Its message.
    named:
        Whether the error names the faulty party.
    seconds:
        From the fault firing (the host notes the time) to the error
        propagating out of the run, transcript closed; from the protocols'
        start when the fault never said it fired.
    bound_s:
        ``party_timeout_s`` + :data:`SLACK_S`.
    transcript_rows:
        Messages on disk (``-1``: the transcript cannot be read).
    closed:
        ``totals.json`` and ``failure.json`` were written.
    fired:
        The fault fired: its party made the ``occurrence``-th matching call (or sent or
        received that many messages). A run that completes without it tested nothing.
    """

    fault: FaultPlan
    error: str
    message: str
    named: bool
    seconds: float
    bound_s: float
    transcript_rows: int
    closed: bool
    fired: bool = True

    @property
    def ok(self) -> bool:
        """The run failed cleanly: the right error, naming the party, in time, transcript kept."""
        return (self.error in ("PartyFailure", "IntegrityError") and self.named
                and self.seconds <= self.bound_s and self.transcript_rows >= 0 and self.closed)

    def as_dict(self) -> dict[str, Any]:
        """A row of ``chaos.json``."""
        return {"kind": self.fault.kind, "party": self.fault.party, "method": self.fault.method,
                "occurrence": self.fault.occurrence, "error": self.error,
                "message": self.message, "names_party": self.named,
                "seconds": round(self.seconds, 3), "bound_s": self.bound_s,
                "transcript_rows": self.transcript_rows, "closed": self.closed,
                "fired": self.fired, "ok": self.ok}


def run_with_fault(scenario: Any, fault: FaultPlan, transcript_dir: Path, *,
                   runtime: Any = None) -> ChaosOutcome:
    """Run ``scenario`` with ``fault`` injected; the transcript goes to ``transcript_dir``."""
    from ppknn.simulations.runner import execute

    transcript_dir = Path(transcript_dir)
    transcript_dir.parent.mkdir(parents=True, exist_ok=True)
    mark = transcript_dir.parent / "fault-fired-at"
    faulty = scenario.with_overrides(faults={**fault_section(fault), "mark": str(mark)})
    bound = faulty.runtime.party_timeout_s + SLACK_S
    started: list[float] = []

    def progress(phase: str, done: int, total: int) -> None:
        if not started:  # the parties are up: the protocols start now
            started.append(time.monotonic())

    error, message = "", ""
    try:
        execute(faulty, transcript_dir=transcript_dir, runtime=runtime, progress=progress)
    except (PartyFailure, IntegrityError) as exc:
        error, message = type(exc).__name__, str(exc)
    except PpknnError as exc:
        error, message = type(exc).__name__, str(exc)
    ended = time.time()
    fired = float(mark.read_text()) if mark.is_file() else None
    if fired is not None:  # from the fault firing (in whichever process) to the error
        seconds = max(0.0, ended - fired)
    else:  # it never fired, or its party died before saying so: from the protocols' start
        seconds = time.monotonic() - (started[0] if started else time.monotonic())
    try:
        rows = len(Transcript(transcript_dir)) if transcript_dir.is_dir() else -1
    except Exception:  # noqa: BLE001 - an unreadable transcript is what this measures
        rows = -1
    closed = ((transcript_dir / "totals.json").is_file()
              and (transcript_dir / "failure.json").is_file())
    # a party that died before it could note the time has fired too: it failed the run
    return ChaosOutcome(fault, error, message.splitlines()[0] if message else "",
                        repr(fault.party) in message, seconds, bound, rows, closed,
                        fired=fired is not None or bool(error))


def fault_section(fault: FaultPlan) -> dict[str, Any]:
    """The ``[faults]`` table that asks for ``fault``."""
    out: dict[str, Any] = {"party": fault.party, "method": fault.method,
                           "occurrence": fault.occurrence, "kind": fault.kind}
    if fault.delay_s is not None:
        out["delay_s"] = fault.delay_s
    return out


def party_methods(factory: Any) -> list[str] | None:
    """The methods a fault can target on a party built by ``factory`` (``None``: unknown).

    A party class's public methods: the host calls nothing else.

    Examples
    --------
    >>> class Party:
    ...     def step(self): ...
    ...     def _helper(self): ...
    >>> party_methods(Party), party_methods(lambda: None)
    (['step'], None)
    """
    if not isinstance(factory, type):
        return None
    return sorted(m for m in dir(factory)
                  if not m.startswith("_") and callable(getattr(factory, m, None)))


def chaos_plan(scenario: Any, *, party: str | None = None,
               kinds: Sequence[str] | None = None, method: str = "*",
               occurrence: int = 1) -> list[FaultPlan]:
    """The faults :func:`run_chaos` injects, every argument checked (nothing runs).

    ``party`` (default: the second party) must be a party of the scenario,
    ``method`` one of its methods (:func:`party_methods`) or ``"*"``, and
    ``kinds`` fault kinds; a bad value raises :class:`ConfigError` naming it and
    what is allowed.
    """
    from ppknn.simulations.runner import prepare

    specs = {s.party_id: s for s in prepare(scenario).specs()}
    names = list(specs)
    victim = party or (names[1] if len(names) > 1 else names[0])
    if victim not in specs:
        raise ConfigError(f"--party {victim!r} is not a party of the scenario; parties: "
                          f"{names[:20]}{' ...' if len(names) > 20 else ''}")
    allowed = party_methods(specs[victim].factory)
    if method != "*" and allowed is not None and method not in allowed:
        raise ConfigError(f"--method {method!r} is not a method of party {victim!r} "
                          f"({specs[victim].factory.__name__}); its methods: "
                          f"{', '.join(allowed)}, or '*' for any")
    return chaos_cases(victim, channels=scenario.runtime.channels, method=method,
                       occurrence=occurrence, party_timeout_s=scenario.runtime.party_timeout_s,
                       kinds=kinds)


def run_chaos(scenario: Any, output: Path, *, party: str | None = None,
              kinds: Sequence[str] | None = None, method: str = "*", occurrence: int = 1,
              progress: Callable[[FaultPlan, ChaosOutcome], None] | None = None,
              cases: Sequence[FaultPlan] | None = None) -> list[ChaosOutcome]:
    """Run ``scenario`` once per fault kind on ``party`` (default: the second party).

    Each case writes its transcript to ``output/<kind>/transcript``; the
    outcomes go to ``output/chaos.json``. ``output`` must not exist yet, or be
    empty (a staging folder). The faults are :func:`chaos_plan`'s (or ``cases``,
    planned already), checked before anything runs.
    """
    output = Path(output)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise ConfigError(f"output {str(output)!r} already exists; chaos runs write a fresh "
                          "folder (choose another --output)")
    if cases is None:
        cases = chaos_plan(scenario, party=party, kinds=kinds, method=method,
                           occurrence=occurrence)
    output.mkdir(parents=True, exist_ok=True)
    outcomes = []
    for fault in cases:
        outcome = run_with_fault(scenario, fault, output / fault.kind / "transcript")
        outcomes.append(outcome)
        if progress is not None:
            progress(fault, outcome)
    (output / "chaos.json").write_text(jsonio.dumps([o.as_dict() for o in outcomes]))
    return outcomes


__all__ = ["SLACK_S", "ChaosOutcome", "chaos_cases", "chaos_plan",
           "fault_section", "party_methods", "run_chaos", "run_with_fault"]
