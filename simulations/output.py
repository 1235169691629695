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

What ``--overwrite`` may replace is decided by construction, never by a
common file name: a folder is ppknn's when it holds the marker ppknn writes
into every results folder it completes or keeps (:data:`MARKER`, a regular
file with ppknn's signature), or -- folders written before the marker -- when
it holds one of ppknn's records and nothing but results files
(:func:`legacy_output`: no hidden entry, no symbolic link, only ``.json``,
``.csv``, ``.png``, ... files). The home folder, ``/``, the working directory
and its parents are never replaced, marker or not. Every writing command holds
the output's lock (:func:`output_lock`) from its check to its final rename,
the rename never replaces a folder that appeared meanwhile (both are kept and
the message says where the new results are), and a file rewritten in an
existing folder (:func:`write_file`, :func:`rewriting`) replaces a symbolic
link at its name instead of writing through it.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import tempfile
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ppknn.core.errors import ConfigError, PartyFailure

FAILURE = "failure.json"


MARKER = ".ppknn-output"
"""Written into every folder ppknn completes or keeps: the folder holds ppknn's output."""

SIGNATURE = "written by ppknn; --overwrite may replace this folder\n"
"""What :data:`MARKER` says (a file holding anything else is not ppknn's marker)."""

MARKERS = (MARKER, "scenario.json", "summary.json", "public.json", FAILURE, "sweep.csv",
           "audit.json", "chaos.json", "compare.csv", "compare-run.json", "deviations.json",
           "reproduction.json")
"""ppknn's records: one of them (besides results files only) marks a folder written
before :data:`MARKER` (:func:`legacy_output`)."""

RESULT_SUFFIXES = frozenset({".json", ".jsonl", ".csv", ".png", ".parquet", ".md", ".npz",
                             ".txt", ".svg", ".pdf", ".log"})
"""The files a folder written before :data:`MARKER` may hold (:func:`legacy_output`)."""

LEGACY_LIMIT = 200_000
"""A folder with more entries is not examined: it is not taken for ppknn's."""


class OutputConflict(ConfigError):
    """The output cannot take the finished results; they are kept elsewhere (``kept_folder``)."""


def check_flag(name: str, value: Any) -> bool:
    """``value`` if it is a real ``bool``, else ``TypeError`` naming ``name`` and the value.

    >>> check_flag("overwrite", "no")
    Traceback (most recent call last):
    ...
    TypeError: overwrite = 'no': allowed: True or False (a bool)
    """
    if type(value) is not bool:
        raise TypeError(f"{name} = {value!r}: allowed: True or False (a bool)")
    return value


def write_marker(folder: Path) -> None:
    """Mark ``folder`` as ppknn's output (:data:`MARKER`, written without following a link)."""
    write_file(Path(folder) / MARKER, SIGNATURE.encode())


def _marked(folder: Path) -> bool:
    """Whether ``folder`` holds ppknn's :data:`MARKER`: a regular file with its signature."""
    path = Path(folder) / MARKER
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return os.read(fd, len(SIGNATURE) + 1).decode(errors="replace") == SIGNATURE
    finally:
        os.close(fd)


def legacy_output(folder: Path) -> bool:
    """Whether ``folder`` (without :data:`MARKER`) has the layout of an older ppknn's results.

    Conservative: one of ppknn's records (:data:`MARKERS`) at the top, and nothing but
    results files below -- no hidden entry, no symbolic link, no file outside
    :data:`RESULT_SUFFIXES`, at most :data:`LEGACY_LIMIT` entries. A home or project folder
    (``.bashrc``, ``src/*.py``, ``Documents/x.odt``) is never taken for one.
    """
    folder = Path(folder)
    if not any((folder / name).is_file() and not (folder / name).is_symlink()
               for name in MARKERS):
        return False
    seen = 0
    for root, dirs, files in os.walk(folder, followlinks=False):
        seen += len(dirs) + len(files)
        if seen > LEGACY_LIMIT:
            return False
        for name in dirs:
            if name.startswith(".") or os.path.islink(os.path.join(root, name)):
                return False
        for name in files:
            path = os.path.join(root, name)
            if (name.startswith(".") and name != MARKER) or os.path.islink(path) \
                    or Path(name).suffix.lower() not in RESULT_SUFFIXES:
                return False
    return True


def holds_output(folder: Path) -> bool:
    """Whether ``folder`` is ppknn's output: :data:`MARKER`, or an older ppknn's layout."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        return False
    return _marked(folder) or legacy_output(folder)


def protected(folder: Path) -> str | None:
    """Why ``folder`` may never be replaced (``None``: it may, if it is ppknn's).

    The file-system root, the home folder, the working directory and its parents.
    """
    where = Path(folder).resolve()
    here = Path.cwd().resolve()
    if where == Path(where.anchor):
        return "is the root of the file system"
    try:
        if where == Path.home().resolve():
            return "is the home folder"
    except (KeyError, RuntimeError):  # no home (HOME unset, no passwd entry)
        pass
    if where == here or where in here.parents:
        return "holds the working directory"
    return None


def check_output(folder: Path, *, overwrite: bool) -> Path:
    """Refuse an output that is a file, or an existing folder unless ``overwrite`` may replace it.

    ``overwrite`` replaces only a folder that holds ppknn output (:func:`holds_output`),
    never another non-empty folder (a user's files), nor the home folder, the root or a
    folder holding the working directory (:func:`protected`). ``overwrite`` must be a bool.
    """
    check_flag("overwrite", overwrite)
    folder = Path(folder)
    long = [part for part in folder.parts if len(os.fsencode(part)) > 255]
    if "\0" in str(folder) or long:  # before any look at the file system (it would raise)
        raise ConfigError(f"output {str(folder)[:80]!r}... " + (
            "holds a NUL byte; allowed: a path without one" if not long else
            f"has a folder name of {len(os.fsencode(long[0]))} bytes; allowed: at most 255 "
            "bytes per folder name"))
    if folder.exists() and protected(folder) is not None:
        raise ConfigError(f"output {str(folder)!r} {protected(folder)}; it is never written "
                          "into or replaced (not even with --overwrite / overwrite=True): "
                          "choose another output")
    if folder.name in ("", ".", ".."):
        raise ConfigError(f"output {str(folder)!r} names no folder of its own; give a "
                          "folder's name (e.g. results/run-1)")
    if folder.is_symlink():
        raise ConfigError(f"output {str(folder)!r} is a symbolic link (to "
                          f"{os.readlink(folder)!r}); give a folder's own path, never a link")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"output {str(folder)!r} is an existing file, not a folder; "
                          "choose another output")
    if folder.is_dir() and any(folder.iterdir()):
        if not holds_output(folder):
            raise ConfigError(f"output {str(folder)!r} is a non-empty folder that holds no "
                              f"ppknn output (no {MARKER} written by ppknn, and files a "
                              "results folder never holds); it is never replaced (not even "
                              "with --overwrite / overwrite=True): choose another output, or "
                              "if its files are results you no longer need, remove it by "
                              f"hand (rm -r {str(folder)!r})")
        if not overwrite:
            raise ConfigError(f"output {str(folder)!r} already holds results; pass --overwrite "
                              "(overwrite=True in Python) to replace them (the old folder is "
                              "removed only once the new run is complete) or choose another "
                              "output")
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


def _open_lock(path: Path, folder: Path) -> int:
    """Open (or create) the lock file ``path`` itself: a symbolic link there is refused."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise ConfigError(f"output {str(folder)!r}: its lock {str(path)!r} is a symbolic "
                              "link, never followed; remove it (it is not ppknn's) and run "
                              "again") from None
        raise
    import stat

    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(f"output {str(folder)!r}: its lock {str(path)!r} is not a regular "
                          "file; remove it (it is not ppknn's) and run again")
    return fd


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
            fd = _open_lock(path, folder)
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
        os.ftruncate(fd, 0)  # our own regular file: never a link's target (_open_lock)
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


def _rename_noreplace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst`` unless ``dst`` exists (``FileExistsError``), atomically.

    Linux: ``renameat2(RENAME_NOREPLACE)``; elsewhere (or a file system without it) a
    check just before the rename (a plain rename would replace an empty folder there).
    """
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = getattr(libc, "renameat2", None)
        if fn is not None:
            at_fdcwd, noreplace = -100, 1
            if fn(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), noreplace) == 0:
                return
            err = ctypes.get_errno()
            if err == errno.EEXIST:
                raise FileExistsError(err, os.strerror(err), str(dst))
            if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
                raise OSError(err, os.strerror(err), str(src))
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst))
    os.rename(src, dst)


def _keep_aside(stage: Path, folder: Path, suffix: str) -> Path:
    """Rename ``stage`` to the first free ``folder.SUFFIX-N`` (never replacing anything)."""
    n = 1
    while True:
        target = folder.with_name(f"{folder.name}.{suffix}-{n}")
        try:
            _rename_noreplace(stage, target)
            return target
        except FileExistsError:
            n += 1


def swap_in(stage: Path, folder: Path, *, overwrite: bool) -> None:
    """Make the complete ``stage`` the output ``folder``; an old ``folder`` goes only after.

    ``stage`` is marked as ppknn output (:data:`MARKER`). With no ``folder`` there,
    ``stage`` is renamed into place without replacing anything that appeared meanwhile.
    An existing ``folder`` is replaced only with ``overwrite``, if it is still ppknn's
    and not protected (checked again here): renamed aside, ``stage`` renamed into place,
    and only then is the old one removed. Otherwise both are kept: ``stage`` goes to
    ``folder.new-N`` and :class:`OutputConflict` says so (its ``kept_folder``).
    """
    stage, folder = Path(stage), Path(folder)
    check_flag("overwrite", overwrite)
    write_marker(stage)
    if not os.path.lexists(folder):
        try:
            _rename_noreplace(stage, folder)
            return
        except FileExistsError:
            pass
    why = None
    if not overwrite:
        why = "appeared while the run went on"
    elif folder.is_symlink() or not folder.is_dir():
        why = "is no longer a folder"
    elif protected(folder) is not None:
        why = protected(folder)
    elif not holds_output(folder):
        why = "holds files that are not ppknn output"
    old = None
    if why is None:
        old = folder.parent / f".{folder.name}.old-{uuid.uuid4().hex[:8]}"
        folder.rename(old)
        try:
            _rename_noreplace(stage, folder)
            shutil.rmtree(old, ignore_errors=True)
            return
        except FileExistsError:  # something appeared in between: both are kept
            why = "appeared while the results were being moved into place"
    kept = _keep_aside(stage, folder, "new")
    also = (f"; the results it held are kept in {str(old)!r}" if old is not None else "")
    exc = OutputConflict(f"output {str(folder)!r} {why}; it is left as it is (not replaced) "
                         f"and the new results are kept in {str(kept)!r}{also}")
    exc.kept_folder = kept  # type: ignore[attr-defined]
    raise exc


def refuse_links(folder: Path) -> None:
    """Refuse (``ConfigError``) a folder holding a symbolic link: nothing is written through one.

    Checked before ppknn writes into an existing folder (a reproduction resumed in place).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in (*dirs, *files):
            path = Path(root) / name
            if path.is_symlink():
                raise ConfigError(f"{str(folder)!r} holds a symbolic link, "
                                  f"{str(path)!r} (to {os.readlink(path)!r}); ppknn never "
                                  "writes through one: remove the link, or choose another "
                                  "output")


def write_file(path: Path, data: bytes) -> None:
    """Write ``path`` whole, never through a symbolic link there (it is replaced instead).

    The bytes go to a new file beside it (created exclusively, not following links),
    which then replaces ``path`` in one rename.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def rewriting(folder: Path) -> Iterator[Path]:
    """Rewrite files of the existing results ``folder``: yields a private scratch folder.

    Holds the output's lock for the block. Files written into the scratch folder (a
    fresh folder inside ``folder``) replace their namesakes in ``folder`` when the block
    completes -- each in one rename, so a symbolic link at a name is replaced, never
    written through -- and the folder is marked as ppknn's (:data:`MARKER`). On an
    exception nothing in ``folder`` changes.
    """
    folder = Path(folder)
    with output_lock(folder):
        try:
            scratch = Path(tempfile.mkdtemp(prefix=".rewrite-", dir=folder))
        except OSError as exc:
            raise ConfigError(f"{str(folder)!r}: cannot write in it: {exc.strerror}") from None
        try:
            yield scratch
            for path in sorted(scratch.iterdir()):
                if path.is_file() and not path.is_symlink():
                    os.replace(path, folder / path.name)
            write_marker(folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def staged(folder: Path, *, overwrite: bool = False) -> Iterator[Path]:
    """A fresh staging folder that becomes ``folder`` when the block completes.

    The output's lock (:func:`output_lock`) is held from the check to the final
    rename: a second writer of the same output is refused (``ConfigError``) while
    this one runs. The final rename never replaces what appeared meanwhile
    (:func:`swap_in`). On an exception, the staging folder (with whatever the run
    recorded and a ``failure.json``) is kept under ``folder`` if that did not exist,
    else under ``folder.failed-N``; the exception propagates. A run refused before
    it recorded anything (bad input) leaves nothing behind.
    """
    check_flag("overwrite", overwrite)
    folder = check_output(Path(folder), overwrite=overwrite)
    with output_lock(folder):
        folder = check_output(folder, overwrite=overwrite)  # again, under the lock
        try:
            stage = folder.parent / f".{folder.name}.partial-{uuid.uuid4().hex[:8]}"
            stage.mkdir()
        except OSError as exc:
            raise ConfigError(f"output {str(folder)!r} cannot be created: "
                              f"{exc.strerror}") from None
        try:
            yield stage
        except BaseException as exc:
            if not any(p.is_file() for p in stage.rglob("*")):
                # refused before anything ran (bad input): nothing is written
                shutil.rmtree(stage, ignore_errors=True)
                raise
            try:  # (best effort: on a full disk the record itself may not fit)
                write_file(stage / FAILURE, json.dumps(failure_record(exc), indent=1).encode())
                write_marker(stage)
            except OSError:
                pass
            try:
                _rename_noreplace(stage, folder)
                target = folder
            except FileExistsError:
                target = _keep_aside(stage, folder, "failed")
            except OSError:  # cannot even rename: it stays hidden, and is named
                target = stage
            try:  # where the run's record is, for the message the user reads
                exc.kept_folder = target  # type: ignore[attr-defined]
            except AttributeError:
                pass
            if hasattr(exc, "add_note"):  # (Python 3.11+) shown under a traceback too
                exc.add_note(f"what the run recorded is kept in {str(target)!r} ({FAILURE} "
                             "says why)")
            raise
        swap_in(stage, folder, overwrite=overwrite)


DISK_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def disk_full(exc: BaseException | None) -> OSError | None:
    """The "no space left" (or quota) ``OSError`` that ``exc`` is or was caused by, if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and (exc.errno in DISK_FULL
                                         or "No space left on device" in str(exc)):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def disk_full_message(exc: OSError, where: Path | None = None) -> str:
    """One line naming the path a full disk refused (``where`` when the error names none)."""
    path = exc.filename or (str(where) if where is not None else None)
    if path and where is not None:  # a file of the staging folder: where it is kept now
        import re

        path = re.sub(rf"(^|/)\.{re.escape(Path(where).name)}\.partial-[0-9a-f]{{8}}(?=/|$)",
                      lambda m: m.group(1) + Path(where).name, str(path))
    what = "quota exceeded" if exc.errno == getattr(errno, "EDQUOT", None) else \
        "no space left on the device"
    at = f"writing {str(path)!r}" if path else "writing the results"
    return (f"{what} {at}; free space there (or choose another --output on another disk) "
            "and run again")


_LEFTOVER_KINDS = {"partial": "a run's staging folder", "old": "the results an overwrite "
                   "was replacing"}


def leftovers(folder: Path) -> list[tuple[Path, str, bool]]:
    """Hidden folders killed runs left beside output ``folder``: ``(path, what, in_use)``.

    ``.NAME.partial-XXXXXXXX`` (a run's staging folder: a killed run's record) and
    ``.NAME.old-XXXXXXXX`` (an old results folder an overwrite had set aside). ``in_use``:
    a run of this output is going on now (it holds the output's lock), so they may be its
    own. A reproduction's resumable stage (``.NAME.partial-reproduce-...``) is not one.
    Nothing is removed here: :func:`leftover_notes` says how.
    """
    import re

    folder = Path(folder)
    pattern = re.compile(rf"^\.{re.escape(folder.name)}\.(partial|old)-[0-9a-f]{{8}}$")
    try:
        entries = sorted(folder.parent.iterdir())
    except OSError:
        return []
    found = [(e, m.group(1)) for e in entries
             if (m := pattern.match(e.name)) and e.is_dir() and not e.is_symlink()]
    if not found:
        return []
    in_use = writer_alive(folder)
    return [(e, _LEFTOVER_KINDS[kind], in_use) for e, kind in found]


def writer_alive(folder: Path) -> bool:
    """Whether a ppknn process holds output ``folder``'s lock now (a run writing it)."""
    path = Path(folder).parent / f".{Path(folder).name}.lock"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        try:
            import fcntl
        except ImportError:  # Windows: cannot tell; say it may be in use
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def leftover_notes(folder: Path) -> list[str]:
    """One line per leftover beside ``folder`` (:func:`leftovers`), with how to remove it."""
    import shlex

    notes = []
    for path, what, in_use in leftovers(folder):
        if in_use:
            notes.append(f"{str(path)!r} ({what}) belongs to the run of {str(folder)!r} going "
                         "on now; it goes when that run ends")
        else:
            notes.append(f"{str(path)!r} is left from a run that was killed ({what}, "
                         f"{_entries(path)}); nothing uses it: look inside, or remove it "
                         f"with: rm -r {shlex.quote(str(path))}")
    return notes


def _entries(path: Path, limit: int = 100_000) -> str:
    n = 0
    for _root, dirs, files in os.walk(path, followlinks=False):
        n += len(dirs) + len(files)
        if n >= limit:
            return f"{limit:,}+ entries"
    return f"{n:,} entr{'y' if n == 1 else 'ies'}"


def check_complete(folder: Path) -> dict[str, Any] | None:
    """Refuse a results folder whose protocols did not complete.

    Returns ``None`` for a complete run, and the ``failure.json`` record of a
    run that failed only after its protocols had completed (its transcript
    is complete and its public facts were written: it can be scored).
    """
    from ppknn.simulations.reporting import jsonio

    folder = Path(folder)
    during = folder / "transcript" / FAILURE
    if during.is_file():
        why = jsonio.read(during, "a failure record").get("message", "")
        raise ConfigError(f"{str(folder)!r} holds a failed run ({why}); its transcript ends at "
                          "the failure and is not scored")
    if not (folder / "transcript" / "totals.json").is_file():
        raise ConfigError(f"{str(folder)!r}: the transcript is incomplete (no "
                          "transcript/totals.json); the run did not finish")
    from ppknn.core.transcript import Transcript

    Transcript(folder / "transcript").check()  # every part there and readable
    if not (folder / FAILURE).is_file():
        return None
    record = jsonio.read(folder / FAILURE, "a failure record")
    why = record.get("message") or record.get("error", "")
    if not (folder / "public.json").is_file():
        raise ConfigError(f"{str(folder)!r} holds a failed run ({why}) that stopped before its "
                          "public facts (public.json) were written; it is not scored")
    from ppknn.simulations.leakage.truth import has_truth, truth_path

    public = jsonio.read(folder / "public.json", "a run's public facts")
    for name in public.get("protocols", {}):
        path = truth_path(folder / "transcript", name)
        if has_truth(name) and not path.is_file():
            raise ConfigError(f"{str(folder)!r} holds a failed run ({why}) that stopped before "
                              f"its ground truth (transcript/{path.name}) was saved; it is not "
                              "scored")
    return record


__all__ = ["FAILURE", "MARKER", "MARKERS", "RESULT_SUFFIXES", "SIGNATURE", "OutputConflict",
           "check_complete", "check_flag", "check_output", "disk_full", "disk_full_message",
           "failure_record", "holds_output", "leftover_notes", "leftovers", "legacy_output",
           "output_lock", "protected", "refuse_links", "rewriting", "stage_of", "staged",
           "swap_in", "write_file", "write_marker", "writer_alive"]
