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
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

INLINE_AFTER = 16
"""Lists with at least this many items get one compact line per item."""


def dumps(obj: Any, *, default: Callable[[Any], Any] | None = None,
          inline_after: int = INLINE_AFTER) -> str:
    """``obj`` as indented JSON, long lists one compact item per line (module docstring).

    Strict JSON: a NaN or infinite number (an undefined measure) is written ``null``,
    which every JSON parser reads (``NaN`` is Python's extension).
    """
    compact = json.JSONEncoder(default=default, allow_nan=False)
    parts: list[str] = []
    _write(_finite(obj, default), 0, parts, compact, default, inline_after)
    return "".join(parts)


def read(path: Path, what: str, kind: type = dict) -> Any:
    """The JSON file ``path`` of a results folder, which must hold a ``kind`` (``what`` it is).

    Anything else is a one-line :class:`~core.errors.ConfigError` naming the
    file: unreadable, not UTF-8, not JSON, nested deeper than Python's JSON
    reader goes (a crafted file; it would raise ``RecursionError``), or a JSON
    value of another type.
    """
    from ppknn.core.errors import ConfigError

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except RecursionError:
        raise ConfigError(f"{str(path)!r} cannot be read as {what} (its JSON is nested deeper "
                          "than any file ppknn writes); the file is damaged or was not "
                          "written by ppknn") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"{str(path)!r} cannot be read as {what} ({reason}); the file is "
                          "damaged or was not written by ppknn") from None
    if not isinstance(data, kind):
        raise ConfigError(f"{str(path)!r} does not hold {what} (a JSON {type(data).__name__}, "
                          f"not {'a list' if kind is list else 'an object'})")
    return data


def _finite(obj: Any, default: Callable[[Any], Any] | None) -> Any:
    """``obj`` with every non-finite float (numpy's too) replaced by ``None``."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v, default) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v, default) for v in obj]
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if default is not None:  # numpy scalars and the like: as ``default`` turns them
        try:
            return _finite(default(obj), None)
        except (TypeError, ValueError):
            return obj
    return obj


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


__all__ = ["INLINE_AFTER", "dumps", "read"]
