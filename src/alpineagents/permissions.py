"""Permissions: decide, before a tool call runs, whether it may run.

A permission subclasses exactly one kind: ``DenyPermission`` (returns ``Denied(...)`` or ``None``),
``AllowPermission`` (``Allowed()`` or ``None``) or ``DecidePermission`` (either, or ``None``), and implements
``check`` (sync), ``acheck`` (async) or both. Built-ins: ``DenyByName``, ``AllowByName``, ``AllowByReadOnly``,
``DecideByHuman``, ``AllowByDefault``.

What the turn machinery does with a list of permissions (who owns each one, the effective list of a run, the
check before a run starts, and asking the list about one call) is in ``alpineagents._turn.permission_rules``;
this module holds what a permission is and what it may answer. ``Decision`` (what a list decided about one call)
and ``ASKED_OWNER`` (whose permission is being asked) are the two values both sides share.
"""

from __future__ import annotations

import contextvars
import inspect
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from alpineagents._async import run_in_thread
from alpineagents._tools.patterns import matches_any, name_patterns
from alpineagents.errors import ToolError, fix_message
from alpineagents.human import HumanLike, Question, answers_async, answers_sync
from alpineagents.types import ToolCall, format_call

if TYPE_CHECKING:
    from alpineagents.agent import Agent  # only for the type: DecideByHuman asks through the State's Agent
    from alpineagents.state import State
    from alpineagents.tool import Tool

