"""Paper reproductions: ``ppknn reproduce NAME``.

The reproductions live outside the library, in the ``ppknn_reproductions``
package installed beside it (the ``reproductions/`` folder of the checkout),
and a third party can add its own: each is registered under the entry point
group :data:`GROUP`, whose value is the reproduction's module::

    [project.entry-points."ppknn.reproductions"]
    xiong = "ppknn_reproductions.xiong"

:func:`names` lists the registered reproductions, :func:`available` adds each
one's ``DESCRIPTION`` and :func:`load` gives its module, which defines

``run(output: Path, *, quick: bool, runtime: str, report: Path, ...) -> Path``
    Re-run the paper's experiments, write one CSV table and one PNG plot per
    figure into ``output``, write the Markdown report
    ``report`` (normally ``docs/reproductions/<name>.md``; figures and claims beside measured
    numbers, every number generated), and return the report's path.
    ``quick`` shrinks repetitions and sizes so the whole run takes under two
    minutes (exercised by the tests); ``runtime`` is ``"inprocess"`` or ``"ray"``.
    Further keyword arguments are the reproduction's settings (``--set KEY=VALUE``).

An output folder says what it holds in :data:`MARKER` (``reproduction.json``:
the reproduction's name and whether it finished); :func:`folder_state` reads
it, so ``ppknn reproduce`` refuses a finished reproduction (unless told to
overwrite it) and resumes an unfinished one that kept its finished runs in
:data:`ROWS` (``grid-rows/*.jsonl``, see :func:`simulations.grids.run_grids`).
A run told to overwrite a folder runs in its fixed staging folder
(:func:`stage`), where the next such run finds what a killed one kept; the
marker's settings (:data:`SETTINGS`) say whether those runs may be reused
(:func:`differing_settings`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from ppknn.core.errors import ConfigError
from ppknn.simulations.reporting import jsonio

GROUP = "ppknn.reproductions"
"""The entry point group of the reproductions: ``NAME = "package.module"``."""


def _registered() -> dict[str, EntryPoint]:
    """The entry points of :data:`GROUP` by name (the first of a name wins)."""
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=GROUP):
        found.setdefault(point.name, point)
    return found


def names() -> list[str]:
    """The registered reproductions' names, sorted (no module is imported).

    >>> {"gursoy", "lepert", "mukherjee", "xiong", "zafarani"} <= set(names())
    True
    """
    return sorted(_registered())


def load(name: str) -> ModuleType:
    """The module of reproduction ``name``.

    Raises
    ------
    ConfigError
        ``name`` is not registered, or its module does not define ``run``.
    """
    points = _registered()
    if name not in points:
        where = (f"available: {sorted(points)}" if points else
                 f"none is installed (they register under the entry point group {GROUP!r}; "
                 "`pip install .` from the checkout installs ppknn's own)")
        raise ConfigError(f"unknown reproduction {name!r}; {where}")
    module = points[name].load()
    if not callable(getattr(module, "run", None)):
        raise ConfigError(f"reproduction {name!r} ({points[name].value}) defines no run(output, "
                          "*, quick, runtime, report)")
    return module


def available() -> dict[str, str]:
    """``{name: description}`` of every registered reproduction (each module is imported)."""
    return {name: str(getattr(load(name), "DESCRIPTION", "")) for name in names()}


def report_path(name: str, root: Path | None = None) -> Path:
    """Where the Markdown report of ``name`` goes (``docs/reproductions/<name>.md``)."""
    base = root if root is not None else Path.cwd()
    return base / "docs" / "reproductions" / f"{name}.md"


MARKER = "reproduction.json"
"""In a reproduction's output folder: its name, settings and whether it finished."""

ROWS = "grid-rows"
"""The folder where a reproduction keeps its finished runs as they finish (``*.jsonl``)."""


SETTINGS = ("quick", "runtime", "settings")
"""The marker's facts that decide a reproduction's runs: rows are reused only when equal."""


def stage(folder: Path, name: str) -> Path:
    """Where ``ppknn reproduce NAME --overwrite`` stages output ``folder``: a fixed name.

    >>> stage(Path("results/reproduce/xiong"), "xiong").name
    '.xiong.partial-reproduce-xiong'
    """
    from ppknn.simulations.output import stage_of

    return stage_of(folder, f"reproduce-{name}")


