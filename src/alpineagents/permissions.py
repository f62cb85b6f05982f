"""Permissions: decide, before a tool call runs, whether it may run.

A permission subclasses exactly one kind: ``DenyPermission`` (returns ``Denied(...)`` or ``None``),
``AllowPermission`` (``Allowed()`` or ``None``) or ``DecidePermission`` (either, or ``None``), and implements
``check`` (sync), ``acheck`` (async) or both. Built-ins: ``DenyByName``, ``AllowByName``, ``AllowByReadOnly``,
``DecideByHuman``, ``AllowByDefault``.

For the Agent and the runner (not in ``__all__``): ``effective_permissions`` builds a run's ``PermissionList``
(each permission paired with its ``Owner``), ``check_run_start`` refuses a run that could not ask its list, and
``decide``/``adecide`` ask the list about one call and return a ``Decision`` that the caller records.
"""

from __future__ import annotations

import contextvars
import inspect
import sys
import warnings
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from alpineagents._async import run_in_thread
from alpineagents._tools.patterns import matches_any, name_patterns
from alpineagents.errors import NoHumanError, PermissionWarning, ToolError, fix_message
from alpineagents.human import (
    HumanLike,
    aask_human_with,
    answers_async,
    answers_only_async,
    answers_sync,
    ask_human_with,
)
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


Verdict = Allowed | Denied | None


# --- the base class and the three kinds ----------------------------------------------------------------------


class Permission:
    """The base of every permission. Subclass exactly one kind, never this class directly.

    Instances are checked on creation: exactly one kind, and ``check`` or ``acheck`` overridden.
    The ``repr`` is the permission's identity in records (``decided_by``, ``StoppedByPermission.permission``):
    a permission with settings should define a stable repr that shows them.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _check_class(cls)
        return super().__new__(cls)

    def check(self, state: State, call: ToolCall, tool: Tool) -> Allowed | Denied | None:
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

    async def acheck(self, state: State, call: ToolCall, tool: Tool) -> Allowed | Denied | None:
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
        (Allowed, Denied),
        "a DecidePermission may return only Allowed() or Denied(...) or None",
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


class _AllowUndenied(AllowByDefault):
    """Closes an effective list made only of the denials of the runs above: another Agent without a list of its
    own, working inside a subagent's run, lets through every call those denials do not refuse."""


# --- owners and the effective list ---------------------------------------------------------------------------


class Owner(NamedTuple):
    """Who owns a permission in an effective list: the effective human of the run whose Agent wrote it.

    ``inherited`` is true when that run is a subagent run that inherited its human (for ``NoHumanError`` texts).
    """

    human: HumanLike | None
    inherited: bool = False


Owners = Iterable[Owner | HumanLike | None] | None
"""The owners given to the checks, one per permission (an ``Owner``, or a plain Human), or ``None`` to take them
from a ``PermissionList``."""


class PermissionList(tuple[Permission, ...]):
    """The effective permission list of a run: a tuple of permissions plus ``owners``, one ``Owner`` per
    permission, in the same order."""

    owners: tuple[Owner, ...]

    def __new__(cls, permissions: Iterable[Permission], owners: Iterable[Owner]) -> PermissionList:
        self = super().__new__(cls, permissions)
        self.owners = tuple(owners)
        if len(self.owners) != len(self):
            raise ValueError("PermissionList needs one owner per permission")
        return self

    def pairs(self) -> Iterator[tuple[Permission, Owner]]:
        """The (permission, owner) pairs in list order."""
        return zip(self, self.owners, strict=True)

    def denials(self) -> PermissionList:
        """The ``DenyPermission``s of this list with their owners, in order."""
        kept = [(p, o) for p, o in self.pairs() if isinstance(p, DenyPermission)]
        return PermissionList((p for p, _ in kept), (o for _, o in kept))


def _as_list(permissions: Iterable[Permission], owner: Owner) -> PermissionList:
    if isinstance(permissions, PermissionList):
        return permissions
    items = tuple(permissions)
    return PermissionList(items, (owner,) * len(items))


