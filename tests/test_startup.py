"""Start-up on Ray: one set-up call per host, all submitted before any wait; light workers."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from ppknn.core.errors import ConfigError, PartyFailure
from ppknn.core.runtime import PartySpec, RunContext, make_runtime

pytestmark = pytest.mark.ray


class Quiet:
    """A party that only answers (start-up is what is measured)."""

    def __init__(self, me: str, delay: float = 0.0) -> None:
        time.sleep(delay)
        self.me = me

    def name(self) -> str:
        return self.me


class Refused:
    """A party whose construction fails."""

    def __init__(self, me: str) -> None:
        raise ConfigError(f"party {me!r}: refused at construction")


@pytest.fixture
def spy(monkeypatch):
    """Log every actor-method submission and every ``ray.get``/``ray.wait`` of the driver."""
    import ray
    import ray.actor

    events: list[tuple[str, str]] = []
    remote = ray.actor.ActorMethod._remote
    get, wait = ray.get, ray.wait

    def spy_remote(self, *args, **kwargs):
        events.append(("remote", self._method_name))
        return remote(self, *args, **kwargs)

    def spy_get(*args, **kwargs):
        events.append(("wait", "get"))
        return get(*args, **kwargs)

    def spy_wait(*args, **kwargs):
        events.append(("wait", "wait"))
        return wait(*args, **kwargs)

    monkeypatch.setattr(ray.actor.ActorMethod, "_remote", spy_remote)
    monkeypatch.setattr(ray, "get", spy_get)
    monkeypatch.setattr(ray, "wait", spy_wait)
    return events


def _start(events, n, **options):
    rt = make_runtime("ray", **options)
    specs = [PartySpec(f"p{i:02d}", Quiet, {"me": f"p{i:02d}"}) for i in range(n)]
    rt.start(specs, RunContext(run_id="s", secure_channels=True))
    started = list(events)
    return rt, started


@pytest.mark.parametrize("options, n_hosts", [
    ({"layout": "hosted", "hosts": 2}, 2),
    ({"layout": "hosted"}, 1),  # the default on 2 CPUs: one host, and the recorder
    ({"layout": "actor-per-party"}, 2),
])
def test_start_makes_one_setup_call_per_host_before_any_wait(ray_local, spy, options, n_hosts):
    n = 8 if options["layout"] == "hosted" else 2
    rt, started = _start(spy, n, **options)
    try:
        calls = [m for kind, m in started if kind == "remote"]
        assert calls.count("add_parties") == n_hosts
        assert calls.count("add_party") == 0
        assert calls.count("register_peers") == n_hosts
        assert len(calls) == 2 * n_hosts  # nothing else is called on the hosts at start
        assert len(rt.host_members) == n_hosts
        # every host is asked for its parties before the driver waits on any of them
        first_wait = next(i for i, (kind, _) in enumerate(started) if kind == "wait")
        last_add = max(i for i, e in enumerate(started) if e == ("remote", "add_parties"))
        assert last_add < first_wait
        # the parties are all there, each on its own host's batch
        refs = [rt.call(f"p{i:02d}", "name") for i in range(n)]
        assert rt.fetch(refs) == [f"p{i:02d}" for i in range(n)]
    finally:
        rt.shutdown()


def test_a_party_that_fails_to_build_fails_start_with_its_error(ray_local):
    rt = make_runtime("ray", layout="hosted", hosts=1)
    specs = [PartySpec("a", Quiet, {"me": "a"}), PartySpec("b", Quiet, {"me": "b"}),
             PartySpec("c", Refused, {"me": "c"}), PartySpec("d", Quiet, {"me": "d"})]
    try:
        with pytest.raises(ConfigError, match="'c': refused at construction"):
            rt.start(specs, RunContext(run_id="s"))
    finally:
        rt.shutdown()


def test_setup_deadline_holds_for_all_hosts_together(ray_local):
    # two hosts, each slower than the deadline: the first unanswered one is named
    rt = make_runtime("ray", layout="hosted", hosts=2)
    specs = [PartySpec(f"q{i}", Quiet, {"me": f"q{i}", "delay": 30.0}) for i in range(4)]
    try:
        with pytest.raises(PartyFailure, match="no answer within 1.5 s") as info:
            rt.start(specs, RunContext(run_id="s", startup_timeout_s=1.5))
    finally:
        rt.shutdown()
    assert info.value.party == "q0"


def _python(code: str) -> str:
    """What a fresh interpreter prints running ``code`` (stripped)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return out.stdout.strip()


def test_party_host_worker_imports_no_heavy_writer_or_plotting():
    code = ("import sys, ppknn.protocols.ppknn_ring.parties.ring_owner, ppknn.core.runtime.host; "
            "print(' '.join(m for m in ('pyarrow', 'matplotlib', 'sklearn', 'pandas', "
            "'scipy', 'ppknn.core.dp.smooth', 'ppknn.core.dp.planar', 'ppknn.core.dp.selection', "
            "'cryptography.hazmat.primitives.serialization') if m in sys.modules))")
    assert _python(code) == ""


def test_lazy_package_names_are_the_objects_not_their_modules():
    """``ppknn.core.dp`` imports its names on first use; each is what its module defines."""
    code = ("import importlib, ppknn.core.dp as dp, ppknn.core.dp.audit; "
            "from ppknn.core.dp import *; import ppknn.core.transcript as t; "
            "bad = [n for n in dp.__all__ if getattr(dp, n) is not getattr(importlib.import_module("
            "getattr(dp, n).__module__), n)]; "
            "print(bad, callable(dp.audit), len(t.SCHEMA))")
    assert _python(code) == "[] True 12"
