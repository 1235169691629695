"""`ppknn reproduce lepert --quick`: a CSV and PNG per figure, a report of generated numbers."""

from __future__ import annotations

import csv
import re

from simulations import reproduce


def test_quick_reproduction_writes_figures_and_report(tmp_path):
    module = reproduce.load("lepert")
    report = module.run(tmp_path / "out", quick=True, runtime="inprocess",
                        report=tmp_path / "lepert.md")
    text = report.read_text()
    images = re.findall(r"!\[([^\]]+)\]\(lepert/([^)]+\.png)\)", text)
    assert len(images) >= 25
    for name, png in images:
        assert (tmp_path / "lepert" / png).stat().st_size > 5000
        assert (tmp_path / "out" / png).is_file()
        with (tmp_path / "out" / f"{name}.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(0.0 <= float(r["nn_accuracy"]) <= float(r["top5_accuracy"]) <= 1.0
                            for r in rows)
    # the report's numbers are generated: the accounting table and the claims table
    assert "| E8 | 9 | 9 / 20 | 256 | 9 / 9 / 9 | 90 / 90 |" in text
    claims = [line for line in text.splitlines() if line.startswith("| Fig.")
              or line.startswith("| §")]
    assert len(claims) >= 12
    assert all(re.search(r"\*\*(agrees|differs|partly|agrees on log-log axes)", c) for c in claims)
    with (tmp_path / "out" / "fig6_02_dis_vs_geo_1d.csv").open() as fh:
        dis = [r for r in csv.DictReader(fh) if r["series"] == "DP-TT-DIS"]
    best_raw = max(float(r["nn_accuracy"]) for r in dis)
    assert f"| DP-TT-DIS | 1e+03 - 1e+09 | {best_raw:.3f} |" in text