def effective_permissions(
    own: Iterable[Permission] | None,
    human: HumanLike | None = None,
    *,
    inherited: bool = False,
    above: Iterable[Permission] | None = None,
    subagent: bool = False,
) -> PermissionList | None:
    """The effective list asked for a run or a ``use_tools``, or ``None`` for no check phase.

    Args:
        own: The Agent's own ``permissions=`` (``None`` or a tuple; ``()`` is "checks on, empty").
        human: The effective human of the run (owner of ``own``); ``inherited`` as in ``Owner``.
        above: The effective list of the run above (``None`` at top level or when that run had no checks).
            For a subagent run: the list of the run that started it. For another Agent working inside a
            subagent's run: the list of the run above that subagent.
        subagent: True for a subagent run (started inside a tool call), False otherwise.

    Rules: no ``above`` -> ``own`` (owner ``human``) or ``None``. A subagent with ``own=None`` inherits
    ``above`` whole. Otherwise the denials of ``above`` come first, then ``own``; another Agent with
    ``own=None`` gets only those denials (a call none of them refuses is allowed), or ``None`` without any.
    """
    owner = Owner(human, inherited)
    if above is None:
        return None if own is None else _as_list(own, owner)
    above_list = _as_list(above, Owner(None))
    if own is None and subagent:
        return above_list
    denials = above_list.denials()
    if own is None:
        if not denials:
            return None
        return PermissionList((*denials, _AllowUndenied()), (*denials.owners, Owner(None)))
    own_list = _as_list(own, owner)
    return PermissionList((*denials, *own_list), (*denials.owners, *own_list.owners))


def _pairs(
    permissions: Iterable[Permission], owners: Owners, default: Owner | None
) -> list[tuple[Permission, Owner | None]]:
    """Pair each permission with its owner: from a ``PermissionList``, else from ``owners`` (``Owner`` items or
    plain Humans), else ``default``."""
    if isinstance(permissions, PermissionList) and owners is None:
        return list(permissions.pairs())
    items = tuple(permissions)
    if owners is None:
        return [(p, default) for p in items]
    shown = [o if isinstance(o, Owner) else Owner(o) for o in owners]
    if len(shown) != len(items):
        raise ValueError("owners= needs one owner per permission")
    return list(zip(items, shown, strict=True))


def check_run_start(
    permissions: Iterable[Permission] | None,
    *,
    method: Literal["run", "arun"] = "run",
    owners: Owners = None,
    human: HumanLike | None = None,
    inherited: bool = False,
) -> None:
    """The checks made before a run starts (before anything is recorded), over the effective list, in list order.

    For each permission: (``run`` only) an acheck-only permission -> ``TypeError``; a ``DecideByHuman`` without
    its own human whose owner's human is ``None`` -> ``NoHumanError``; (``run`` only) a ``DecideByHuman`` (check
    not overridden) whose Human answers only asynchronously -> ``TypeError``. Owners come from ``owners``
    (one ``Owner`` or plain Human per permission), else from a ``PermissionList``, else ``Owner(human, inherited)``
    for every item.
    """
    if permissions is None:
        return
    sync = method == "run"
    for permission, owner in _pairs(permissions, owners, Owner(human, inherited)):
        assert owner is not None
        if sync and _async_only(permission):
            raise TypeError(
                fix_message(
                    f"{permission!r} in permissions= checks calls only asynchronously (it implements acheck, "
                    "not check), so this Agent cannot run with run()",
                    "Start the run with arun() (answer = await agent.arun(...)), or give the permission a sync check",
                    "answer = await agent.arun(state)",
                )
            )
        if not isinstance(permission, DecideByHuman):
            continue
        chosen = permission.human if permission.human is not None else owner.human
        if chosen is None:
            if owner.inherited:
                problem = (
                    f"{permission!r} in permissions= asks the Agent's human, and this subagent has no human to ask "
                    "(it was not given a human and the run that started it has human=None)"
                )
                fix = "give one to the Agent that runs it, or to the permission itself: DecideByHuman(human=...)"
            else:
                problem = f"{permission!r} in permissions= asks the Agent's human, and this Agent has human=None"
                fix = "Give the Agent a human, or give the permission its own: DecideByHuman(human=...)"
            raise NoHumanError(
                fix_message(problem, fix, "Agent(model, permissions=[DecideByHuman()], human=Terminal())")
            )
        if sync and type(permission).check is DecideByHuman.check and answers_only_async(chosen):
            raise TypeError(
                fix_message(
                    f"{permission!r} in permissions= asks {type(chosen).__name__}, which answers only "
                    "asynchronously (it implements aask, not ask), so this Agent cannot run with run()",
                    "Start the run with arun(), or give the human a sync ask method",
                    "answer = await agent.arun(state)",
                )
            )


