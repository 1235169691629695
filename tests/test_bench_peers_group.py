"""The peers' benchmark leaves no party process behind when it is interrupted.

MPyC's parties run in a process group of their own (``_run_group``); a run stopped by
Ctrl-C or SIGTERM while a case is under way must stop that group too, or 16 party
processes keep both CPUs busy after the benchmark has gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

bench_peers = pytest.importorskip("benchmarks.bench_peers")

CHILD = ("import subprocess, sys, time; p = subprocess.Popen(['sleep', '120']); "
         "open(sys.argv[1], 'w').write(str(p.pid)); time.sleep(120)")


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its parent counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _wait_for(path: Path) -> int:
    for _ in range(200):
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError("the child never started its grandchild")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_an_interrupted_case_stops_its_process_group(tmp_path, monkeypatch):
    pidfile = tmp_path / "grandchild"
    real = subprocess.Popen.communicate

    def interrupted(self, *args, **kwargs):
        if kwargs.get("timeout") is not None:  # the wait for the case: Ctrl-C arrives
            _wait_for(pidfile)
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "communicate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bench_peers._run_group([sys.executable, "-c", CHILD, str(pidfile)],
                               dict(os.environ), timeout=60)
    grandchild = _wait_for(pidfile)
    for _ in range(100):
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert not _alive(grandchild), "the party process outlived the interrupted run"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_timed_out_case_stops_its_process_group(tmp_path):
    pidfile = tmp_path / "grandchild"
    code, _, _, wall = bench_peers._run_group([sys.executable, "-c", CHILD, str(pidfile)],
                                              dict(os.environ), timeout=2)
    assert code is None and wall < 60
    grandchild = _wait_for(pidfile)
    for _ in range(100):
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_sigterm_ends_main_like_ctrl_c():
    with pytest.raises(SystemExit) as stop:
        bench_peers._terminate(signal.SIGTERM, None)
    assert stop.value.code == 128 + signal.SIGTERM


def test_install_alone_stops_after_the_environment(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(bench_peers, "ensure_venv",
                        lambda create: calls.append(create) or (tmp_path / "python", "ready"))
    monkeypatch.setattr(bench_peers, "section",
                        lambda *a, **k: pytest.fail("--install must not start a run"))
    assert bench_peers.main(["--install", "--output", str(tmp_path / "out")]) == 0
    assert calls == [True] and "ready" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_main_gives_back_the_callers_sigterm_handler(monkeypatch, tmp_path):
    def mine(signum, frame):
        return None

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        monkeypatch.setattr(bench_peers, "section", lambda *a, **k: None)
        assert bench_peers.main(["--output", str(tmp_path / "out")]) == 0
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)