__all__ = [
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

NOBODY_DECIDED = "No permission allowed this call."
"""The result text of a call no permission allowed or denied."""

DECLINED = "The user declined this call. Wait for their next message."
"""The reason ``DecideByHuman`` gives when the answer is not ``yes``."""


# --- verdicts ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Allowed:
    """The verdict that lets a call run."""


@dataclass(frozen=True)
class Denied:
    """The verdict that refuses a call: the model receives ``reason`` as the call's error result.

    ``stop=True`` also stops the turn: no call of the turn runs, the other pending calls are cancelled, and the
    loop stops (the run ends normally; the State is not finished).

    Raises:
        TypeError: ``reason`` is not a string, or ``stop`` is not a bool.
        ValueError: ``reason`` is empty or whitespace only.
    """

    reason: str
    stop: bool = False

    def __post_init__(self) -> None:
        example = 'return Denied("Deleting files is not allowed", stop=True)'
        if not isinstance(self.reason, str):
            raise TypeError(
                fix_message(
                    f"Denied takes a reason string, what the model is told (got: {self.reason!r})",
                    "Pass the reason as a string",
                    example,
                )
            )
        if not self.reason.strip():
            raise ValueError(
                fix_message(
                    "Denied got an empty reason. Providers reject empty tool results",
                    "Say why the call was refused, so the model can do something else",
                    example,
                )
            )
        if not isinstance(self.stop, bool):
            raise TypeError(
                fix_message(
                    f"Denied: stop= takes True or False (got: {self.stop!r})",
                    "Pass stop=True to also stop the turn, or leave it out",
                    example,
                )
            )


@dataclass(frozen=True)
class Deferred:
    """The verdict that holds a call for a person's decision, to be taken later, maybe in another process.

    The run stops before any tool of the turn runs: the call waits (``state.awaiting_approval`` lists it,
    ``state.stopped`` is a ``StoppedForApproval``), the State is saved, and the program may exit. A person then
    calls ``state.approve(call_id)`` or ``state.deny(call_id, reason)``, and the next run continues: an approved
    call runs once, a denied one gets the reason as its error result. Only a ``DecidePermission`` may return it.
    For a person at the keyboard now, use ``DecideByHuman``.

    Args:
        question: What the person is asked; default ``Run {format_call(call)}?``.
        expires_in: Seconds (or a ``timedelta``) after which an approval counts as a denial; ``None``: never.

    Raises:
        TypeError: ``question`` is not a string, or ``expires_in`` is not a number or ``timedelta``.
        ValueError: ``question`` is empty, or ``expires_in`` is not positive.
    """

    question: str | None = None
    expires_in: float | timedelta | None = None

    def __post_init__(self) -> None:
        example = 'return Deferred("Send this email to the customer?", expires_in=timedelta(days=2))'
        if self.question is not None:
            if not isinstance(self.question, str):
                raise TypeError(
                    fix_message(
                        f"Deferred: question= takes a string, what a person is asked (got: {self.question!r})",
                        "Pass the question as a string, or leave it out for the default question",
                        example,
                    )
                )
            if not self.question.strip():
                raise ValueError(
                    fix_message("Deferred got an empty question", "Say what the person decides about", example)
                )
        expires = self.expires_in
        if expires is None:
            return
        if isinstance(expires, bool) or not isinstance(expires, (int, float, timedelta)):
            raise TypeError(
                fix_message(
                    f"Deferred: expires_in= takes seconds or a timedelta (got: {expires!r})",
                    "Pass how long an approval stays valid, or leave it out for no expiry",
                    example,
                )
            )
        seconds = expires.total_seconds() if isinstance(expires, timedelta) else expires
        if not seconds > 0:
            raise ValueError(
                fix_message(
                    f"Deferred: expires_in= must be positive (got: {expires!r})",
                    "Pass how long an approval stays valid, or leave it out for no expiry",
                    example,
                )
            )

    def question_for(self, call: ToolCall) -> str:
        """The question for a person about ``call``: ``question``, or ``Run {format_call(call)}?``."""
        return self.question if self.question is not None else f"Run {format_call(call)}?"

    def lifetime(self) -> timedelta | None:
        """How long an approval stays valid after the call starts waiting, or ``None``."""
        expires = self.expires_in
        if expires is None:
            return None
        return expires if isinstance(expires, timedelta) else timedelta(seconds=expires)


Verdict = Allowed | Denied | Deferred | None


# --- the base class and the three kinds ----------------------------------------------------------------------


class Permission:
    """The base of every permission. Subclass exactly one kind, never this class directly.

    Instances are checked on creation: exactly one kind, and ``check`` or ``acheck`` overridden.
    The ``repr`` is the permission's identity in records (``decided_by``, ``StoppedByPermission.permission``):
    a permission with settings should define a stable repr that shows them.
    """

    def __new__(cls, *args: object, **kwargs: object) -> Any:
        _check_class(cls)
        return super().__new__(cls)

    def check(self, state: State, call: ToolCall, tool: Tool) -> Allowed | Denied | Deferred | None:
        """Decide about one call: a verdict, or ``None`` for no opinion.

        ``call.args`` are parsed but not validated; ``tool`` is the Tool the call would run. ``ToolError``
        refuses the call with its message; any other exception stops the run.

        Raises:
            TypeError: By default (a permission that implements only ``acheck`` checks only asynchronously).
        """
        raise TypeError(
            fix_message(
                f"{self!r} checks calls only asynchronously (it implements acheck, not check)",
                "Run the Agent with arun() (await agent.arun(...), await agent.ause_tools(...)), "
                "or implement check as well",
                "answer = await agent.arun(state)",
            )
        )

    async def acheck(self, state: State, call: ToolCall, tool: Tool) -> Allowed | Denied | Deferred | None:
        """Async twin of ``check``, used by ``arun``/``ause_tools``.

        Default: runs ``check`` on a daemon worker thread with a copy of the contextvars, so a blocking check
        does not block the event loop.
        """
        return await run_in_thread(self.check, state, call, tool, name="alpineagents-permission")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class DenyPermission(Permission):
    """A permission that may only refuse: ``check`` returns ``Denied(...)`` or ``None``. Asked first."""


class AllowPermission(Permission):
    """A permission that may only allow: ``check`` returns ``Allowed()`` or ``None``. Asked after the denials."""


class DecidePermission(Permission):
    """A permission that may allow or refuse: ``Allowed()``, ``Denied(...)`` or ``None``. Asked after the denials."""


_KINDS: tuple[type[Permission], ...] = (DenyPermission, AllowPermission, DecidePermission)


def _check_class(cls: type) -> None:
    kinds = [kind for kind in _KINDS if issubclass(cls, kind)]
    name = cls.__name__
    if not kinds:
        raise TypeError(
            fix_message(
                f"{name} subclasses Permission directly",
                "Subclass exactly one kind: DenyPermission (may only deny), AllowPermission (may only allow) "
                "or DecidePermission (may do both)",
                f"class {name}(DecidePermission):\n    def check(self, state, call, tool):\n        return None",
            )
        )
    if len(kinds) > 1:
        shown = ", ".join(kind.__name__ for kind in kinds)
        raise TypeError(
            fix_message(
                f"{name} subclasses more than one kind of permission ({shown})",
                "Subclass exactly one kind; DecidePermission may both allow and deny",
                f"class {name}(DecidePermission):\n    def check(self, state, call, tool):\n        return None",
            )
        )
    if getattr(cls, "check", None) is Permission.check and getattr(cls, "acheck", None) is Permission.acheck:
        raise TypeError(
            fix_message(
                f"{name} implements neither check nor acheck",
                "Implement check(self, state, call, tool) (or async acheck) in the subclass",
                f"class {name}({kinds[0].__name__}):\n    def check(self, state, call, tool):\n        return None",
            )
        )
    if inspect.iscoroutinefunction(getattr(cls, "check", None)):
        raise TypeError(
            fix_message(
                f"{name}.check is an async def, and check must be a plain def (its verdict would be a coroutine)",
                "Name the async method acheck (arun() and ause_tools() ask it), or make check a plain def",
                f"class {name}({kinds[0].__name__}):\n    async def acheck(self, state, call, tool):\n        return None",
            )
        )


def _kind_of(permission: Permission) -> type[Permission]:
    for kind in _KINDS:
        if isinstance(permission, kind):
            return kind
    return DecidePermission  # unreachable for a created instance


_VERDICT_RULES: dict[type[Permission], tuple[tuple[type, ...], str, str, str]] = {
    DenyPermission: (
        (Denied,),
        "a DenyPermission may return only Denied(...) or None",
        "Return one of those; to both allow and deny, subclass DecidePermission instead",
        'return Denied("Deleting files is not allowed") if call.name == "delete" else None',
    ),
    AllowPermission: (
        (Allowed,),
        "an AllowPermission may return only Allowed() or None",
        "Return one of those; to both allow and refuse, subclass DecidePermission instead",
        'return Allowed() if call.name.startswith("read_") else None',
    ),
    DecidePermission: (
        (Allowed, Denied, Deferred),
        "a DecidePermission may return only Allowed() or Denied(...) or Deferred(...) or None",
        "Return one of those",
        'return Allowed() if call.name == "read_file" else Denied("Only reading is allowed")',
    ),
}


def check_verdict(permission: Permission, verdict: object) -> None:
    """Check that ``verdict`` is ``None`` or a verdict the permission's kind may return.

    Raises:
        TypeError: Any other value (``True``, a string, ``Allowed()`` from a ``DenyPermission``...).
    """
    if verdict is None:
        return
    types, rule, fix, example = _VERDICT_RULES[_kind_of(permission)]
    if isinstance(verdict, types):
        return
    raise TypeError(fix_message(f"{permission!r} returned {verdict!r}, and {rule}", fix, example))


# --- built-ins -----------------------------------------------------------------------------------------------


class DenyByName(DenyPermission):
    """Refuse calls whose name matches a shell-style pattern (case-sensitive ``fnmatch`` rules).

    Args:
        patterns: Name patterns, e.g. ``["bash", "github__*"]``.
        reason: What the model is told; default ``"{name} is not allowed."``.

    Raises:
        TypeError: ``patterns`` is a string or not a list of strings; ``reason`` is not a string.
        ValueError: ``reason`` is empty.
    """

    patterns: tuple[str, ...]
    reason: str | None

    def __init__(self, patterns: Iterable[str], reason: str | None = None) -> None:
        self.patterns = name_patterns("DenyByName", patterns)
        if reason is not None:
            example = 'DenyByName(["delete_*"], reason="Deleting files is not allowed")'
            fix = "Pass reason= as the text the model reads, or leave it out for the default text"
            if not isinstance(reason, str):
                raise TypeError(
                    fix_message(
                        f"DenyByName: reason= takes a string, what the model is told (got: {reason!r})", fix, example
                    )
                )
            if not reason.strip():
                raise ValueError(
                    fix_message("DenyByName got an empty reason=. Providers reject empty tool results", fix, example)
                )
        self.reason = reason

    def check(self, state: State, call: ToolCall, tool: Tool) -> Denied | None:
        """``Denied(reason)`` (or ``Denied("{name} is not allowed.")``) on a match, else ``None``."""
        if not matches_any(self.patterns, call.name):
            return None
        return Denied(self.reason if self.reason is not None else f"{call.name} is not allowed.")

    def __repr__(self) -> str:
        text = f"{type(self).__name__}({list(self.patterns)!r}"
        if self.reason is not None:
            text += f", reason={self.reason!r}"
        return text + ")"


class AllowByName(AllowPermission):
    """Allow calls whose name matches a shell-style pattern (case-sensitive ``fnmatch`` rules).

    Raises:
        TypeError: ``patterns`` is a string or not a list of strings.
    """

    patterns: tuple[str, ...]

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = name_patterns("AllowByName", patterns)

    def check(self, state: State, call: ToolCall, tool: Tool) -> Allowed | None:
        """``Allowed()`` on a match, else ``None``."""
        return Allowed() if matches_any(self.patterns, call.name) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.patterns)!r})"


