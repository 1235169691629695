"""The one CSV writer and reader of reproduction tables.

:func:`write_rows` writes dict rows with a header: the union of the rows'
keys in first-seen order (or the given columns), floats to 6 significant
digits, a missing key or ``None`` as an empty cell. Its output is the same,
byte for byte, as the writer the reproductions used before (so their CSV
files do not change). :func:`read_rows` reads such a file back and parses
each cell: ``True``/``False`` as bools, integers, floats (``nan`` and
``inf`` too), an empty cell as ``None``, anything else as text.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> _ = write_rows(path, [{"k": 5, "acc": 0.71234567}, {"k": 10, "acc": 0.5, "note": "x"}])
>>> print(path.read_text(), end="")
k,acc,note
5,0.712346,
10,0.5,x
>>> read_rows(path)
[{'k': 5, 'acc': 0.712346, 'note': None}, {'k': 10, 'acc': 0.5, 'note': 'x'}]
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ppknn.core.errors import ConfigError


def columns_of(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The union of the rows' keys in first-seen order."""
    keys: dict[str, None] = {}
    for row in rows:
        keys.update(dict.fromkeys(row))
    return list(keys)


def cell(value: Any) -> Any:
    """A value as written: floats (numpy's too) to 6 significant digits, the rest as is."""
    return f"{value:.6g}" if isinstance(value, float) else value


def write_rows(path: Path | str, rows: Sequence[Mapping[str, Any]], *,
               columns: Sequence[str] | None = None) -> Path:
    """Write dict rows as CSV with a header row.

    Parameters
    ----------
    path
        The file to write (its folder must exist).
    rows
        The rows; a key a row lacks is an empty cell.
    columns
        The header; default: the union of the rows' keys in first-seen order.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ConfigError
        A row has a key that is not among ``columns``.
    """
    header = list(columns) if columns is not None else columns_of(rows)
    if columns is not None:
        known = set(header)
        for i, row in enumerate(rows):
            extra = [k for k in row if k not in known]
            if extra:
                raise ConfigError(f"row {i} has columns {extra} not in the header {header}")
    path = Path(path)
    with path.open("w", newline="") as fh:
        # csv.writer on lists: what csv.DictWriter writes (a missing key, like None, an
        # empty cell), without its per-row dict checks (a 100,000-party run has 10^5 rows)
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows([cell(row.get(k)) for k in header] for row in rows)
    return path


def parse(text: str) -> Any:
    """One CSV cell back as a value (see the module docstring)."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def read_header(path: Path | str) -> list[str]:
    """The header row of a CSV file written by :func:`write_rows`."""
    with Path(path).open(newline="") as fh:
        return next(csv.reader(fh), [])


def read_rows(path: Path | str) -> list[dict[str, Any]]:
    """The rows of a CSV file written by :func:`write_rows`, cells parsed back."""
    with Path(path).open(newline="") as fh:
        return [{k: parse(v) for k, v in row.items()} for row in csv.DictReader(fh)]


__all__ = ["cell", "columns_of", "parse", "read_header", "read_rows", "write_rows"]