def _async_only(permission: Permission) -> bool:
    """True for a permission that implements only ``acheck`` (for a ``DecideByHuman``: a subclass that overrides
    ``acheck`` but not ``check``)."""
    cls = type(permission)
    if isinstance(permission, DecideByHuman):
        return cls.check is DecideByHuman.check and cls.acheck is not DecideByHuman.acheck
    return cls.check is Permission.check


# --- asking the list about one call --------------------------------------------------------------------------

_OWNER: contextvars.ContextVar[Owner | None] = contextvars.ContextVar("alpineagents_permission_owner", default=None)
"""The owner of the permission being asked, while the runner asks a list (the default Human of DecideByHuman)."""


@contextmanager
def _owner_scope(owner: Owner | None) -> Iterator[None]:
    if owner is None:
        yield
        return
    token = _OWNER.set(owner)
    try:
        yield
    finally:
        _OWNER.reset(token)


def _passes(permissions: Iterable[Permission], owners: Owners) -> list[tuple[Permission, Owner | None]]:
    pairs = _pairs(permissions, owners, None)
    first = [pair for pair in pairs if isinstance(pair[0], DenyPermission)]
    second = [pair for pair in pairs if not isinstance(pair[0], DenyPermission)]
    return first + second


def _note(error: BaseException, permission: Permission, call: ToolCall) -> None:
    error.add_note(f"exception raised in permission {permission!r} checking {format_call(call)}")


def _nobody(call: ToolCall) -> Decision:
    warnings.warn(
        f"No permission allowed or denied the call to {call.name}, so it was denied. To allow every call no "
        "permission denies, put AllowByDefault() at the end of permissions=",
        PermissionWarning,
        stacklevel=5,
    )
    return Decision(Denied(NOBODY_DECIDED))


_VERDICTS = (Allowed, Denied)

Answer = tuple[object, Exception | None]
"""What one permission answered: its verdict (unchecked), or the exception it raised."""


def _asking(
    permissions: Iterable[Permission], call: ToolCall, owners: Owners
) -> Generator[tuple[Permission, Owner | None] | Decision, Answer, None]:
    """How a list decides about one call, written once for ``decide`` and ``adecide``.

    It yields each permission to ask with its owner (denials first, then the others, each pass in list order) and
    is sent back its ``Answer``; it yields a ``Decision`` when one is reached. The first verdict that is not
    ``None`` decides; a ``ToolError`` refuses the call with its message; any other exception is raised with a
    note naming the permission and the call; a verdict the permission's kind may not return raises ``TypeError``;
    nobody deciding refuses the call with ``NOBODY_DECIDED`` and a ``PermissionWarning``.
    """
    for permission, owner in _passes(permissions, owners):
        verdict, error = yield permission, owner
        if isinstance(error, ToolError):
            yield Decision(Denied(str(error)), repr(permission), error)
            return
        if error is not None:
            _note(error, permission, call)
            raise error
        check_verdict(permission, verdict)
        if isinstance(verdict, _VERDICTS):
            yield Decision(verdict, repr(permission))
            return
    yield _nobody(call)


