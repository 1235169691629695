"""Results folders that never destroy earlier work.

A run writes into a fresh hidden staging folder beside its output
(``.NAME.partial-XXXX``) and only a complete run is renamed into place. An
existing results folder is refused unless the caller asks to overwrite it,
and even then the old folder is removed only after the new one is complete,
so interrupting a run at any point leaves the earlier results untouched.
A failed run keeps what it recorded: its staging folder becomes the output
(or ``NAME.failed-N`` when the output already exists) with a
``failure.json`` saying who failed, where and why. A run refused before
anything ran (bad input) writes nothing.

A run that may take long and keeps its finished work as it goes (``ppknn
reproduce``) stages under a fixed name instead (:func:`stage_of`), so that the
next run finds what a killed one kept, and holds the output's lock
(:func:`output_lock`) so that two runs never write one output at once;
:func:`swap_in` replaces the old folder, as :func:`staged` does.

A run that fails while its protocols run has ``transcript/failure.json``
too: its transcript ends at the failure and is never scored. A run that
fails after them (measuring, scoring, writing) has a complete transcript
and, written as soon as the protocols completed, ``public.json``,
``scenario.json`` and the ground truth: ``ppknn leakage`` scores it.
"""

from __future__ import annotations

import json
import os
import shutil
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ppknn.core.errors import ConfigError, PartyFailure

FAILURE = "failure.json"


MARKER = ".ppknn-output"
"""Written into every folder :func:`staged` completes: the folder holds ppknn's output."""

MARKERS = (MARKER, "scenario.json", "summary.json", "public.json", FAILURE, "sweep.csv",
           "audit.json", "chaos.json", "compare.csv", "deviations.json", "reproduction.json")
"""Files that show a folder holds ppknn output (folders written before :data:`MARKER`)."""


def holds_output(folder: Path) -> bool:
    """Whether ``folder`` holds ppknn output (one of :data:`MARKERS`)."""
    return any((Path(folder) / name).exists() for name in MARKERS)


def check_output(folder: Path, *, overwrite: bool) -> Path:
    """Refuse an output that is a file, or an existing folder unless ``overwrite`` may replace it.

    ``overwrite`` replaces only a folder that holds ppknn output (:func:`holds_output`),
    never another non-empty folder (a user's files), nor one holding the working directory.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"output {str(folder)!r} is an existing file, not a folder; "
                          "choose another output")
    if folder.is_dir() and any(folder.iterdir()):
        if not holds_output(folder):
            raise ConfigError(f"output {str(folder)!r} is a non-empty folder that holds no "
                              "ppknn output; it is never replaced (not even with --overwrite / "
                              "overwrite=True): choose another output")
        if not overwrite:
            raise ConfigError(f"output {str(folder)!r} already holds results; pass --overwrite "
                              "(overwrite=True in Python) to replace them (the old folder is "
                              "removed only once the new run is complete) or choose another "
                              "output")
        here = Path.cwd().resolve()
        if here == folder.resolve() or folder.resolve() in here.parents:
            raise ConfigError(f"output {str(folder)!r} holds the working directory; it cannot "
                              "be replaced from inside: choose another output or run from "
                              "elsewhere")
    _check_parents(folder)
    return folder


def _check_parents(folder: Path) -> None:
    """Refuse an output whose nearest existing parent is a file or cannot be written in."""
    for parent in folder.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"output {str(folder)!r}: {str(parent)!r} is a file, "
                                  "not a folder")
            if not os.access(parent, os.W_OK):
                raise ConfigError(f"output {str(folder)!r}: cannot write in {str(parent)!r}")
            break


def failure_record(exc: BaseException) -> dict[str, Any]:
    """What ``failure.json`` says about ``exc``."""
    record: dict[str, Any] = {"error": type(exc).__name__, "message": str(exc),
                              "traceback": "".join(traceback.format_exception(exc))}
    if isinstance(exc, PartyFailure):
        record.update(party=exc.party, protocol=exc.protocol, round=exc.round,
                      reason=exc.reason, cause=exc.cause)
    return record


def stage_of(folder: Path, tag: str) -> Path:
    """The fixed staging folder of output ``folder`` for runs of kind ``tag``.

    ``.NAME.partial-TAG`` beside ``folder``: one per output and tag, so a run
    killed there is found by the next run of the same output and tag, and never
    by another output's (whose ``NAME`` differs).

    >>> stage_of(Path("results/x"), "reproduce-xiong").as_posix()
    'results/.x.partial-reproduce-xiong'
    """
    folder = Path(folder)
    return folder.parent / f".{folder.name}.partial-{tag}"


def _try_lock(fd: int) -> bool:
    """Take the OS's exclusive lock on ``fd`` without waiting (released when the process dies)."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


