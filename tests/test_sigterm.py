"""SIGTERM is handled as Ctrl-C is: a message, what the run recorded kept, exit code 143."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCENARIO = """
[run]
name = "long"
[data]
dataset = "synthetic:classification?rows=60000&features=8&classes=3"
max_queries = 4000
bounds = { lower = [0, 0, 0, 0, 0, 0, 0, 0], upper = [1, 1, 1, 1, 1, 1, 1, 1] }
[parties]
n = 16
[protocol]
name = "ppknn-ring"
[runtime]
kind = "inprocess"
"""


def _wait_for(predicate, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended (rc {proc.returncode}) before it could be terminated")
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"nothing happened in {timeout} s")


def test_sigterm_mid_run_exits_143_with_a_message_and_keeps_the_record(tmp_path):
    (tmp_path / "long.toml").write_text(SCENARIO)
    proc = subprocess.Popen([sys.executable, "-m", "ppknn", "run", "long.toml", "--output",
                             "out"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    # the run has started recording once its staging folder holds a file
    _wait_for(lambda: any(p.is_file() for p in tmp_path.glob(".out.partial-*/**/*")), proc,
              timeout=180)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, output
    assert "terminated (SIGTERM)" in output and "Traceback" not in output, output
    kept = Path(tmp_path / "out")
    assert (kept / "failure.json").is_file(), output  # what the run recorded, said where
    assert "out" in output.split("terminated (SIGTERM)")[1]
    assert not list(tmp_path.glob(".out.*")), "a hidden staging folder was left behind"
