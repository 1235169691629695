"""The library writes its JSON files through one strict writer (non-finite numbers as null)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("core", "parties", "protocols", "simulations", "ppknn")

ALLOWED = {
    # core/ cannot import simulations/ (the layers go one way); totals.json holds integer
    # counts and SHA-256 strings only, never a float that could be NaN or infinite
    "core/transcript.py": 1,
}
"""Files that may call ``write_text(json.dumps(...))``, and how many times."""

PATTERN = re.compile(r"write_text\(\s*json\.dumps\(")


def _calls() -> dict[str, int]:
    found: dict[str, int] = {}
    for top in LIBRARY:
        for path in sorted((ROOT / top).rglob("*.py")):
            n = len(PATTERN.findall(path.read_text(encoding="utf-8")))
            if n:
                found[path.relative_to(ROOT).as_posix()] = n
    return found


def test_json_is_written_through_jsonio_except_the_documented_allowances():
    assert _calls() == ALLOWED


def test_the_search_finds_a_call_when_there_is_one(tmp_path):
    text = '(folder / "x.json").write_text(json.dumps(\n    {"a": 1}, indent=1))\n'
    assert len(PATTERN.findall(text)) == 1
    assert not PATTERN.findall('path.write_text(jsonio.dumps({"a": 1}))')


def test_compare_run_json_is_strict_with_a_non_finite_number(tmp_path):
    from ppknn.simulations.reporting import jsonio

    text = jsonio.dumps({"command": "ppknn compare x", "seconds": math.nan,
                         "spec": {"bound": math.inf, "name": "é"}})
    parsed = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    assert parsed == {"command": "ppknn compare x", "seconds": None,
                      "spec": {"bound": None, "name": "é"}}
