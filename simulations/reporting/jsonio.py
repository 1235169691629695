"""The JSON files of a results folder: indented, with long lists one item per line.

``json.dumps(obj, indent=1)`` runs Python's pure-Python encoder (the C
encoder serves only unindented output) and spends a line on every scalar:
a 20,000-party run's ``summary.json`` (one leakage row per party and
attack) took seconds to write and hundreds of thousands of lines to read.
:func:`dumps` keeps the indented layout for the document's structure and
writes each item of a long list (:data:`INLINE_AFTER` items or more) on one
line with the C encoder. The text parses to the same object as
``json.dumps(obj, indent=1, default=default)`` would.

>>> print(dumps({"rows": [{"a": 1}, {"a": 2}], "n": 2}, inline_after=2))
{
 "rows": [
  {"a": 1},
  {"a": 2}
 ],
 "n": 2
}
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

INLINE_AFTER = 16
"""Lists with at least this many items get one compact line per item."""


def dumps(obj: Any, *, default: Callable[[Any], Any] | None = None,
          inline_after: int = INLINE_AFTER) -> str:
    """``obj`` as indented JSON, long lists one compact item per line (module docstring)."""
    compact = json.JSONEncoder(default=default)
    parts: list[str] = []
    _write(obj, 0, parts, compact, default, inline_after)
    return "".join(parts)


def _write(obj: Any, depth: int, parts: list[str], compact: json.JSONEncoder,
           default: Callable[[Any], Any] | None, inline_after: int) -> None:
    pad = " " * (depth + 1)
    if isinstance(obj, dict) and obj:
        parts.append("{\n")
        for i, (key, value) in enumerate(obj.items()):
            if i:
                parts.append(",\n")
            # a key as json writes it (an int, float, bool or None key becomes a string)
            parts.append(f"{pad}{compact.encode({key: 0})[1:-4]}: ")
            _write(value, depth + 1, parts, compact, default, inline_after)
        parts.append(f"\n{' ' * depth}}}")
    elif isinstance(obj, (list, tuple)) and obj:
        parts.append("[\n")
        inline = len(obj) >= inline_after
        for i, item in enumerate(obj):
            if i:
                parts.append(",\n")
            parts.append(pad)
            if inline:
                parts.append(compact.encode(item))
            else:
                _write(item, depth + 1, parts, compact, default, inline_after)
        parts.append(f"\n{' ' * depth}]")
    else:  # a scalar, an empty container, or an object only `default` can turn into JSON
        parts.append(compact.encode(obj))


__all__ = ["INLINE_AFTER", "dumps"]
