"""What the turn machinery does with a run's permissions: who owns each one, the effective list of a run, the
check made before a run starts, and asking the list about one call.

``effective_permissions`` builds a run's ``PermissionList`` (each permission paired with its ``Owner``, the
effective human of the run whose Agent wrote it); ``check_run_start`` refuses a run that could not ask its list;
``decide``/``adecide`` ask the list about one call and return a ``Decision`` that the tool runner records. What a
permission is, and what it may answer, is in ``alpineagents.permissions``.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal, NamedTuple

from alpineagents.errors import NoHumanError, PermissionWarning, ToolError, fix_message
from alpineagents.human import HumanLike, answers_only_async
from alpineagents.permissions import (
    ASKED_OWNER,
    NOBODY_DECIDED,
    AllowByDefault,
    Allowed,
    DecideByHuman,
    Decision,
    Deferred,
    Denied,
    DenyPermission,
    Permission,
    async_only,
    check_verdict,
)
from alpineagents.types import ToolCall, format_call

if TYPE_CHECKING:
    from alpineagents.state import State
    from alpineagents.tool import Tool

__all__ = [
    "Owner",
    "Owners",
    "PermissionList",
    "effective_permissions",
    "check_run_start",
    "decide",
    "adecide",
]


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
        if sync and async_only(permission):
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


# --- asking the list about one call --------------------------------------------------------------------------


@contextmanager
def _owner_scope(owner: Owner | None) -> Iterator[None]:
    if owner is None:
        yield
        return
    token = ASKED_OWNER.set(owner)
    try:
        yield
    finally:
        ASKED_OWNER.reset(token)


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


_VERDICTS = (Allowed, Denied, Deferred)

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