def _is_mcp_tool(tool: Tool) -> bool:
    # No MCPTool can exist unless alpineagents.mcp_tools was imported, so it is never imported here.
    module = sys.modules.get("alpineagents.mcp_tools")
    cls = getattr(module, "MCPTool", None) if module is not None else None
    return isinstance(cls, type) and isinstance(tool, cls)


class AllowByReadOnly(AllowPermission):
    """Allow a call that its tool declares read-only for these arguments (``tool.hints_for(call.args)``).

    An MCP server's hints are not believed unless ``trust_mcp=True``.

    Raises:
        TypeError: ``trust_mcp`` is not a bool.
    """

    trust_mcp: bool

    def __init__(self, trust_mcp: bool = False) -> None:
        if not isinstance(trust_mcp, bool):
            raise TypeError(
                fix_message(
                    f"AllowByReadOnly: trust_mcp= takes True or False (got: {trust_mcp!r})",
                    "Pass trust_mcp=True to believe MCP servers' read-only hints, or leave it out",
                    "AllowByReadOnly(trust_mcp=True)",
                )
            )
        self.trust_mcp = trust_mcp

    def check(self, state: State, call: ToolCall, tool: Tool) -> Allowed | None:
        """``Allowed()`` when the call's hints say read-only (never for an untrusted MCP tool), else ``None``."""
        if not self.trust_mcp and _is_mcp_tool(tool):
            return None
        return Allowed() if tool.hints_for(call.args).read_only else None

    def __repr__(self) -> str:
        if self.trust_mcp:
            return f"{type(self).__name__}(trust_mcp=True)"
        return f"{type(self).__name__}()"


