"""A small column table for reproduction results (CSV out, rows in)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any


class Table:
    """Rows with fixed columns; written as CSV, read back by the report."""

    def __init__(self, name: str, columns: list[str]) -> None:
        self.name = name
        self.columns = list(columns)
        self.rows: list[dict[str, Any]] = []

    def add(self, **values: Any) -> None:
        """Append one row (every column must be given)."""
        missing = set(self.columns) - set(values)
        extra = set(values) - set(self.columns)
        if missing or extra:
            raise ValueError(f"table {self.name!r}: missing {sorted(missing)}, "
                             f"unknown {sorted(extra)}")
        self.rows.append({c: _plain(values[c]) for c in self.columns})

    def where(self, **match: Any) -> list[dict[str, Any]]:
        """Rows whose columns equal ``match``."""
        return [r for r in self.rows if all(r[k] == v for k, v in match.items())]

    def column(self, name: str, **match: Any) -> list[Any]:
        """One column of the matching rows."""
        return [r[name] for r in self.where(**match)]

    def write_csv(self, path: Path) -> None:
        """Write as CSV with a header row."""
        with Path(path).open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=self.columns)
            w.writeheader()
            w.writerows(self.rows)

    @classmethod
    def read_csv(cls, name: str, path: Path) -> Table:
        """A table written by :meth:`write_csv` (numbers parsed back)."""
        with Path(path).open(newline="") as fh:
            reader = csv.DictReader(fh)
            table = cls(name, list(reader.fieldnames or []))
            for row in reader:
                table.rows.append({k: _parse(v) for k, v in row.items()})
        return table

    def __len__(self) -> int:
        return len(self.rows)


def write_rows_csv(path: Path, rows: list[dict]) -> None:
    """Dict rows as CSV: the union of keys in first-seen order, floats to 6 significant digits."""
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with Path(path).open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def _parse(v: str) -> Any:
    if v in ("True", "False"):
        return v == "True"
    for kind in (int, float):
        try:
            return kind(v)
        except ValueError:
            pass
    return v


def _plain(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isnan(v):
        return float(f"{v:.6g}")
    return v


__all__ = ["Table", "write_rows_csv"]