def _canonical(value: Any) -> Any:
    """``value`` as a marker holds it once read back (JSON, unknown types as text)."""
    return json.loads(json.dumps(value, default=str))


def differing_settings(record: dict[str, Any], facts: dict[str, Any]
                       ) -> dict[str, tuple[Any, Any]]:
    """``{setting: (recorded, given)}`` for each of :data:`SETTINGS` that differs.

    >>> differing_settings({"name": "x", "quick": True, "runtime": "inprocess",
    ...                     "settings": {}}, {"quick": False, "runtime": "inprocess",
    ...                                    "settings": {}})
    {'quick': (True, False)}
    """
    out = {}
    for key in SETTINGS:
        recorded, given = _canonical(record.get(key)), _canonical(facts.get(key))
        if recorded != given:
            out[key] = (recorded, given)
    return out


@dataclass(frozen=True)
class FolderState:
    """What an output folder holds, for ``ppknn reproduce NAME``.

    Attributes
    ----------
    kind:
        ``"empty"`` (absent or empty), ``"finished"`` (a finished report of NAME),
        ``"resumable"`` (an unfinished NAME with finished runs kept in :data:`ROWS`),
        ``"unfinished"`` (an unfinished NAME with nothing to reuse), ``"other"``
        (another reproduction, or anything else).
    detail:
        A phrase for messages: what the folder holds.
    runs:
        Finished runs kept in :data:`ROWS` (``"resumable"``).
    """

    kind: Literal["empty", "finished", "resumable", "unfinished", "other"]
    detail: str = ""
    runs: int = 0


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The :data:`MARKER` record of ``folder`` (``None``: none, or unreadable)."""
    try:
        record = json.loads((Path(folder) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def write_marker(folder: Path, *, name: str, finished: bool, **facts: Any) -> None:
    """Say in ``folder`` which reproduction it holds and whether it finished."""
    from ppknn.simulations.output import write_file

    record = {"name": name, "finished": finished, **facts}
    # written whole beside it, then renamed: a symbolic link there is replaced, not followed
    write_file(Path(folder) / MARKER, jsonio.dumps(record, default=str).encode())


def _kept_runs(folder: Path) -> int:
    """Finished runs in ``folder/grid-rows/*.jsonl`` (one line each)."""
    rows = Path(folder) / ROWS
    if not rows.is_dir():
        return 0
    count = 0
    for store in rows.glob("*.jsonl"):
        try:
            count += sum(1 for line in store.read_text(encoding="utf-8").splitlines()
                         if line.strip())
        except (OSError, UnicodeDecodeError):
            continue
    return count


def folder_state(folder: Path, name: str) -> FolderState:
    """What ``folder`` holds, as far as reproduction ``name`` is concerned.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> folder_state(folder / "new", "xiong").kind
    'empty'
    >>> write_marker(folder, name="xiong", finished=True)
    >>> folder_state(folder, "xiong").kind, folder_state(folder, "gursoy").kind
    ('finished', 'other')
    """
    folder = Path(folder)
    if not folder.exists():
        return FolderState("empty")
    if not folder.is_dir():
        return FolderState("other", "a file")
    if not any(folder.iterdir()):
        return FolderState("empty")
    marker = read_marker(folder)
    held = marker.get("name") if marker else None
    if held is not None and held != name:
        return FolderState("other", f"a reproduction of {held!r}")
    if (marker and marker.get("finished")) or (folder / f"{name}.md").is_file():
        return FolderState("finished", f"a finished reproduction of {name!r}")
    runs = _kept_runs(folder)
    if runs:
        return FolderState("resumable", f"an unfinished reproduction of {name!r}", runs)
    if marker is not None:
        return FolderState("unfinished", f"an unfinished reproduction of {name!r}")
    return FolderState("other", "files of something else")


__all__ = ["GROUP", "MARKER", "ROWS", "SETTINGS", "FolderState", "available",
           "differing_settings", "folder_state", "load", "names", "read_marker", "report_path",
           "stage", "write_marker"]
