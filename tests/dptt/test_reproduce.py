"""`ppknn reproduce lepert --quick`: a CSV and PNG per figure, a report of generated numbers."""

from __future__ import annotations

import csv
import re

from ppknn.simulations import reproduce
from ppknn.simulations.reporting import fmt


def test_quick_reproduction_writes_figures_and_report(tmp_path):
    module = reproduce.load("lepert")
    report = module.run(tmp_path / "out", quick=True, runtime="inprocess",
                        report=tmp_path / "lepert.md")
    text = report.read_text()
    images = re.findall(r"!\[[^\]]+\]\(lepert/([^)]+)\.png\)", text)
    assert len(images) >= 25
    for name in images:
        assert (tmp_path / "lepert" / f"{name}.png").stat().st_size > 5000
        assert (tmp_path / "out" / f"{name}.png").is_file()
        assert f"(data: `{name}.csv`)" in text
        with (tmp_path / "out" / f"{name}.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(0.0 <= float(r["nn_accuracy"]) <= float(r["top5_accuracy"]) <= 1.0
                            for r in rows)
        # every accuracy carries its 95% interval
        assert all(float(r[f"{m}_low"]) <= float(r[f"{m}_accuracy"]) <= float(r[f"{m}_high"])
                   for r in rows for m in ("nn", "top5"))
    # the report's numbers are generated: the accounting table and the claims table
    assert "| E8 | 9 | 9 | 20 | 256 | 9.00 | 9.00 | 9.00 | 90.0 | 90.0 |" in text
    claims = [line for line in text.splitlines() if re.match(r"\| (Figs?\.|§)", line)]
    assert len(claims) >= 12
    verdicts = [re.search(r"\| \*\*(reproduced|partly|differs)\*\* \|", c) for c in claims]
    assert all(verdicts)
    counts = {v: sum(m.group(1) == v for m in verdicts) for v in ("reproduced", "partly",
                                                                    "differs")}
    assert (f"Claims: {counts['reproduced']} reproduced, {counts['partly']} partly, "
            f"{counts['differs']} differ." in text)
    with (tmp_path / "out" / "fig6_02_dis_vs_geo_1d.csv").open() as fh:
        dis = [r for r in csv.DictReader(fh) if r["series"] == "DP-TT-DIS"]
    best_raw = max(float(r["nn_accuracy"]) for r in dis)
    assert f"| DP-TT-DIS | 1,000 | 1.00e+09 | {fmt(best_raw)} |" in text
    # every deviation of the paper is listed
    deviations = text[text.index("## Where this differs from the paper"):]
    for needle in ("Gowalla", "number of queries", "Algorithm 5", "caption of Fig. 6.1"):
        assert needle in deviations