class AllowByDefault(AllowPermission):
    """Allow every call. Put it last: "allow whatever no deny permission refused"."""

    def __init__(self) -> None:
        pass

    def check(self, state: State, call: ToolCall, tool: Tool) -> Allowed:
        """Always ``Allowed()``."""
        return Allowed()


class DeferByName(DecidePermission):
    """Hold calls whose name matches a shell-style pattern for a person's decision later (``Deferred``); say
    nothing about the others.

    Args:
        patterns: Name patterns, e.g. ``["send_email", "deploy_*"]``.
        question: What the person is asked; default ``Run {format_call(call)}?``.
        expires_in: Seconds (or a ``timedelta``) after which an approval counts as a denial; ``None``: never.

    Raises:
        TypeError, ValueError: as ``Deferred`` and ``DenyByName`` say.
    """

    patterns: tuple[str, ...]
    deferred: Deferred

    def __init__(
        self, patterns: Iterable[str], question: str | None = None, expires_in: float | timedelta | None = None
    ) -> None:
        self.patterns = name_patterns("DeferByName", patterns)
        self.deferred = Deferred(question, expires_in)

    def check(self, state: State, call: ToolCall, tool: Tool) -> Deferred | None:
        """``Deferred(...)`` on a match, else ``None``."""
        return self.deferred if matches_any(self.patterns, call.name) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.patterns)!r})"


# --- what the turn machinery and the permissions share -------------------------------------------------------

ASKED_OWNER: contextvars.ContextVar[tuple[HumanLike | None, bool] | None] = contextvars.ContextVar(
    "alpineagents_permission_owner", default=None
)
"""``(human, inherited)`` of the run whose Agent wrote the permission being asked, while the turn machinery asks a
list (the default Human of ``DecideByHuman``); ``None`` otherwise."""


