"""Permissions: verdicts, kinds, built-ins, the effective list, run-start checks and the check phase of a run."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import warnings
from typing import Any

import pytest

from alpineagents import permissions as permissions_module
from alpineagents._turn.permission_rules import (
    Owner,
    PermissionList,
    adecide,
    check_run_start,
    decide,
    effective_permissions,
)
from alpineagents.agent import Agent
from alpineagents.errors import NoHumanError, PermissionWarning, ToolError
from alpineagents.human import Human, parse_answer
from alpineagents.permissions import (
    AllowByDefault,
    AllowByName,
    AllowByReadOnly,
    Allowed,
    AllowPermission,
    DecideByHuman,
    DecidePermission,
    Denied,
    DenyByName,
    DenyPermission,
    Permission,
    check_verdict,
)
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.testing import FakeHuman, FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import (
    ErrorEntry,
    Exchange,
    ExchangeEntry,
    Message,
    StopEntry,
    StoppedByFinish,
    StoppedByPermission,
    StoppedByUntil,
    ToolCall,
    ToolOutcome,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultEntry,
)
from conftest import results, task


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name, args, f"id_{name}")


class Recorder(DecidePermission):
    def __init__(self, verdict: Any = None, log: list[str] | None = None, name: str = "r") -> None:
        self.verdict = verdict
        self.log = log if log is not None else []
        self.name = name

    def check(self, state: Any, call: ToolCall, tool: Any) -> Any:
        self.log.append(self.name)
        return self.verdict

    def __repr__(self) -> str:
        return f"Recorder({self.name!r})"


class SyncHuman(Human):
    def __init__(self, answer: Any = "yes") -> None:
        self.answer = answer

    def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
        return parse_answer(self.answer, returns)


class AsyncHuman(Human):
    async def aask(self, state: Any, prompt: str, returns: Any = str) -> Any:
        return parse_answer("yes", returns)


# --- 1. exports ------------------------------------------------------------------------------------------------


def test_the_permissions_module_exports_its_names_in_order():
    assert permissions_module.__all__ == [
        "Permission",
        "DenyPermission",
        "AllowPermission",
        "DecidePermission",
        "Allowed",
        "Denied",
        "DenyByName",
        "AllowByName",
        "AllowByReadOnly",
        "DecideByHuman",
        "AllowByDefault",
        "Deferred",
        "DeferByName",
    ]
    import alpineagents

    for name in permissions_module.__all__:
        assert not hasattr(alpineagents, name)
    from alpineagents.permissions import DecideByHuman as imported

    assert imported is DecideByHuman


def test_the_root_exports_reporter_human_and_terminal_but_no_permission():
    import alpineagents
    from alpineagents.human import Human as H
    from alpineagents.reporter import Reporter as R
    from alpineagents.terminal import Terminal as T

    assert alpineagents.Reporter is R  # type: ignore[attr-defined]
    assert alpineagents.Human is H  # type: ignore[attr-defined]
    assert alpineagents.Terminal is T  # type: ignore[attr-defined]


def test_importing_permissions_does_not_load_mcp():
    import subprocess
    import sys

    code = (
        "import sys, alpineagents.permissions, alpineagents.terminal;"
        "assert 'mcp' not in sys.modules"  # the MCP SDK; alpineagents.mcp_tools itself is re-exported
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- 2. verdicts -----------------------------------------------------------------------------------------------


def test_denied_validates_its_reason_and_stop_and_verdicts_compare_by_value():
    with pytest.raises(ValueError) as info:
        Denied("  ")
    assert "Denied got an empty reason" in str(info.value)
    assert "Fix:" in str(info.value)
    with pytest.raises(TypeError, match="Denied takes a reason string") as info:
        Denied(None)  # type: ignore[arg-type]
    assert "Fix:" in str(info.value)
    with pytest.raises(TypeError, match="stop= takes True or False") as info:
        Denied("x", stop="yes")  # type: ignore[arg-type]
    assert "Fix:" in str(info.value)
    with pytest.raises(TypeError, match=r"Denied: stop= takes True or False \(got: 1\)"):
        Denied("x", stop=1)  # type: ignore[arg-type]
    assert Denied("no") == Denied("no", stop=False)
    assert Denied("no") != Denied("no", stop=True)
    with pytest.raises(AttributeError):
        Denied("no").reason = "x"  # type: ignore[misc]
    assert Allowed() == Allowed()
    assert hash(Allowed()) == hash(Allowed())
    assert repr(Allowed()) == "Allowed()"
    assert repr(Denied("no")) == "Denied(reason='no', stop=False)"
    assert Denied(reason="r", stop=True).stop is True
    assert dataclasses.is_dataclass(Denied)


# --- 3-6. kinds ------------------------------------------------------------------------------------------------


def test_a_direct_subclass_of_permission_is_refused_when_created():
    class P(Permission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return None

    with pytest.raises(TypeError, match="P subclasses Permission directly") as info:
        P()
    fix = str(info.value).split("Fix:")[1]
    for kind in ("DenyPermission", "AllowPermission", "DecidePermission"):
        assert kind in fix


def test_a_permission_of_two_kinds_is_refused():
    class B(DenyPermission, AllowPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return None

    with pytest.raises(TypeError, match=r"more than one kind of permission \(DenyPermission, AllowPermission\)"):
        B()

    class C(DecidePermission, DenyPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return None

    with pytest.raises(TypeError, match=r"C subclasses more than one kind of permission \(DenyPermission, Decide"):
        C()


def test_a_permission_whose_check_is_an_async_def_is_refused_when_created():
    class Slow(AllowPermission):
        async def check(self, state: Any, call: Any, tool: Any) -> Any:  # meant: acheck
            return Allowed()

    with pytest.raises(TypeError) as info:
        Slow()
    text = str(info.value)
    assert text.startswith("Slow.check is an async def, and check must be a plain def")
    assert "Name the async method acheck" in text and "async def acheck(self, state, call, tool)" in text


def test_a_permission_without_check_or_acheck_is_refused():
    class N(DecidePermission):
        pass

    with pytest.raises(TypeError, match="N implements neither check nor acheck"):
        N()
    with pytest.raises(TypeError, match="DenyPermission implements neither check nor acheck"):
        DenyPermission()
    with pytest.raises(TypeError, match="implements neither check nor acheck"):
        AllowPermission()

    class Middle(AllowPermission):  # abstract intermediate: declaring is fine
        pass

    class Leaf(Middle):
        def __init__(self, a: int, *, b: str = "x") -> None:
            self.a = a

    with pytest.raises(TypeError, match="Leaf implements neither"):
        Leaf(1, b="y")

    class Ok(Middle):
        def __init__(self, a: int, *, b: str = "x") -> None:
            self.a = a

        async def acheck(self, state: Any, call: Any, tool: Any) -> Any:
            return None

    assert Ok(1, b="y").a == 1


def test_the_default_repr_is_the_class_name():
    class Mine(AllowPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return None

    assert repr(Mine()) == "Mine()"


def test_acheck_only_sync_check_raises():
    class AsyncOnly(DecidePermission):
        async def acheck(self, state: Any, call: Any, tool: Any) -> Any:
            return Allowed()

    with pytest.raises(TypeError, match=r"AsyncOnly\(\) checks calls only asynchronously") as info:
        AsyncOnly().check(None, call("x"), None)  # type: ignore[arg-type]
    assert "arun" in str(info.value)
    assert asyncio.run(AsyncOnly().acheck(None, call("x"), None)) == Allowed()  # type: ignore[arg-type]


def test_default_acheck_runs_check_on_worker_thread():
    threads: list[int] = []

    class Sync(AllowPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            threads.append(threading.get_ident())
            return Allowed()

    async def main() -> tuple[Any, int]:
        return await Sync().acheck(None, call("x"), None), threading.get_ident()  # type: ignore[arg-type]

    verdict, loop_thread = asyncio.run(main())
    assert verdict == Allowed()
    assert threads[0] != loop_thread


# --- 7-9. by name ----------------------------------------------------------------------------------------------


def test_deny_by_name_refuses_matching_names_with_its_reason():
    p = DenyByName(["github__*", "rm"])
    assert p.check(None, call("github__delete_repo"), None) == Denied("github__delete_repo is not allowed.")  # type: ignore[arg-type]
    assert p.check(None, call("rm"), None) == Denied("rm is not allowed.")  # type: ignore[arg-type]
    assert p.check(None, call("rmdir"), None) is None  # type: ignore[arg-type]
    assert p.check(None, call("GITHUB__x"), None) is None  # type: ignore[arg-type]  # case-sensitive
    assert DenyByName(["rm"], reason="Use trash").check(None, call("rm"), None) == Denied("Use trash")  # type: ignore[arg-type]
    assert p.patterns == ("github__*", "rm")
    assert p.reason is None
    assert DenyByName([]).check(None, call("rm"), None) is None  # type: ignore[arg-type]
    assert DenyByName(["r?", "[ab]*"]).check(None, call("rm"), None) == Denied("rm is not allowed.")  # type: ignore[arg-type]
    assert DenyByName(["[!a]*"]).check(None, call("abc"), None) is None  # type: ignore[arg-type]
    assert isinstance(p, DenyPermission)


def test_allow_by_name_and_default():
    p = AllowByName(["read_*"])
    assert p.check(None, call("read_file"), None) == Allowed()  # type: ignore[arg-type]
    assert p.check(None, call("write_file"), None) is None  # type: ignore[arg-type]
    assert p.patterns == ("read_*",)
    assert AllowByDefault().check(None, call("anything"), None) == Allowed()  # type: ignore[arg-type]
    assert repr(AllowByDefault()) == "AllowByDefault()"
    with pytest.raises(TypeError):
        AllowByDefault(1)  # type: ignore[call-arg]


def test_built_in_reprs_show_their_settings_and_subclass_names():
    assert repr(DenyByName(("rm",))) == "DenyByName(['rm'])"
    assert repr(DenyByName(["rm"], reason="No")) == "DenyByName(['rm'], reason='No')"
    assert repr(AllowByName(["read_*"])) == "AllowByName(['read_*'])"

    class DenyShell(DenyByName):
        pass

    assert repr(DenyShell(["bash"], reason="No")) == "DenyShell(['bash'], reason='No')"
    assert repr(DenyShell(["bash"])) == "DenyShell(['bash'])"


def test_name_patterns_and_reasons_are_validated():
    with pytest.raises(TypeError) as info:
        DenyByName("rm")  # type: ignore[arg-type]
    assert "DenyByName takes a list of name patterns (got: 'rm')" in str(info.value)
    assert "square brackets" in str(info.value)
    with pytest.raises(TypeError, match="DenyByName takes a list of name patterns"):
        DenyByName(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError) as info:
        AllowByName([1])  # type: ignore[list-item]
    assert "AllowByName takes name patterns as strings (got: 1)" in str(info.value)
    with pytest.raises(TypeError, match="AllowByName takes a list of name patterns"):
        AllowByName("read_*")  # type: ignore[arg-type]
    with pytest.raises(TypeError) as type_info:
        DenyByName(["rm"], reason=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError) as value_info:
        DenyByName(["rm"], reason="")
    assert "DenyByName: reason= takes a string, what the model is told (got: 3)" in str(type_info.value)
    assert "DenyByName got an empty reason=. Providers reject empty tool results" in str(value_info.value)
    with pytest.raises(ValueError):
        DenyByName(["rm"], reason="   ")
    for text in (str(type_info.value), str(value_info.value)):
        assert 'DenyByName(["delete_*"], reason="Deleting files is not allowed")' in text
        assert "reason=" in text
        assert "Denied" not in text.replace("DenyByName", "")


# --- 10-11. read-only ------------------------------------------------------------------------------------------


def test_allow_by_read_only_follows_the_per_call_hints():
    from alpineagents.tool import Hints, tool

    @tool(read_only=True)
    def look(path: str) -> str:
        """Look."""
        return path

    @tool
    def write(path: str) -> str:
        """Write."""
        return path

    def shell_hints(args: dict) -> Hints | None:
        return Hints(read_only=True) if args.get("command") == "ls" else None

    @tool(hints_for=shell_hints)
    def shell(command: str) -> str:
        """Run."""
        return command

    p = AllowByReadOnly()
    assert p.check(None, call("look", path="a"), look) == Allowed()  # type: ignore[arg-type]
    assert p.check(None, call("write", path="a"), write) is None  # type: ignore[arg-type]
    assert p.check(None, call("shell", command="ls"), shell) == Allowed()  # type: ignore[arg-type]
    assert p.check(None, call("shell", command="rm -rf /"), shell) is None  # type: ignore[arg-type]
    assert p.check(None, call("shell", command=42), shell) is None  # type: ignore[arg-type]  # unvalidated args


def test_hint_function_errors_behave_like_permission_errors():
    from alpineagents.tool import tool

    def raising_hints(args: dict) -> Any:
        if args.get("command") == "ls":
            raise ToolError("cannot tell")
        raise RuntimeError("hints broke")

    @tool(hints_for=raising_hints)
    def shell(command: str) -> str:
        """Run."""
        return command

    decision = decide([AllowByReadOnly()], None, call("shell", command="ls"), shell)  # type: ignore[arg-type]
    assert decision.verdict == Denied("cannot tell")
    assert decision.decided_by == "AllowByReadOnly()"
    assert isinstance(decision.error, ToolError)
    with pytest.raises(RuntimeError) as info:
        decide([AllowByReadOnly()], None, call("shell", command="rm"), shell)  # type: ignore[arg-type]
    assert info.value.__notes__ == ['exception raised in permission AllowByReadOnly() checking shell(command="rm")']


def test_allow_by_read_only_validates_trust_mcp_and_shows_it():
    with pytest.raises(TypeError, match="trust_mcp= takes True or False") as info:
        AllowByReadOnly(trust_mcp="yes")  # type: ignore[arg-type]
    assert "AllowByReadOnly: trust_mcp= takes True or False (got: 'yes')" in str(info.value)
    assert repr(AllowByReadOnly()) == "AllowByReadOnly()"
    assert repr(AllowByReadOnly(trust_mcp=True)) == "AllowByReadOnly(trust_mcp=True)"
    assert AllowByReadOnly().trust_mcp is False


def _mcp_tool(read_only: bool) -> Any:
    import importlib

    import mcp.types

    mcp_tools = importlib.import_module("alpineagents.mcp_tools")
    server = mcp_tools.MCP("true", name="demo")
    remote = mcp.types.Tool(
        name="ro",
        description="reads",
        inputSchema={"type": "object", "properties": {}},
        annotations=mcp.types.ToolAnnotations(readOnlyHint=read_only),
    )
    return mcp_tools.MCPTool(server, remote)


def test_mcp_hints_are_not_believed_by_default():
    pytest.importorskip("alpineagents.mcp_tools")
    mcp_tool = _mcp_tool(True)
    assert mcp_tool.read_only is True
    c = call(mcp_tool.name)
    assert AllowByReadOnly().check(None, c, mcp_tool) is None  # type: ignore[arg-type]
    assert AllowByReadOnly(trust_mcp=True).check(None, c, mcp_tool) == Allowed()  # type: ignore[arg-type]
    assert AllowByReadOnly(trust_mcp=True).check(None, c, _mcp_tool(False)) is None  # type: ignore[arg-type]


# --- verdict type check, decide --------------------------------------------------------------------------------


def test_check_verdict_messages():
    class Wrong(DenyPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return Allowed()

    class WrongAllow(AllowPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return Denied("no")

    class WrongDecide(DecidePermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return True

    with pytest.raises(TypeError) as info:
        check_verdict(Wrong(), Allowed())
    text = str(info.value)
    assert "Wrong() returned Allowed(), and a DenyPermission may return only Denied(...) or None" in text
    assert "DecidePermission" in text.split("Fix:")[1]
    assert "Denied(" in text.split("Example:")[1]
    with pytest.raises(TypeError) as info:
        check_verdict(WrongAllow(), Denied("no"))
    text = str(info.value)
    assert "an AllowPermission may return only Allowed() or None" in text
    example = text.split("Example:")[1]
    assert "Allowed()" in example and "Denied" not in example
    with pytest.raises(TypeError) as info:
        check_verdict(WrongDecide(), True)
    text = str(info.value)
    assert (
        "WrongDecide() returned True, and a DecidePermission may return only Allowed() or Denied(...) or Deferred(...) or None"
        in text
    )
    assert "Denied(" in text.split("Example:")[1]
    with pytest.raises(TypeError):
        check_verdict(WrongDecide(), "yes")
    for p in (Wrong(), WrongAllow(), WrongDecide()):
        check_verdict(p, None)


def test_decide_passes_and_nobody():
    log: list[str] = []
    perms = [
        Recorder(None, log, "allow1"),
        DenyRec(None, log, "deny1"),
        Recorder(None, log, "decide"),
        DenyRec(None, log, "deny2"),
        Recorder(Allowed(), log, "allow2"),
    ]
    decision = decide(perms, None, call("x"), None)  # type: ignore[arg-type]
    assert log == ["deny1", "deny2", "allow1", "decide", "allow2"]
    assert decision.verdict == Allowed()
    assert decision.decided_by == "Recorder('allow2')"

    log.clear()
    perms[3] = DenyRec(Denied("no"), log, "deny2")
    decision = decide(perms, None, call("x"), None)  # type: ignore[arg-type]
    assert log == ["deny1", "deny2"]
    assert decision.verdict == Denied("no")
    assert decision.decided_by == "DenyRec('deny2')"

    with pytest.warns(PermissionWarning) as record:
        decision = decide([], None, call("read_file"), None)  # type: ignore[arg-type]
    assert decision.verdict == Denied("No permission allowed this call.")
    assert decision.decided_by is None and decision.error is None
    message = str(record[0].message)
    assert "No permission allowed or denied the call to read_file, so it was denied" in message
    assert "AllowByDefault()" in message


def test_decide_errors_and_async_twin():
    class Raising(DecidePermission):
        def __init__(self, error: BaseException) -> None:
            self.error = error

        def check(self, state: Any, call: Any, tool: Any) -> Any:
            raise self.error

        def __repr__(self) -> str:
            return "Raising()"

    err = ToolError("Could not check")
    decision = decide([Raising(err), AllowByDefault()], None, call("bash"), None)  # type: ignore[arg-type]
    assert decision.verdict == Denied("Could not check")
    assert decision.error is err and decision.decided_by == "Raising()"
    boom = RuntimeError("checker broke")
    with pytest.raises(RuntimeError) as info:
        decide([Raising(boom)], None, call("bash", command="ls"), None)  # type: ignore[arg-type]
    assert info.value.__notes__ == ['exception raised in permission Raising() checking bash(command="ls")']
    with pytest.raises(KeyboardInterrupt) as kb:
        decide([Raising(KeyboardInterrupt())], None, call("bash"), None)  # type: ignore[arg-type]
    assert not getattr(kb.value, "__notes__", None)

    class Wrong(DenyPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return Allowed()

    with pytest.raises(TypeError) as type_info:
        decide([Wrong()], None, call("bash"), None)  # type: ignore[arg-type]
    assert not getattr(type_info.value, "__notes__", None)

    async def main() -> Any:
        d1 = await adecide([DenyByName(["bash"]), AllowByDefault()], None, call("bash"), None)  # type: ignore[arg-type]
        d2 = await adecide([Raising(ToolError("nope"))], None, call("bash"), None)  # type: ignore[arg-type]
        with pytest.raises(RuntimeError) as info:
            await adecide([Raising(RuntimeError("x"))], None, call("bash"), None)  # type: ignore[arg-type]
        return d1, d2, info.value.__notes__

    d1, d2, notes = asyncio.run(main())
    assert d1.verdict == Denied("bash is not allowed.") and d1.decided_by == "DenyByName(['bash'])"
    assert d2.verdict == Denied("nope")
    assert notes == ["exception raised in permission Raising() checking bash()"]


class DenyRec(DenyPermission):
    def __init__(self, verdict: Any = None, log: list[str] | None = None, name: str = "d") -> None:
        self.verdict = verdict
        self.log = log if log is not None else []
        self.name = name

    def check(self, state: Any, call: ToolCall, tool: Any) -> Any:
        self.log.append(self.name)
        return self.verdict

    def __repr__(self) -> str:
        return f"DenyRec({self.name!r})"


# --- effective list and run-start checks ---------------------------------------------------------------------


def test_effective_permissions():
    lead_human, sub_human = SyncHuman(), SyncHuman()
    deny, allow, decide_p = DenyByName(["rm"]), AllowByDefault(), DecideByHuman()
    assert effective_permissions(None, lead_human) is None
    top = effective_permissions((allow, deny, decide_p), lead_human)
    assert isinstance(top, PermissionList)
    assert tuple(top) == (allow, deny, decide_p)
    assert top.owners == (Owner(lead_human),) * 3
    empty = effective_permissions((), lead_human)
    assert empty is not None and tuple(empty) == ()

    # a subagent without a list inherits the whole list with its owners
    assert effective_permissions(None, sub_human, above=top, subagent=True) is top
    assert effective_permissions(None, sub_human, above=None, subagent=True) is None
    # a subagent with a list: the denials above, then its own list
    own_allow = AllowByName(["read_*"])
    sub = effective_permissions((own_allow,), sub_human, inherited=True, above=top, subagent=True)
    assert sub is not None
    assert tuple(sub) == (deny, own_allow)
    assert sub.owners == (Owner(lead_human), Owner(sub_human, True))
    # another Agent inside: denials above only, and undecided calls are allowed
    other = effective_permissions(None, sub_human, above=top)
    assert other is not None and tuple(other)[0] is deny
    assert decide(other, None, call("ls"), None).verdict == Allowed()  # type: ignore[arg-type]
    assert decide(other, None, call("rm"), None).verdict == Denied("rm is not allowed.")  # type: ignore[arg-type]
    assert effective_permissions(None, sub_human, above=(allow,)) is None
    mine = effective_permissions((allow,), sub_human, above=top)
    assert mine is not None and tuple(mine) == (deny, allow)


def test_owner_is_the_default_human_of_decide_by_human():
    seen: list[Any] = []

    class Probe(DecideByHuman):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            seen.append(permissions_module.ASKED_OWNER.get())
            return Allowed()

    owner_human = SyncHuman()
    listed = effective_permissions((Probe(),), owner_human)
    assert listed is not None
    decide(listed, None, call("x"), None)  # type: ignore[arg-type]
    assert seen[-1] == Owner(owner_human)
    decide([Probe()], None, call("x"), None, owners=[owner_human])  # type: ignore[arg-type]
    assert seen[-1] == Owner(owner_human)

    async def main() -> None:
        await adecide(listed, None, call("x"), None)  # type: ignore[arg-type]

    asyncio.run(main())
    assert seen[-1] == Owner(owner_human)
    assert permissions_module.ASKED_OWNER.get() is None  # the owner is set only while a permission is asked


def test_check_run_start_rules():
    class AsyncOnly(DecidePermission):
        async def acheck(self, state: Any, call: Any, tool: Any) -> Any:
            return Allowed()

    with pytest.raises(TypeError) as info:
        check_run_start((AllowByDefault(), AsyncOnly()), method="run", human=SyncHuman())
    text = str(info.value)
    assert "AsyncOnly() in permissions= checks calls only asynchronously" in text
    assert "so this Agent cannot run with run()" in text
    assert "arun()" in text
    check_run_start((AsyncOnly(),), method="arun", human=SyncHuman())

    with pytest.raises(NoHumanError) as no_human:
        check_run_start((DecideByHuman(),), method="run", human=None)
    assert "DecideByHuman() in permissions= asks the Agent's human, and this Agent has human=None" in str(
        no_human.value
    )
    with pytest.raises(NoHumanError):
        check_run_start((DecideByHuman(),), method="arun", human=None)
    with pytest.raises(NoHumanError) as inherited:
        check_run_start((DecideByHuman(),), method="arun", human=None, inherited=True)
    text = str(inherited.value)
    assert "asks the Agent's human, and this subagent has no human to ask" in text
    assert "(it was not given a human and the run that started it has human=None)" in text
    assert "give one to the Agent that runs it" in text
    check_run_start((DecideByHuman(human=SyncHuman()),), method="run", human=None)

    with pytest.raises(TypeError) as async_human:
        check_run_start((DecideByHuman(),), method="run", human=AsyncHuman())
    text = str(async_human.value)
    assert "DecideByHuman() in permissions= asks AsyncHuman, which answers only asynchronously" in text
    assert "(it implements aask, not ask), so this Agent cannot run with run()" in text
    assert "await agent.arun(" in text and "aask_human" not in text
    check_run_start((DecideByHuman(),), method="arun", human=AsyncHuman())

    class DuckAsync:
        async def aask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "yes"

    with pytest.raises(TypeError, match="asks DuckAsync, which answers only asynchronously"):
        check_run_start((DecideByHuman(human=DuckAsync()),), method="run")

    class NeverAsks(DecideByHuman):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return Allowed()

    check_run_start((NeverAsks(),), method="run", human=AsyncHuman())  # exempt from rule 3

    class AsyncSub(DecideByHuman):
        async def acheck(self, state: Any, call: Any, tool: Any) -> Any:
            return await super().acheck(state, call, tool)

    with pytest.raises(TypeError, match=r"AsyncSub\(\) in permissions= checks calls only asynchronously"):
        check_run_start((AsyncSub(),), method="run", human=SyncHuman())
    # list order: the first failing permission raises
    with pytest.raises(NoHumanError):
        check_run_start((DecideByHuman(), AsyncOnly()), method="run", human=None)
    # owners from a PermissionList / owners=
    listed = effective_permissions((DecideByHuman(),), None, inherited=True)
    with pytest.raises(NoHumanError, match="this subagent has no human to ask"):
        check_run_start(listed, method="run")
    check_run_start((DecideByHuman(),), method="run", owners=[SyncHuman()])
    check_run_start(None, method="run")


# --- 28. DecideByHuman construction and repr -------------------------------------------------------------------


def test_decide_by_human_rejects_non_humans():
    from alpineagents.testing import FakeHuman

    for bad in (FakeHuman, object(), SyncHuman):
        with pytest.raises(TypeError, match="is not a Human object") as info:
            DecideByHuman(human=bad)  # type: ignore[arg-type]
        assert f"DecideByHuman: human={bad!r} is not a Human object" in str(info.value)

    class Duck:
        def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "yes"

    assert isinstance(DecideByHuman(human=Duck()).human, Duck)  # type: ignore[arg-type]


def test_decide_by_human_repr_never_shows_a_memory_address():
    from alpineagents.testing import FakeHuman

    class Named(Human):
        def __init__(self, channel: str) -> None:
            self.channel = channel

        def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "yes"

        def __repr__(self) -> str:
            return f"Named({self.channel!r})"

    assert repr(DecideByHuman()) == "DecideByHuman()"
    assert repr(DecideByHuman(human=FakeHuman(["yes"]))) == "DecideByHuman(human=FakeHuman())"
    assert repr(DecideByHuman(human=Named("#ops"))) == "DecideByHuman(human=Named('#ops'))"
    shown = repr(DecideByHuman(human=SyncHuman()))
    assert shown == "DecideByHuman(human=SyncHuman())"
    assert "0x" not in shown

    class Mine(DecideByHuman):
        pass

    assert repr(Mine()) == "Mine()"
    q = DecideByHuman().question(ToolCall("write_file", {"path": "a", "content": "x"}, "c"), None)  # type: ignore[arg-type]
    assert q == 'Run write_file(path="a", content="x")?'


def test_decide_by_human_on_a_state_without_an_agent_is_refused():
    state = task()
    with pytest.raises(ValueError, match="no Agent yet") as info:
        DecideByHuman().check(state, call("x"), None)  # type: ignore[arg-type]
    assert "DecideByHuman() asks through the Agent running the State, and this State has no Agent yet" in str(
        info.value
    )


def test_warnings_filter_silences_permission_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=PermissionWarning)
        decision = decide([], None, call("x"), None)  # type: ignore[arg-type]
    assert decision.verdict == Denied("No permission allowed this call.")


# --- run-level checks (12-33) ----------------------------------------------------------------------------------

RAN: list[str] = []


@tool
def bash(command: str = "") -> str:
    """Run a command."""
    RAN.append("bash")
    return "ran " + command


@tool(read_only=True)
def read_file(path: str = "") -> str:
    """Read a file."""
    RAN.append("read_file")
    return "contents"


@tool
def write_file(path: str = "", content: str = "") -> str:
    """Write a file."""
    RAN.append("write_file")
    return "written"


@tool
def look() -> str:
    """Look around."""
    RAN.append("look")
    return "seen"


TOOLS = [bash, read_file, write_file, look]


@pytest.fixture(autouse=True)
def _clear_ran() -> None:
    RAN.clear()


def agent_with(replies: list[Any], permissions: Any, **settings: Any) -> tuple[Agent, FakeModel]:
    model = FakeModel(replies)
    settings.setdefault("reporter", None)
    settings.setdefault("human", None)
    return Agent(model, tools=TOOLS, permissions=permissions, **settings), model


def by_name(state: State) -> dict[str, ToolResultEntry]:
    return {entry.call.name: entry for entry in results(state)}


class Spy(Reporter):
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_tool_start(self, state: Any, call: Any) -> None:
        self.events.append(("start", call.name))

    def on_tool_end(self, state: Any, call: Any, result: Any, outcome: Any) -> None:
        self.events.append(("end", call.name, result, outcome, state.stopped, state.pending_calls))


def test_denials_are_asked_first_then_the_others_in_list_order():
    log: list[str] = []

    class AllowRec(AllowPermission):
        def __init__(self, verdict: Any, name: str) -> None:
            self.verdict, self.name = verdict, name

        def check(self, state: Any, call: Any, tool: Any) -> Any:
            log.append(self.name)
            return self.verdict

    perms = [
        AllowRec(None, "allow1"),
        DenyRec(None, log, "deny1"),
        Recorder(None, log, "decide"),
        DenyRec(None, log, "deny2"),
        AllowRec(Allowed(), "allow2"),
    ]
    agent, _ = agent_with([tool_call("look"), "Done"], perms)
    assert agent.run("Task") == "Done"
    assert log == ["deny1", "deny2", "allow1", "decide", "allow2"]
    assert RAN == ["look"]


def test_a_denial_listed_after_allow_by_default_still_refuses():
    agent, _ = agent_with(
        [[tool_call("bash", command="ls"), tool_call("read_file", path="a")], "Done"],
        [AllowByDefault(), DenyByName(["bash"])],
    )
    state = task()
    agent.run(state)
    entries = by_name(state)
    assert entries["bash"].content == "bash is not allowed."
    assert entries["bash"].is_error is True
    assert entries["bash"].outcome == ToolOutcomeKind.DENIED
    assert entries["read_file"].outcome == ToolOutcomeKind.DONE
    assert RAN == ["read_file"]


def test_a_call_nobody_decided_is_refused_with_a_warning():
    spy = Spy()
    agent, _ = agent_with([tool_call("read_file", path="a"), "Done"], [DenyByName(["bash"])], reporter=spy)
    state = task()
    with pytest.warns(PermissionWarning) as record:
        agent.run(state)
    message = str(record[0].message)
    assert "read_file" in message and "AllowByDefault()" in message
    assert by_name(state)["read_file"].content == "No permission allowed this call."
    assert by_name(state)["read_file"].outcome == ToolOutcomeKind.DENIED
    ends = [event for event in spy.events if event[0] == "end"]
    assert ends[0][3] == ToolOutcome("denied")
    assert ends[0][3].decided_by is None
    assert ("start", "read_file") not in spy.events
    assert state.stopped == StoppedByUntil("waiting_for_user")
    assert RAN == []


def test_an_empty_list_refuses_every_call_and_none_checks_nothing():
    agent, _ = agent_with([tool_call("look"), "Done"], [])
    state = task()
    with pytest.warns(PermissionWarning):
        agent.run(state)
    assert by_name(state)["look"].outcome == ToolOutcomeKind.DENIED
    assert agent.permissions == ()
    assert RAN == []
    agent2, _ = agent_with([tool_call("look"), "Done"], None)
    state2 = task()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent2.run(state2)
    assert by_name(state2)["look"].outcome == ToolOutcomeKind.DONE
    assert agent2.permissions == ()
    assert RAN == ["look"]


def _use_tools_after_think(perms: list[Any], calls: list[ToolCall]) -> tuple[Agent, State]:
    agent, _ = agent_with([calls], perms)
    state = task()
    agent.think(state)
    return agent, state


def test_a_deny_permission_returning_allowed_raises_and_leaves_the_call_pending():
    class Wrong(DenyPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return Allowed()

    c = tool_call("look")
    agent, state = _use_tools_after_think([Wrong()], [c])
    with pytest.raises(TypeError) as info:
        agent.use_tools(state)
    text = str(info.value)
    assert "Wrong() returned Allowed()" in text
    assert "a DenyPermission may return only Denied(...) or None" in text
    assert not getattr(info.value, "__notes__", None)
    assert state.pending_calls == (c,)
    errors = [entry for entry in state.history if isinstance(entry, ErrorEntry)]
    assert len(errors) == 1 and errors[0].call == c
    assert RAN == []


def test_an_allow_permission_returning_denied_raises():
    class WrongAllow(AllowPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return Denied("no")

    agent, state = _use_tools_after_think([WrongAllow()], [tool_call("look")])
    with pytest.raises(TypeError) as info:
        agent.use_tools(state)
    text = str(info.value)
    assert "an AllowPermission may return only Allowed() or None" in text
    example = text.split("Example:")[1]
    assert "Allowed()" in example and "Denied" not in example


class Raising(DecidePermission):
    def __init__(self, error: BaseException, names: tuple[str, ...] = ("bash",)) -> None:
        self.error = error
        self.names = names

    def check(self, state: Any, call: Any, tool: Any) -> Any:
        if call.name in self.names:
            raise self.error
        return None

    def __repr__(self) -> str:
        return "Raising()"


def test_a_tool_error_from_a_permission_refuses_the_call():
    spy = Spy()
    error = ToolError("Could not check")
    agent, _ = agent_with(
        [[tool_call("bash"), tool_call("read_file")], "Done"], [Raising(error), AllowByDefault()], reporter=spy
    )
    state = task()
    assert agent.run(state) == "Done"
    entry = by_name(state)["bash"]
    assert entry.content == "Could not check"
    assert entry.outcome == ToolOutcomeKind.DENIED
    assert entry.error is error
    end = next(event for event in spy.events if event[0] == "end" and event[1] == "bash")
    assert end[3] == ToolOutcome(ToolOutcomeKind.DENIED, error, "Raising()")
    assert RAN == ["read_file"]
    assert state.stopped == StoppedByUntil("waiting_for_user")


def test_another_exception_from_a_permission_stops_the_run_with_a_note():
    boom = RuntimeError("checker broke")
    calls = [tool_call("write_file"), tool_call("bash", command="ls"), tool_call("look")]
    agent, _ = agent_with([calls], [DenyByName(["write_file"]), Raising(boom), AllowByDefault()])
    state = task()
    with pytest.raises(RuntimeError) as info:
        agent.run(state)
    assert info.value is boom
    assert 'exception raised in permission Raising() checking bash(command="ls")' in info.value.__notes__
    assert RAN == []
    assert [entry.content for entry in results(state)] == [
        "write_file is not allowed.",
        "(aborted: RuntimeError)",
        "(aborted: RuntimeError)",
    ]
    assert state.stopped is None
    errors = [entry for entry in state.history if isinstance(entry, ErrorEntry)]
    assert len(errors) == 1 and errors[0].call == calls[1]


class Stopper(DecidePermission):
    def __init__(self) -> None:
        self.asked: list[str] = []

    def check(self, state: Any, call: Any, tool: Any) -> Any:
        self.asked.append(call.id)
        if len(self.asked) == 1:
            return Allowed()
        return Denied("Stop right there", stop=True)


def _four_calls() -> list[ToolCall]:
    return [tool_call("look"), tool_call("bash"), tool_call("read_file"), tool_call("write_file")]


def test_a_stopping_refusal_closes_the_whole_turn():
    stopper = Stopper()
    calls = _four_calls()
    agent, model = agent_with([calls], [stopper])
    state = task()
    assert agent.run(state) is None
    assert RAN == []
    assert stopper.asked == [calls[0].id, calls[1].id]
    tail = state.history[-5:]
    assert [entry.kind for entry in tail] == ["tool_result"] * 4 + ["stop"]
    assert [(entry.call, entry.outcome) for entry in tail[:4]] == [  # type: ignore[union-attr]
        (calls[1], ToolOutcomeKind.DENIED),
        (calls[0], ToolOutcomeKind.CANCELLED),
        (calls[2], ToolOutcomeKind.CANCELLED),
        (calls[3], ToolOutcomeKind.CANCELLED),
    ]
    assert tail[1].content == "(not run: the user stopped this turn)"
    assert state.stopped == StoppedByPermission(calls[1], "Stopper()")
    assert state.finished is False
    assert state.pending_calls == ()
    assert len(model.requests) == 1


def test_a_stopping_refusal_reports_the_denied_call_then_the_cancelled_ones():
    spy = Spy()
    calls = _four_calls()
    agent, _ = agent_with([calls], [Stopper()], reporter=spy)
    state = task()
    agent.run(state)
    assert not any(event[0] == "start" for event in spy.events)
    ends = [event for event in spy.events if event[0] == "end"]
    assert [event[1] for event in ends] == ["bash", "look", "read_file", "write_file"]
    assert ends[0][2] == "Stop right there"
    assert ends[0][3] == ToolOutcome(ToolOutcomeKind.DENIED, None, "Stopper()")
    for event in ends[1:]:
        assert event[2] == "(not run: the user stopped this turn)"
        assert event[3] == ToolOutcome(ToolOutcomeKind.CANCELLED, None, "Stopper()")
    for event in ends:
        assert event[4] == StoppedByPermission(calls[1], "Stopper()")
        assert event[5] == ()


def test_a_run_continues_after_a_permission_stop():
    calls = _four_calls()
    model = FakeModel([calls, "Done"])
    agent = Agent(model, tools=TOOLS, permissions=[Stopper()], reporter=None, human=None)
    state = task()
    agent.run(state)
    state.add_message(Message.user("Only read"))
    assert agent.run(state) == "Done"
    last = model.requests[-1].messages
    results_message = last[-2]
    blocks = [block for block in results_message.content if isinstance(block, ToolResultBlock)]
    assert [block.call_id for block in blocks] == [c.id for c in calls]
    assert last[-1] == Message.user("Only read")
    assert state.stopped == StoppedByUntil("waiting_for_user")


def test_a_finish_during_the_check_phase_wins_over_a_permission_stop():
    class FinishThenStop(DecidePermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            state.finish("early")
            return Denied("Stop", stop=True)

    agent, _ = agent_with([[tool_call("look"), tool_call("bash")]], [FinishThenStop()])
    state = task()
    agent.run(state)
    assert state.stopped == StoppedByFinish("early")
    assert len([entry for entry in state.history if isinstance(entry, StopEntry)]) == 1


def test_decide_by_human_yes_runs_the_tool_and_records_the_exchange():
    human = FakeHuman(["yes"])
    c = tool_call("write_file", path="a", content="x")
    agent, _ = agent_with([c, "Done"], [DecideByHuman()], human=human)
    state = task()
    assert agent.run(state) == "Done"
    assert human.questions == ['Run write_file(path="a", content="x")?']
    assert RAN == ["write_file"]
    exchanges = [entry for entry in state.history if isinstance(entry, ExchangeEntry)]
    assert len(exchanges) == 1
    assert exchanges[0].kind == "human"
    assert exchanges[0].content == Exchange('Run write_file(path="a", content="x")?', "yes")


def test_decide_by_human_no_refuses_and_stops():
    human = FakeHuman(["no"])
    c = tool_call("write_file", path="a", content="x")
    agent, model = agent_with([c, "Done"], [DecideByHuman()], human=human)
    state = task()
    assert agent.run(state) is None
    entry = by_name(state)["write_file"]
    assert entry.content == "The user declined this call. Wait for their next message."
    assert state.stopped == StoppedByPermission(c, "DecideByHuman()")
    assert len(model.requests) == 1
    assert RAN == []


def test_decide_by_human_with_nobody_to_ask_fails_before_the_run():
    agent, model = agent_with([tool_call("look"), "Done"], [DecideByHuman()], human=None)
    state = task()
    with pytest.raises(NoHumanError) as info:
        agent.run(state)
    assert "DecideByHuman() in permissions= asks the Agent's human" in str(info.value)
    assert model.requests == []
    assert [entry.kind for entry in state.history] == ["context_change"]
    with pytest.raises(NoHumanError, match="in permissions= asks the Agent's human"):
        asyncio.run(agent.arun(state))
    assert model.requests == []


def test_decide_by_human_asks_its_own_human():
    own = FakeHuman(["yes"])
    agent, _ = agent_with([tool_call("look"), "Done"], [DecideByHuman(human=own)], human=None)
    state = task()
    assert agent.run(state) == "Done"
    assert own.questions == ["Run look()?"]
    exchanges = [entry for entry in state.history if isinstance(entry, ExchangeEntry)]
    assert exchanges[0].content == Exchange("Run look()?", "yes")
    assert repr(DecideByHuman(human=own)).startswith("DecideByHuman(human=")

    class Plain(Human):
        def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "yes"

    assert repr(DecideByHuman(human=Plain())) == "DecideByHuman(human=Plain())"


def test_after_think_the_linked_agents_human_is_asked():
    human = FakeHuman(["yes"])
    model = FakeModel(["Hi"])
    agent = Agent(model, tools=TOOLS, reporter=None, human=human)
    state = task()
    c = tool_call("look")
    with pytest.raises(ValueError, match="no Agent yet"):
        DecideByHuman().check(state, c, look)
    agent.think(state)
    assert DecideByHuman().check(state, c, look) == Allowed()
    assert human.questions == ["Run look()?"]
    assert [entry for entry in state.history if isinstance(entry, ExchangeEntry)][0].content.answer == "yes"


def test_an_async_only_permission_refuses_run_and_works_in_arun():
    class AsyncOnly(DecidePermission):
        async def acheck(self, state: Any, call: Any, tool: Any) -> Any:
            return Allowed()

    agent, model = agent_with([tool_call("look"), "Done"], [AsyncOnly()])
    with pytest.raises(TypeError) as info:
        agent.run("Task")
    text = str(info.value)
    assert "AsyncOnly() in permissions= checks calls only asynchronously" in text
    assert "arun()" in text
    assert model.requests == []
    assert asyncio.run(agent.arun("Task")) == "Done"
    assert RAN == ["look"]


def test_decide_by_human_with_an_async_only_human_refuses_run_and_awaits_in_arun():
    loop_threads: list[int] = []
    ask_threads: list[int] = []

    class AsyncHuman(Human):
        async def aask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            ask_threads.append(threading.get_ident())
            return "yes"

    agent, model = agent_with([tool_call("look"), "Done"], [DecideByHuman()], human=AsyncHuman())
    with pytest.raises(TypeError) as info:
        agent.run("Task")
    text = str(info.value)
    assert "asks AsyncHuman, which answers only asynchronously" in text
    assert "await agent.arun(" in text
    assert "aask_human" not in text
    assert model.requests == []

    async def main() -> Any:
        loop_threads.append(threading.get_ident())
        return await agent.arun("Task")

    assert asyncio.run(main()) == "Done"
    assert ask_threads == loop_threads


def test_a_sync_check_runs_off_the_event_loop_in_arun():
    check_threads: list[int] = []
    loop_threads: list[int] = []

    class SyncAllow(AllowPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            check_threads.append(threading.get_ident())
            return Allowed()

    agent, _ = agent_with([tool_call("look"), "Done"], [SyncAllow()])

    async def main() -> Any:
        loop_threads.append(threading.get_ident())
        return await agent.arun("Task")

    assert asyncio.run(main()) == "Done"
    assert check_threads and check_threads[0] != loop_threads[0]


def test_refusals_and_approvals_are_saved_before_tools_run(tmp_path: Any):
    from alpineagents.store import FileStore

    store = FileStore(tmp_path)
    seen: list[list[str]] = []

    @tool(name="look")
    def look_and_load() -> str:
        """Look."""
        loaded = store.load(current[0].id)
        seen.append([entry.kind for entry in loaded.history])
        names = [entry.call.name for entry in loaded.history if isinstance(entry, ToolResultEntry)]
        seen.append(names)
        return "seen"

    current: list[State] = []
    agent = Agent(
        FakeModel([[tool_call("bash"), tool_call("look")], "Done"]),
        tools=[bash, look_and_load],
        permissions=[DenyByName(["bash"]), AllowByDefault()],
        store=store,
        reporter=None,
        human=None,
    )
    state = task()
    current.append(state)
    assert agent.run(state) == "Done"
    assert "bash" in seen[1]

    seen.clear()
    human = FakeHuman(["yes"])
    agent2 = Agent(
        FakeModel([tool_call("look"), "Done"]),
        tools=[look_and_load],
        permissions=[DecideByHuman()],
        store=store,
        reporter=None,
        human=human,
    )
    state2 = task()
    current[0] = state2
    assert agent2.run(state2) == "Done"
    assert "human" in seen[0]


def test_acheck_phase_matches_check_phase():
    def run(use_async: bool) -> tuple[list[Any], list[Any]]:
        spy = Spy()
        calls = [tool_call("bash"), tool_call("read_file"), tool_call("look")]
        agent, _ = agent_with(
            [calls, "Done"], [DenyByName(["bash"]), AllowByReadOnly(), AllowByName(["lo*"])], reporter=spy
        )
        state = task()
        if use_async:
            asyncio.run(agent.arun(state))
        else:
            agent.run(state)
        records = [(e.call.name, e.content, e.outcome) for e in results(state)]
        ends = [(e[0], e[1]) for e in spy.events if e[0] == "end"]
        # the refusal comes first; the parallel calls finish in any order
        return records[:1] + sorted(records[1:]), ends[:1] + sorted(ends[1:])

    assert run(False) == run(True)


def test_use_tools_outside_a_run_fails_during_the_phase():
    c = tool_call("look")
    agent, state = _use_tools_after_think([DecideByHuman()], [c])
    with pytest.raises(NoHumanError, match=r"ask_human\(\) was called on an Agent with human=None"):
        agent.use_tools(state)
    assert state.pending_calls == (c,)


# --- the effective list across subagents -------------------------------------------------------------


def _child(state: State) -> State:
    entry = next(e for e in results(state) if e.call.name == "scout")
    return state.child(entry.child_ids[0])


def test_subagent_cannot_widen_a_denial_above():
    scout = Agent(
        FakeModel([[tool_call("bash"), tool_call("look")], "scout done"]),
        tools=TOOLS,
        permissions=[AllowByDefault()],
        name="scout",
        description="Looks",
    )
    lead = Agent(
        FakeModel([tool_call("scout", prompt="Go"), "lead done"]),
        tools=[scout],
        permissions=[DenyByName(["bash"]), AllowByName(["scout"])],
        reporter=None,
        human=None,
    )
    state = task()
    assert lead.run(state) == "lead done"
    child = _child(state)
    entries = by_name(child)
    assert entries["bash"].outcome == ToolOutcomeKind.DENIED
    assert entries["bash"].content == "bash is not allowed."
    assert entries["look"].outcome == ToolOutcomeKind.DONE  # the lead's allow list does not apply below
    assert RAN == ["look"]


def test_subagent_without_a_list_inherits_the_whole_list():
    scout = Agent(
        FakeModel([[tool_call("bash"), tool_call("look")], "scout done"]),
        tools=TOOLS,
        name="scout",
        description="Looks",
    )
    lead = Agent(
        FakeModel([tool_call("scout", prompt="Go"), "lead done"]),
        tools=[scout],
        permissions=[DenyByName(["bash"]), AllowByName(["scout"])],
        reporter=None,
        human=None,
    )
    state = task()
    with pytest.warns(PermissionWarning, match="look"):
        lead.run(state)
    entries = by_name(_child(state))
    assert entries["bash"].content == "bash is not allowed."
    assert entries["look"].content == "No permission allowed this call."
    assert RAN == []


def test_subagent_with_an_empty_list_refuses_what_denials_did_not():
    scout = Agent(
        FakeModel([[tool_call("bash"), tool_call("look")], "scout done"]),
        tools=TOOLS,
        permissions=[],
        name="scout",
        description="Looks",
    )
    lead = Agent(
        FakeModel([tool_call("scout", prompt="Go"), "lead done"]),
        tools=[scout],
        permissions=[DenyByName(["bash"]), AllowByDefault()],
        reporter=None,
        human=None,
    )
    state = task()
    with pytest.warns(PermissionWarning) as record:
        lead.run(state)
    assert len(record) == 1 and "look" in str(record[0].message)
    entries = by_name(_child(state))
    assert entries["bash"].content == "bash is not allowed."
    assert entries["look"].content == "No permission allowed this call."


def test_lead_decide_by_human_asks_the_lead_human_about_a_subagent_call():
    lead_human = FakeHuman(["yes", "yes"])
    scout_human = FakeHuman(["no"])
    shared = DecideByHuman()
    scout = Agent(
        FakeModel([tool_call("look"), "scout done"]),
        tools=TOOLS,
        human=scout_human,
        name="scout",
        description="Looks",
    )
    lead = Agent(
        FakeModel([tool_call("scout", prompt="Go"), "lead done"]),
        tools=[scout],
        permissions=[shared],
        reporter=None,
        human=lead_human,
    )
    state = task()
    assert lead.run(state) == "lead done"
    assert lead_human.questions == ['Run scout(prompt="Go")?', "Run look()?"]
    assert scout_human.questions == []
    child = _child(state)
    child_questions = [e.content.question for e in child.history if isinstance(e, ExchangeEntry)]
    lead_questions = [e.content.question for e in state.history if isinstance(e, ExchangeEntry)]
    assert child_questions == ["Run look()?"]
    assert lead_questions == ['Run scout(prompt="Go")?']
    assert RAN == ["look"]


def test_subagent_decide_by_human_asks_the_subagent_human_and_names_itself():
    lead_human = FakeHuman([])
    scout_human = FakeHuman(["no"])
    scout = Agent(
        FakeModel([tool_call("look"), "scout done"]),
        tools=TOOLS,
        permissions=[DecideByHuman()],
        human=scout_human,
        name="scout",
        description="Looks",
    )
    lead = Agent(
        FakeModel([tool_call("scout", prompt="Go"), "lead done"]),
        tools=[scout],
        permissions=[DenyByName(["rm"]), AllowByName(["scout"])],
        reporter=None,
        human=lead_human,
    )
    state = task()
    assert lead.run(state) == "lead done"
    assert scout_human.questions == ["Run look()?"]
    child = _child(state)
    assert child.stopped is not None and child.stopped.permission == "DecideByHuman()"  # type: ignore[union-attr]
    assert by_name(state)["scout"].content == (
        "(scout was stopped by the user: The user declined this call. Wait for their next message.)"
    )


def test_subagent_inheriting_no_human_fails_before_it_starts():
    scout = Agent(
        FakeModel([tool_call("look"), "scout done"]),
        tools=TOOLS,
        permissions=[DecideByHuman()],
        name="scout",
        description="Looks",
    )
    lead = Agent(
        FakeModel([tool_call("scout", prompt="Go"), "lead done"]),
        tools=[scout],
        reporter=None,
        human=None,
    )
    with pytest.raises(NoHumanError) as info:
        lead.run("Task")
    text = str(info.value)
    assert "this subagent has no human to ask" in text
    assert "give one to the Agent that runs it" in text


def test_same_decide_by_human_object_asks_the_human_of_the_checking_run():
    shared = DecideByHuman()
    first, second = FakeHuman(["yes"]), FakeHuman(["yes"])
    agent, _ = agent_with([tool_call("look"), "Done"], [shared], human=first)
    other = agent.copy(human=second, model=FakeModel([tool_call("look"), "Done"]))
    agent.run("Task")
    other.run("Task")
    assert first.questions == ["Run look()?"]
    assert second.questions == ["Run look()?"]


def test_another_agent_inside_a_subagent_run_respects_the_denials_above():
    other = Agent(FakeModel([]), tools=TOOLS, reporter=None, human=None)

    def custom(agent: Any, state: Any) -> Any:
        agent.think(state)
        other.use_tools(state)
        return "custom done"

    scout = Agent(
        FakeModel([[tool_call("bash"), tool_call("look")]]),
        tools=TOOLS,
        loop=custom,
        name="scout",
        description="Looks",
    )
    lead = Agent(
        FakeModel([tool_call("scout", prompt="Go"), "lead done"]),
        tools=[scout],
        permissions=[DenyByName(["bash"]), AllowByDefault()],
        reporter=None,
        human=None,
    )
    state = task()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PermissionWarning)
        assert lead.run(state) == "lead done"
    entries = by_name(_child(state))
    assert entries["bash"].content == "bash is not allowed."
    assert entries["bash"].outcome == ToolOutcomeKind.DENIED
    assert entries["look"].outcome == ToolOutcomeKind.DONE
    assert RAN == ["look"]