def _answer(permission: Permission, owner: Owner | None, state: State, call: ToolCall, tool: Tool) -> Answer:
    with _owner_scope(owner):
        try:
            return permission.check(state, call, tool), None
        except Exception as error:  # noqa: BLE001 - handed to `_asking`, which decides what it means
            return None, error


async def _aanswer(permission: Permission, owner: Owner | None, state: State, call: ToolCall, tool: Tool) -> Answer:
    with _owner_scope(owner):
        try:
            return await permission.acheck(state, call, tool), None
        except Exception as error:  # noqa: BLE001 - handed to `_asking`, which decides what it means
            return None, error


@dataclass(frozen=True)
class Decision:
    """What the effective list decided about one call.

    ``verdict``: ``Allowed()`` or a ``Denied`` (``NOBODY_DECIDED`` when nobody decided). ``decided_by``: the repr
    of the deciding permission, ``None`` when nobody decided. ``error``: the ``ToolError`` a permission raised.
    """

    verdict: Allowed | Denied
    decided_by: str | None = None
    error: ToolError | None = None


def decide(
    permissions: Iterable[Permission], state: State, call: ToolCall, tool: Tool, owners: Owners = None
) -> Decision:
    """Ask the list about one call with ``check``, as ``_asking`` says. While a permission is asked, its owner (from
    ``owners``, else from a ``PermissionList``) is the default Human of ``DecideByHuman``.

    Raises:
        TypeError: A verdict the permission's kind may not return (no note).
        Exception: Any other exception from a permission, with the note
            ``exception raised in permission {p!r} checking {call}``.
    """
    steps = _asking(permissions, call, owners)
    step = next(steps)
    while not isinstance(step, Decision):
        step = steps.send(_answer(*step, state, call, tool))
    return step


async def adecide(
    permissions: Iterable[Permission], state: State, call: ToolCall, tool: Tool, owners: Owners = None
) -> Decision:
    """Async twin of ``decide``: asks each permission's ``acheck``. Same passes, results and errors."""
    steps = _asking(permissions, call, owners)
    step = next(steps)
    while not isinstance(step, Decision):
        step = steps.send(await _aanswer(*step, state, call, tool))
    return step


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
        owner = _OWNER.get()
        if owner is not None:
            return owner.human, owner.inherited
        context = agent._active_context(state)
        if context is not None:
            return context.human, context.human_inherited
        return agent.human, False

    def _verdict(self, answer: object) -> Allowed | Denied:
        return Allowed() if answer == "yes" else Denied(DECLINED, stop=True)

    def check(self, state: State, call: ToolCall, tool: Tool) -> Allowed | Denied | None:
        """Ask synchronously (``ask_human``) and return ``Allowed()`` on ``yes``, else a stopping ``Denied``.

        Raises:
            ValueError: The State has no linked Agent.
            NoHumanError: Nobody can answer.
            TypeError: A subclass that overrides only ``acheck`` checks only asynchronously.
        """
        if _async_only(self):  # a subclass that overrides only acheck checks only asynchronously
            return Permission.check(self, state, call, tool)
        human, inherited = self._who(state)
        answer = ask_human_with(
            state, human, self.question(call, tool), Literal["yes", "no"], method="ask_human", inherited=inherited
        )
        return self._verdict(answer)

    async def acheck(self, state: State, call: ToolCall, tool: Tool) -> Allowed | Denied | None:
        """Async twin of ``check`` (``aask_human``). A subclass that overrides only ``check`` runs it on a thread."""
        cls = type(self)
        if cls.check is not DecideByHuman.check and cls.acheck is DecideByHuman.acheck:
            return await Permission.acheck(self, state, call, tool)
        human, inherited = self._who(state)
        answer = await aask_human_with(
            state, human, self.question(call, tool), Literal["yes", "no"], method="aask_human", inherited=inherited
        )
        return self._verdict(answer)

    def __repr__(self) -> str:
        name = type(self).__name__
        if self.human is None:
            return f"{name}()"
        human_cls = type(self.human)
        shown = repr(self.human) if human_cls.__repr__ is not object.__repr__ else f"{human_cls.__name__}()"
        return f"{name}(human={shown})"