@dataclass(frozen=True)
class Decision:
    """What the effective list decided about one call.

    ``verdict``: ``Allowed()`` or a ``Denied`` (``NOBODY_DECIDED`` when nobody decided). ``decided_by``: the repr
    of the deciding permission, ``None`` when nobody decided. ``error``: the ``ToolError`` a permission raised.
    """

    verdict: Allowed | Denied | Deferred
    decided_by: str | None = None
    error: ToolError | None = None


def async_only(permission: Permission) -> bool:
    """True for a permission that implements only ``acheck`` (for a ``DecideByHuman``: a subclass that overrides
    ``acheck`` but not ``check``)."""
    cls = type(permission)
    if isinstance(permission, DecideByHuman):
        return cls.check is DecideByHuman.check and cls.acheck is not DecideByHuman.acheck
    return cls.check is Permission.check


# --- DecideByHuman -------------------------------------------------------------------------------------------


class DecideByHuman(DecidePermission):
    """Ask a person about each call: ``yes`` allows it; anything else refuses it and stops the turn.

    Who answers: ``human`` when given; else the Human of the run that wrote this permission (its owner); else
    the Human the Agent linked to the State would use. The question and answer are recorded in the State's
    history like ``agent.ask_human``.

    Raises:
        TypeError: ``human`` is a class, or has neither a callable ``ask`` nor ``aask``.
    """

    human: HumanLike | None

    def __init__(self, human: HumanLike | None = None) -> None:
        if human is not None and (isinstance(human, type) or not (answers_sync(human) or answers_async(human))):
            raise TypeError(
                fix_message(
                    f"DecideByHuman: human={human!r} is not a Human object",
                    "Pass a Human instance (an object with an ask or aask method), or leave it out to ask the "
                    "Agent's human",
                    "DecideByHuman(human=Terminal())",
                )
            )
        self.human = human

    def question(self, call: ToolCall, tool: Tool) -> str:
        """The question asked about a call. Default: ``Run {format_call(call)}?``."""
        return f"Run {format_call(call)}?"

    def _who(self, state: State) -> tuple[HumanLike | None, bool]:
        agent: Agent | None = getattr(state, "_agent", None)
        if agent is None:
            raise ValueError(
                fix_message(
                    f"{self!r} asks through the Agent running the State, and this State has no Agent yet",
                    "Check calls from agent.use_tools(state) or a run, or call agent.think(state) first",
                    "agent.use_tools(state)",
                )
            )
        if self.human is not None:
            return self.human, False
        owner = ASKED_OWNER.get()
        if owner is not None:
            return owner
        context = agent._active_context(state)
        if context is not None:
            return context.human, context.human_inherited
        return agent.human, False

    def _verdict(self, answer: object) -> Allowed | Denied:
        return Allowed() if answer == "yes" else Denied(DECLINED, stop=True)

    def check(self, state: State, call: ToolCall, tool: Tool) -> Allowed | Denied | Deferred | None:
        """Ask synchronously (``ask_human``) and return ``Allowed()`` on ``yes``, else a stopping ``Denied``.

        Raises:
            ValueError: The State has no linked Agent.
            NoHumanError: Nobody can answer.
            TypeError: A subclass that overrides only ``acheck`` checks only asynchronously.
        """
        if async_only(self):  # a subclass that overrides only acheck checks only asynchronously
            return Permission.check(self, state, call, tool)
        human, inherited = self._who(state)
        question = Question(
            state, human, self.question(call, tool), Literal["yes", "no"], method="ask_human", inherited=inherited
        )
        answer = question.ask()
        return self._verdict(answer)

    async def acheck(self, state: State, call: ToolCall, tool: Tool) -> Allowed | Denied | Deferred | None:
        """Async twin of ``check`` (``aask_human``). A subclass that overrides only ``check`` runs it on a thread."""
        cls = type(self)
        if cls.check is not DecideByHuman.check and cls.acheck is DecideByHuman.acheck:
            return await Permission.acheck(self, state, call, tool)
        human, inherited = self._who(state)
        question = Question(
            state, human, self.question(call, tool), Literal["yes", "no"], method="aask_human", inherited=inherited
        )
        answer = await question.aask()
        return self._verdict(answer)

    def __repr__(self) -> str:
        name = type(self).__name__
        if self.human is None:
            return f"{name}()"
        human_cls = type(self.human)
        shown = repr(self.human) if human_cls.__repr__ is not object.__repr__ else f"{human_cls.__name__}()"
        return f"{name}(human={shown})"
