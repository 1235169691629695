"""``python -m benchmarks --quick`` runs end to end and writes its JSON and plot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def drawn(path: Path) -> bool:
    """A palette PNG (save_png's) with coloured marks on it (empty axes are only greys)."""
    from PIL import Image

    with Image.open(path) as image:
        colours = image.convert("RGB").getcolors(1 << 16) or []
        return image.mode == "P" and sum(n for n, c in colours if max(c) - min(c) > 60) > 200


@pytest.mark.slow
def test_quick_suite_writes_every_measurement(tmp_path):
    out = tmp_path / "bench"
    # --no-compile: nothing is written beside the checkout's sources
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--no-compile",
                           "--output", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "bench.json").read_text())
    assert drawn(out / "bench.png")
    e2e = result["end_to_end"]
    assert e2e["bare_ray_s"] > 0 and e2e["inprocess_s"] > 0 and e2e["ray-hosted_s"] > 0
    # the runs alternate over two rounds; figures and the ratio are medians of the rounds'
    for label in ("bare_ray", "bare_ray_actors", "bare_ray_quick_stop", "inprocess",
                  "ray-hosted"):
        assert len(e2e[f"{label}_samples_s"]) == 2
        assert e2e[f"{label}_s"] == pytest.approx(sum(e2e[f"{label}_samples_s"]) / 2)
    lo, hi = e2e["ray-hosted_minus_bare_over_inprocess_range"]
    assert lo <= e2e["ray-hosted_minus_bare_over_inprocess"] <= hi
    assert e2e["ray-hosted_minus_bare_over_inprocess"] == pytest.approx((lo + hi) / 2)
    lo, hi = e2e["ray-hosted_minus_bare_actors_over_inprocess_range"]
    assert e2e["ray-hosted_minus_bare_actors_over_inprocess"] == pytest.approx((lo + hi) / 2)
    # like for like: bare Ray stopped as ppknn stops the Ray it started
    lo, hi = e2e["ray-hosted_minus_bare_quick_stop_over_inprocess_range"]
    assert e2e["ray-hosted_minus_bare_quick_stop_over_inprocess"] == pytest.approx((lo + hi) / 2)
    assert {"startup_s", "protocol_s"} <= set(e2e["ray-hosted_timings"])
    a = result["actors"]
    assert a["party_start_s"] > 0 and a["bare_call_ms"] > 0 and a["party_worker_rss_mib"] > 0
    for who in ("bare", "party"):  # private pages <= proportional share <= resident
        assert 0 < a[f"{who}_worker_uss_mib"] <= a[f"{who}_worker_pss_mib"] \
            <= a[f"{who}_worker_rss_mib"]
    assert a["parties_per_24gib"] == a["parties_per_24gib_by_pss"]
    # bare and party start-ups alternate; the ratio is the median of the rounds'
    assert len(a["start_rounds"]) == 2
    ratios = sorted(r["start_ratio"] for r in a["start_rounds"])
    assert a["start_ratio_range"] == ratios
    assert a["start_ratio"] == pytest.approx(sum(ratios) / 2)
    assert result["bytecode"]["compiled_now"] == 0 and result["bytecode"]["modules"] > 50
    assert [r["parties"] for r in result["ppknn"]] == [4, 16]
    assert all(r["cold_s"] >= r["first_run_s"] for r in result["ppknn"])
    for r in result["ppknn"]:  # the median of three fresh runs, each kept
        assert len(r["cold_samples_s"]) == 3 and r["cold_s"] == r["cold_samples_s"][1]
        lo, hi = r["cold_over_sklearn_range"]
        assert lo <= r["cold_over_sklearn"] <= hi
        # the floor: four parts, each timed alone, adding up; a ring's n edges at least
        parts = ("floor_distances_s", "floor_selection_s", "floor_key_agreements_s",
                 "floor_channels_s")
        assert all(r[p] > 0 for p in parts)
        assert r["floor_s"] == pytest.approx(sum(r[p] for p in parts))
        assert r["floor_over_sklearn"] == pytest.approx(r["floor_s"] / r["sklearn_first_s"])
        assert r["floor_pairs"] >= r["parties"] and r["floor_messages"] > r["floor_pairs"]
    assert {r["task"] for r in result["dp_owner"]} == {"knn", "rn"}
    # scale: the phases of ppknn run add up to its wall time, and are drawn
    (row,) = result["scale"]
    phases = ("startup_s", "protocol_s", "measure_s", "leakage_s", "other_s")
    assert row["parties"] == 40 and all(row[k] > 0 for k in phases)
    assert sum(row[k] for k in phases) == pytest.approx(row["wall_s"])
    assert row["peak_pss_mib"] > 0 and not row["pending_task_warning"]
    assert drawn(out / "scale.png")
    # an existing output folder is refused, and left as it was
    before = (out / "bench.json").read_text()
    again = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--only", "ppknn",
                            "--output", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 2 and "--overwrite" in again.stderr
    assert (out / "bench.json").read_text() == before


def test_bytecode_compiles_only_the_missing_modules(tmp_path, monkeypatch):
    import importlib.util

    from benchmarks import __main__ as bench

    sources = [tmp_path / f"m{i}.py" for i in range(3)]
    for i, f in enumerate(sources):
        f.write_text(f"X = {i}\n")
    cached = Path(importlib.util.cache_from_source(str(sources[0])))
    cached.parent.mkdir()
    cached.write_bytes(b"already there")
    monkeypatch.setattr(bench, "_framework_sources", lambda: sources)
    lines: list[str] = []
    left = bench._bytecode(False, lines.append)  # --no-compile: reported, nothing written
    assert left["without_bytecode"] == 2 and left["compiled_now"] == 0
    assert not Path(importlib.util.cache_from_source(str(sources[1]))).exists()
    assert "--no-compile" in lines[-1]
    done = bench._bytecode(True, lines.append)
    assert done == {**left, "compiled_now": 2}
    assert all(Path(importlib.util.cache_from_source(str(f))).exists() for f in sources)
    assert cached.read_bytes() == b"already there"  # an existing file is left as it was
    assert bench._bytecode(True, lines.append)["without_bytecode"] == 0

