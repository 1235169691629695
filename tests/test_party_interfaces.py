"""Each role's party class implements the role's typed interface, and drivers go through it.

The interface (``protocols/<name>/api.py``) is a ``typing.Protocol``; the
party class declares it (subclasses it) and defines every method with the
same signature (``inspect.signature``: names, kinds, defaults, annotations,
return type). The typed handle checks a driver's calls against it.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Protocol

import pytest

from ppknn.core.errors import ConfigError
from ppknn.core.runtime import PREVIOUS, InProcessRuntime
from ppknn.core.runtime.base import Call, Step
from ppknn.core.runtime.typed import implements, interface_methods, typed
from ppknn.simulations import registry

ROOT = Path(__file__).resolve().parents[1]
# every built-in role names its interface; a plugin installed beside them may name none
ROLES = [(p.name, r) for p in registry.plugins() for r in p.roles
         if type(p).__module__.startswith(registry.BUILTIN) or r.api is not None]


def test_every_builtin_role_names_its_interface():
    builtin = [p for p in registry.plugins() if type(p).__module__.startswith(registry.BUILTIN)]
    assert len(builtin) >= 6
    assert [(p.name, r.name) for p in builtin for r in p.roles if r.api is None] == []


@pytest.mark.parametrize(("protocol", "role"), ROLES, ids=[f"{p}:{r.name}" for p, r in ROLES])
def test_party_class_implements_its_role_interface(protocol, role):
    assert getattr(role.api, "_is_protocol", False)
    assert role.api in role.party.__mro__, "the party class declares its interface"
    assert implements(role.party, role.api) == []
    for name, sig in interface_methods(role.api).items():
        mine = inspect.signature(getattr(role.party, name))
        assert list(mine.parameters)[1:] == list(sig.parameters), name


def test_interfaces_live_beside_their_protocol_and_import_no_party_or_ray():
    for path in sorted((ROOT / "protocols").glob("*/api.py")):
        tree = ast.parse(path.read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if "parties" in m or m.split(".")[0] == "ray"], path


class _EchoAPI(Protocol):
    def echo(self, incoming: object, times: int) -> object: ...

    def ping(self) -> int: ...


class _Echo:
    def echo(self, incoming: object, times: int) -> object:
        return incoming

    def ping(self) -> int:
        return 1


class _WrongEcho(_EchoAPI):
    def echo(self, incoming: object, times: int = 2) -> object:  # a default the API lacks
        return incoming


def test_implements_catches_a_missing_method_and_a_changed_signature():
    assert implements(_Echo, _EchoAPI) == []
    problems = implements(_WrongEcho, _EchoAPI)
    assert len(problems) == 2
    assert "_WrongEcho.echo(incoming: 'object', times: 'int' = 2)" in problems[0]
    assert "does not define ping" in problems[1]  # the interface's `...` body does not count


def test_typed_handle_is_the_runtime_call_underneath():
    class Recorder(InProcessRuntime):
        def __init__(self):
            super().__init__()
            self.calls = []

        def call(self, party, method, *args, protocol="", round=0, num_returns=1):
            self.calls.append((party, method, args, protocol, round, num_returns))
            return f"ref-{len(self.calls)}"

    rt = Recorder()
    echo = typed(rt, _EchoAPI, ["a", "b"])
    assert echo.call("a", protocol="p", round=3).echo("m", 2) == "ref-1"
    assert echo.call("b", num_returns=2).ping() == "ref-2"
    assert rt.calls == [("a", "echo", ("m", 2), "p", 3, 1), ("b", "ping", (), "", 0, 2)]
    assert echo.plan("a", protocol="p", round=1).echo(PREVIOUS, 4) == Step("a", "echo", (4,),
                                                                             "p", 1)
    assert echo.plan("b").ping() == Call("b", "ping", (), "", 0)
    assert list(echo) == ["a", "b"] and len(echo) == 2


@pytest.mark.parametrize(("use", "message"), [
    (lambda h: h.call("a").echo("m"), r"_EchoAPI.echo\(incoming, times\): missing a required"),
    (lambda h: h.call("a").echo("m", 1, 2), "too many positional arguments"),
    (lambda h: h.call("a").echo("m", times=1), "pass arguments by position"),
    (lambda h: h.call("z").ping(), "party 'z' does not play _EchoAPI here"),
    (lambda h: h.plan("a").echo(1, PREVIOUS), "PREVIOUS stands only as the first argument"),
])
def test_typed_handle_refuses_a_call_the_interface_does_not_allow(use, message):
    handle = typed(InProcessRuntime(), _EchoAPI, ["a"])
    with pytest.raises(ConfigError, match=message):
        use(handle)


def test_typed_handle_refuses_an_unknown_method_and_a_non_interface():
    handle = typed(InProcessRuntime(), _EchoAPI, ["a"])
    with pytest.raises(AttributeError, match=r"_EchoAPI has no method 'pong'; its methods: "
                                             r"\['echo', 'ping'\]"):
        handle.call("a").pong()
    with pytest.raises(ConfigError, match="is not a typing.Protocol interface"):
        typed(InProcessRuntime(), _Echo, ["a"])