@contextmanager
def output_lock(folder: Path) -> Iterator[Path]:
    """Hold the lock of output ``folder`` for the block, or refuse (``ConfigError``).

    The lock is an OS lock on ``.NAME.lock`` beside ``folder`` (its path is yielded):
    a second run of the same output while one holds it is refused, naming the folder
    and the holder's process id; a killed holder releases it with its process, so
    nothing stale is left to clear. The file is removed when the block ends.
    """
    folder = Path(folder)
    path = folder.parent / f".{folder.name}.lock"
    _check_parents(folder)
    made = [p for p in (folder.parent, *folder.parent.parents) if not p.exists()]
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            if not _try_lock(fd):
                try:
                    holder = os.read(fd, 32).decode(errors="replace").strip()
                finally:
                    os.close(fd)
                by = f"process {holder}" if holder.isdigit() else "another run"
                raise ConfigError(f"output {str(folder)!r} is being written by {by} (it holds "
                                  f"{str(path)!r}); wait until it ends or choose another "
                                  "output")
            try:  # the holder before us may have removed the file after we opened it
                if os.fstat(fd).st_ino == os.stat(path).st_ino:
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
    except OSError as exc:
        raise ConfigError(f"output {str(folder)!r}: cannot create its lock {str(path)!r}: "
                          f"{exc.strerror}") from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield path
    finally:
        try:
            path.unlink()  # before the lock goes: a waiting run then opens a new file
        except OSError:
            pass
        os.close(fd)
        for parent in made:  # created for the lock only: left empty, they go too
            try:
                parent.rmdir()
            except OSError:
                break


def swap_in(stage: Path, folder: Path) -> None:
    """Make the complete ``stage`` the output ``folder``; an old ``folder`` goes only after.

    ``stage`` is marked as ppknn output (:data:`MARKER`); the old folder is renamed
    aside, ``stage`` renamed into place, and only then is the old one removed.
    """
    stage, folder = Path(stage), Path(folder)
    (stage / MARKER).write_text("written by ppknn; --overwrite may replace this folder\n")
    if folder.exists():
        old = folder.parent / f".{folder.name}.old-{uuid.uuid4().hex[:8]}"
        folder.rename(old)
        stage.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    else:
        stage.rename(folder)


@contextmanager
def staged(folder: Path, *, overwrite: bool = False) -> Iterator[Path]:
    """A fresh staging folder that becomes ``folder`` when the block completes.

    On an exception, the staging folder (with whatever the run recorded and a
    ``failure.json``) is kept under ``folder`` if that did not exist, else
    under ``folder.failed-N``; the exception propagates. A run refused before
    it recorded anything (bad input) leaves nothing behind.
    """
    folder = check_output(Path(folder), overwrite=overwrite)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        stage = folder.parent / f".{folder.name}.partial-{uuid.uuid4().hex[:8]}"
        stage.mkdir()
    except OSError as exc:
        raise ConfigError(f"output {str(folder)!r} cannot be created: {exc.strerror}") from None
    try:
        yield stage
    except BaseException as exc:
        if not any(p.is_file() for p in stage.rglob("*")):
            # refused before anything ran (bad input): nothing is written
            shutil.rmtree(stage, ignore_errors=True)
            raise
        (stage / FAILURE).write_text(json.dumps(failure_record(exc), indent=1))
        target = folder
        if target.exists():
            n = 1
            while (target := folder.with_name(f"{folder.name}.failed-{n}")).exists():
                n += 1
        stage.rename(target)
        try:  # where the run's record is, for the message the user reads
            exc.kept_folder = target  # type: ignore[attr-defined]
        except AttributeError:
            pass
        if hasattr(exc, "add_note"):  # (Python 3.11+) shown under a traceback too
            exc.add_note(f"what the run recorded is kept in {str(target)!r} ({FAILURE} says why)")
        raise
    swap_in(stage, folder)


def check_complete(folder: Path) -> dict[str, Any] | None:
    """Refuse a results folder whose protocols did not complete.

    Returns ``None`` for a complete run, and the ``failure.json`` record of a
    run that failed only after its protocols had completed (its transcript
    is complete and its public facts were written: it can be scored).
    """
    folder = Path(folder)
    during = folder / "transcript" / FAILURE
    if during.is_file():
        why = json.loads(during.read_text()).get("message", "")
        raise ConfigError(f"{str(folder)!r} holds a failed run ({why}); its transcript ends at "
                          "the failure and is not scored")
    if not (folder / "transcript" / "totals.json").is_file():
        raise ConfigError(f"{str(folder)!r}: the transcript is incomplete (no "
                          "transcript/totals.json); the run did not finish")
    from ppknn.core.transcript import Transcript

    Transcript(folder / "transcript").check()  # every part there and readable
    if not (folder / FAILURE).is_file():
        return None
    record = json.loads((folder / FAILURE).read_text())
    why = record.get("message") or record.get("error", "")
    if not (folder / "public.json").is_file():
        raise ConfigError(f"{str(folder)!r} holds a failed run ({why}) that stopped before its "
                          "public facts (public.json) were written; it is not scored")
    from ppknn.simulations.leakage.truth import BUILDERS, truth_path

    public = json.loads((folder / "public.json").read_text())
    for name in public.get("protocols", {}):
        path = truth_path(folder / "transcript", name)
        if name in BUILDERS and not path.is_file():
            raise ConfigError(f"{str(folder)!r} holds a failed run ({why}) that stopped before "
                              f"its ground truth (transcript/{path.name}) was saved; it is not "
                              "scored")
    return record


__all__ = ["FAILURE", "MARKER", "MARKERS", "check_complete", "check_output", "failure_record",
           "holds_output", "output_lock", "stage_of", "staged", "swap_in"]
