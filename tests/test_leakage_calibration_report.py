"""The calibration report's attack half, written by its command line (two seeds a check)."""

from __future__ import annotations


def test_the_generator_writes_the_attack_report(tmp_path):
    """Two seeds of every check: controls none flagged, planted leaks all flagged, except
    where a check states why its target is not reached."""
    import csv

    from ppknn.simulations.leakage.calibrate import main

    assert main(["--only", "attacks", "--seeds", "2", "--out", str(tmp_path)]) == 0
    with open(tmp_path / "attacks.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(int(r["seeds"]) == 2 for r in rows)
    for r in rows:
        if r["limit"]:
            continue
        want = "0" if r["kind"] == "control" else "2"
        assert r["flagged"] == want, (r["protocol"], r["attack"], r["kind"], r["flagged"])
    text = (tmp_path / "calibration.md").read_text()
    assert "## Single-run attacks" in text and "Targets not reached" in text
    assert (tmp_path / "attacks.png").stat().st_size > 0
