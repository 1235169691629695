"""The peers' benchmark (MPyC beside the ring) runs in its quick mode and prints its table.

Skipped when the peers' virtual environment (``python -m benchmarks.bench_peers
--install``) is missing. Only MPyC's smallest case runs here (4 party processes, 20
queries, stopped after 60 s) beside the in-process ring; the Flower simulation and the Ray
ring are left to the benchmark itself (each starts Ray, tens of seconds on this machine).
"""

from __future__ import annotations

import csv

import pytest

bench_peers = pytest.importorskip("benchmarks.bench_peers")

PYTHON, MESSAGE = bench_peers.ensure_venv(create=False)
pytestmark = pytest.mark.skipif(PYTHON is None, reason=MESSAGE)


def test_quick_mode_runs_and_prints_its_table(tmp_path, capsys):
    out = tmp_path / "peers"
    code = bench_peers.main(["--quick", "--only", "mpyc", "--mpyc-timeout", "60",
                             "--output", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "secure kNN on abalone" in printed
    assert "MPyC" in printed and "ppknn ring" in printed
    rows = list(csv.DictReader((out / "peers.csv").open()))
    systems = {r["system"] for r in rows}
    assert systems == {"MPyC", "ppknn ring"}
    mpyc = next(r for r in rows if r["system"] == "MPyC")
    if mpyc["timed_out"] != "True":
        # exact secure kNN: the plain kNN's answers, nothing disclosed beyond them
        assert float(mpyc["agreement_knn"]) == 1.0
        assert float(mpyc["bytes"]) > 0
    ring = next(r for r in rows if r["system"] == "ppknn ring")
    assert 0.0 <= float(ring["disclosure_mean"]) <= 1.0
    assert (out / "peers.png").stat().st_size > 0


def test_table_marks_a_stopped_case():
    result = {"mpyc": [{"system": "MPyC", "form": "16 processes, loopback TCP", "parties": 16,
                        "queries": 1000, "timed_out": True, "cold_s": 600.0,
                        "note": "stopped after 600 s"}], "flower": []}
    assert "stopped after 600 s" in bench_peers.table(result)
