"""The `Agent`: settings fixed at creation, and the actions that need a model, tools or a person (03 §2-§10).

An Agent holds no conversation: every run, think, tool call and question is recorded in a `State`. Any Agent
may drive any State; one Agent may run many States at once (in threads, or as tasks with `arun`).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from alpineagents import _structured
from alpineagents._async import blocks_event_loop
from alpineagents._context import DEFAULT, RUNS, RunContext, own_context
from alpineagents._drive import adrive, drive
from alpineagents._runner import arun_tool_calls, run_tool_calls
from alpineagents._runrun import prepare_run, run_steps, start_run
from alpineagents._subagent import SubagentTool
from alpineagents._think import (
    ask_steps,
    athink_now,
    compact_steps,
    think_now,
    think_start,
    think_steps,
    use_tools_start,
    use_tools_steps,
)
from alpineagents._tokens import context_tokens, estimate_overhead_tokens
from alpineagents.errors import fix_message
from alpineagents.human import aask_human_with, ask_human_with
from alpineagents.loop import default_loop
from alpineagents.models.base import Model
from alpineagents.models.resolve import resolve_model
from alpineagents.permissions import Permission
from alpineagents.reporter import METHODS as REPORTER_METHODS
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.terminal import default_terminal
from alpineagents.tool import FunctionTool, Tool, ToolMap, collect_tools
from alpineagents.types import AgentInfo, ToolSpec

if TYPE_CHECKING:
    from alpineagents.human import Human
    from alpineagents.reporter import Reporter

__all__ = ["Agent", "DEFAULT"]

SETTINGS: tuple[str, ...] = (
    "model",
    "system",
    "tools",
    "skills",
    "loop",
    "reporter",
    "human",
    "store",
    "permissions",
    "name",
    "description",
)
"""The settings `Agent.copy(**changes)` accepts, in constructor order."""

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _list_like(value: Any) -> bool:
    if isinstance(value, (str, bytes)):
        return False
    try:
        iter(value)
    except TypeError:
        return False
    return True


def _sync_refusal(method: str) -> TypeError:
    """The `TypeError` of a sync method called on the event-loop thread of an async run (03 §8.2)."""
    fix = f"Use the async version, await agent.a{method}(...)"
    if method == "compact":
        fix += " (in a loop: await acompact_if_full(agent, state))"
    example = "answer = await agent.arun(state)" if method == "run" else f"await agent.a{method}(state)"
    return TypeError(
        fix_message(
            f"agent.{method}() was called inside an async run, where it would block the event loop", fix, example
        )
    )


def _not_a_state(method: str, state: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"The first argument of agent.{method}() must be a State (got: {state!r})",
            "pass the State to work on",
            f'state = State(messages=[Message.user("Find the bug")])\nagent.{method}(state)',
        )
    )


def _is_mcp(item: Any) -> bool:
    module = type(item).__module__
    return module == "alpineagents.mcp_tools"


class Agent:
    """Settings that never change after creation, plus the actions that need them.

    Args:
        model: A model name (e.g. `"claude-sonnet-5"`, `"ollama/llama3:8b"`) or a `Model` object.
        system: The system prompt.
        tools: Tool items: `@tool` functions, objects with `@tool` methods, `Tool` objects, and Agents with a
            name and a description (subagents).
        skills: Reserved; must be empty.
        loop: The loop `run`/`arun` call, a callable `(agent, state)`; `None` means `default_loop`.
        reporter: Receives progress events; `DEFAULT` is the shared Terminal (or, for a subagent, the reporter of
            the run above); `None` is silent.
        human: Answers `ask_human` and `DecideByHuman`; `DEFAULT` as for `reporter`; `None`: nobody answers.
        store: Saves the States this Agent runs, at fixed save points.
        permissions: `None`: every tool call runs. A list (even empty): every call is checked first.
        name: A label; a subagent's tool name.
        description: A label; a subagent's tool description.

    Raises:
        TypeError, ValueError: A setting is wrong (the message says how to fix it).
        NotImplementedError: `skills` is not empty.
    """

    def __init__(
        self,
        model: str | Model,
        *,
        system: str | None = None,
        tools: Iterable[Any] = (),
        skills: Iterable[str] = (),
        loop: Any = None,
        reporter: Reporter | None | Any = DEFAULT,
        human: Human | None | Any = DEFAULT,
        store: Store | None = None,
        permissions: Iterable[Permission] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        if not _list_like(tools):
            raise TypeError(
                fix_message(
                    f"tools= takes a list (got: {tools!r})",
                    "put the tools in a list, even a single one",
                    "Agent(model, tools=[read_file])",
                )
            )
        tools_given = tuple(tools)
        if permissions is not None and not _list_like(permissions):
            raise TypeError(
                fix_message(
                    f"permissions= takes a list (got: {permissions!r})",
                    "put the permissions in a list, even a single one",
                    "Agent(model, permissions=[DenyByName(['rm']), AllowByDefault()])",
                )
            )
        permissions_given = None if permissions is None else tuple(permissions)
        skills_list: Any = (skills,) if isinstance(skills, str) else skills
        if not _list_like(skills_list):
            raise TypeError(fix_message(f"skills= takes a list (got: {skills!r})", "leave skills= out", "Agent(model)"))
        skills_given = tuple(skills_list)
        for setting, value in (("system", system), ("name", name), ("description", description)):
            if value is not None and not isinstance(value, str):
                raise TypeError(
                    fix_message(
                        f"{setting}= takes a string (got: {value!r})",
                        f"pass {setting}= as a str, or leave it out",
                        f'Agent(model, {setting}="...")',
                    )
                )
        resolved = resolve_model(model)
        own_items: list[Any] = []
        mcp_items: list[Any] = []
        for item in tools_given:
            if isinstance(item, Agent):
                own_items.append(_subagent_tool(item))
            elif _is_mcp(item):
                mcp_items.append(item)
            else:
                own_items.append(item)
        tool_dict = collect_tools(own_items)
        mcp_servers: tuple[Any, ...] = ()
        mcp_picks: dict[int, Any] = {}
        if mcp_items:
            from alpineagents._mcp.servers import group_servers

            mcp_servers, mcp_picks = group_servers(mcp_items)
        if skills_given:
            raise NotImplementedError("skills= is not supported yet")
        if loop is not None and not callable(loop):
            raise TypeError(
                fix_message(
                    f"loop= takes a function that receives (agent, state) (got: {loop!r})",
                    "pass a function (or a @loop) that calls agent.think(state) and agent.use_tools(state)",
                    "@loop(until=waiting_for_user, limit=50)\ndef my_loop(agent, state):\n    agent.think(state)\n"
                    "    if state.pending_calls:\n        agent.use_tools(state)\n\nAgent(model, loop=my_loop)",
                )
            )
        if reporter is not None and reporter is not DEFAULT:
            missing = [m for m in REPORTER_METHODS if not callable(getattr(reporter, m, None))]
            if isinstance(reporter, type) or missing:
                problem = f"reporter={reporter!r} is not a Reporter object"
                if missing:
                    problem += f" (missing methods: {', '.join(missing)})"
                raise TypeError(
                    fix_message(
                        problem,
                        "pass an object of a Reporter subclass (override the methods you need), or None for silence",
                        "class Log(Reporter):\n    def on_tool_start(self, state, call):\n        print(call.name)\n\n"
                        "Agent(model, reporter=Log())",
                    )
                )
        if (
            human is not None
            and human is not DEFAULT
            and (
                isinstance(human, type)
                or not (callable(getattr(human, "ask", None)) or callable(getattr(human, "aask", None)))
            )
        ):
            raise TypeError(
                fix_message(
                    f"human={human!r} is not a Human object",
                    "pass an object with an ask (or async aask) method, such as Terminal(), or None",
                    "Agent(model, human=Terminal())",
                )
            )
        if store is not None and not isinstance(store, Store):
            raise TypeError(
                fix_message(
                    f"store={store!r} is not a Store object",
                    "pass an object of a Store subclass, such as FileStore(path)",
                    'Agent(model, store=FileStore(".alpine/states"))',
                )
            )
        for item in permissions_given or ():
            if not isinstance(item, Permission):
                if isinstance(item, type):
                    problem = f"{item.__name__} passed in permissions= is not a Permission object (it is the class)"
                else:
                    problem = f"{item!r} passed in permissions= is not a Permission object"
                raise TypeError(
                    fix_message(
                        problem,
                        "pass permission objects (create them with parentheses)",
                        "Agent(model, permissions=[DenyByName(['rm']), AllowByDefault()])",
                    )
                )
        self._args: dict[str, Any] = {
            "model": model,
            "system": system,
            "tools": tools_given,
            "skills": skills_given,
            "loop": loop,
            "reporter": reporter,
            "human": human,
            "store": store,
            "permissions": permissions_given,
            "name": name,
            "description": description,
        }
        self._model: Model = resolved
        self._model_string = f"{resolved.provider}/{resolved.name}" if resolved.provider else resolved.name
        self._system = system
        self._tools_given = tools_given
        self._tools: dict[str, Tool] = tool_dict
        self._tool_map = ToolMap(tool_dict, tuple(server.name for server in mcp_servers))
        self._specs: tuple[ToolSpec, ...] = tuple(t.spec for t in tool_dict.values())
        self._overhead = estimate_overhead_tokens(system, self._specs)
        self._loop = default_loop if loop is None else loop
        self._reporter_given = reporter
        self._human_given = human
        self._store = store
        self._permissions = permissions_given
        self._name = name
        self._description = description
        self._info: AgentInfo | None = None
        self._mcp_servers: tuple[Any, ...] = mcp_servers
        self._mcp_picks: dict[int, Any] = mcp_picks
        self._mcp_ready: Any = None
        self._mcp_users = 0
        self._mcp_lock = threading.RLock()

    # --- properties -----------------------------------------------------------------------------------------

    @property
    def model(self) -> Model:
        """The resolved `Model`."""
        return self._model

    @property
    def system(self) -> str | None:
        """The system prompt."""
        return self._system

    @property
    def tools(self) -> tuple[Any, ...]:
        """The `tools=` items as given (Agents and objects included, not flattened)."""
        return self._tools_given

    @property
    def tool_map(self) -> Mapping[str, Tool]:
        """Every tool the model can call, by name (a read-only `ToolMap`)."""
        return self._tool_map

    @property
    def skills(self) -> tuple[str, ...]:
        """Always `()`."""
        return ()

    @property
    def loop(self) -> Any:
        """The loop `run`/`arun` call (`default_loop` when none was given)."""
        return self._loop

    @property
    def reporter(self) -> Any:
        """The Agent's own reporter setting (`DEFAULT` resolves to the shared Terminal on every access)."""
        reporter = self._reporter_given
        return default_terminal() if reporter is DEFAULT else reporter

    @property
    def human(self) -> Any:
        """The Agent's own human setting (`DEFAULT` resolves to the shared Terminal on every access)."""
        human = self._human_given
        return default_terminal() if human is DEFAULT else human

    @property
    def store(self) -> Store | None:
        """The Agent's own store."""
        return self._store

    @property
    def permissions(self) -> tuple[Permission, ...]:
        """The given permissions in order; `()` both for `permissions=None` and `permissions=[]`."""
        return self._permissions or ()

    @property
    def name(self) -> str | None:
        """The Agent's name (a subagent's tool name)."""
        return self._name

    @property
    def description(self) -> str | None:
        """The Agent's description (a subagent's tool description)."""
        return self._description

    def __repr__(self) -> str:
        parts = []
        if self._name is not None:
            parts.append(f"name={self._name!r}")
        parts.append(f"model={self._model!r}")
        names = [*self._tools, *(repr(server) for server in self._mcp_servers)]
        if names:
            parts.append(f"tools=[{', '.join(names)}]")
        return f"Agent({', '.join(parts)})"

    # --- copy and context managers --------------------------------------------------------------------------

    def copy(self, **changes: Any) -> Agent:
        """A new Agent from this one's constructor arguments with `changes` laid over them.

        Raises:
            TypeError: An unknown setting, or any constructor check.
        """
        unknown = [key for key in changes if key not in SETTINGS]
        if unknown:
            raise TypeError(
                fix_message(
                    f"copy() got unknown settings: {', '.join(unknown)}",
                    f"Settings you can change: {', '.join(SETTINGS)}",
                    'agent.copy(system="Answer in French")',
                )
            )
        args = {**self._args, **changes}
        model = args.pop("model")
        return Agent(model, **args)

    def __enter__(self) -> Agent:
        """Keep this Agent's MCP servers connected until the block ends (nothing to do without servers)."""
        self._mcp_open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mcp_close()

    async def __aenter__(self) -> Agent:
        """The async twin of `with agent:`."""
        await self._amcp_open()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._amcp_close()

    def _mcp_open(self) -> None:
        """Take one use of this Agent's MCP servers and wait until they are connected (nothing without servers)."""
        if self._mcp_servers:
            from alpineagents._mcp.servers import acquire

            acquire(self)

    async def _amcp_open(self) -> None:
        """The async twin of `_mcp_open`."""
        if self._mcp_servers:
            from alpineagents._mcp.servers import aacquire

            await aacquire(self)

    def _mcp_close(self) -> None:
        """Give back one use of this Agent's MCP servers (nothing for an Agent without servers)."""
        if self._mcp_servers:
            from alpineagents._mcp.servers import release

            release(self)

    async def _amcp_close(self) -> None:
        """The async twin of `_mcp_close`: the event loop does not wait for a server to shut down."""
        if self._mcp_servers:
            from alpineagents._mcp.servers import arelease

            await arelease(self)

    def _mcp_sticky(self) -> None:
        """A public method called while the Agent has no user connects and stays connected (08 §4.5)."""
        if self._mcp_servers and self._mcp_users == 0:
            self._mcp_open()

    async def _amcp_sticky(self) -> None:
        """The async twin of `_mcp_sticky`."""
        if self._mcp_servers and self._mcp_users == 0:
            await self._amcp_open()

    # --- not implemented ------------------------------------------------------------------------------------

    def run_tool(self, state: State, tool: Any, /, **args: Any) -> Any:
        """Not implemented yet."""
        raise NotImplementedError("agent.run_tool() is not implemented yet")

    def load_skill(self, state: State, name: str) -> Any:
        """Not implemented yet."""
        raise NotImplementedError("agent.load_skill() is not implemented yet")

    # --- context size ---------------------------------------------------------------------------------------

    def context_tokens(self, state: State) -> int:
        """The estimated size of the next request this Agent would send for `state` (03 §2.7)."""
        if not isinstance(state, State):
            raise _not_a_state("context_tokens", state)
        return context_tokens(state.messages, self._overhead)

    def context_used(self, state: State) -> float:
        """`context_tokens(state) / model.context_window` (`0.0` without a usable window; may exceed 1.0)."""
        if not isinstance(state, State):
            raise _not_a_state("context_used", state)
        window = self._model.context_window
        if not window or window <= 0:
            return 0.0
        return context_tokens(state.messages, self._overhead) / window

    # --- internal hooks (03 §15) ----------------------------------------------------------------------------

    def _active_context(self, state: Any) -> RunContext | None:
        """The run context of this Agent's run that `state` belongs to, or None (03 §2.8, §15)."""
        context = getattr(state, "_run_context", None)
        if context is not None and context.agent is self:
            return context
        for context in reversed(RUNS.get()):
            if context.agent is self:
                return context
        return None

    def _context_for(self, state: Any) -> RunContext:
        """The run context that applies to this Agent's call on `state`: its run's, or its own settings."""
        context = self._active_context(state)
        return context if context is not None else own_context(self)

    def _reporter_for(self, state: Any) -> Any:
        """The Reporter that applies to this Agent's notifications about `state` (02 §2 seam)."""
        context = self._active_context(state)
        return context.reporter if context is not None else self.reporter

    def _agent_info_now(self) -> AgentInfo:
        """The `AgentInfo` a run of this Agent records (03 §10.1), built on first use."""
        info = self._info
        if info is None:
            system = self._system
            info = AgentInfo(
                name=self._name,
                model=self._model_string,
                system_sha256=None if system is None else hashlib.sha256(system.encode("utf-8")).hexdigest(),
                tools=tuple(sorted(self._tools)),
                mcp_servers=tuple(sorted(getattr(server, "name", "") for server in self._mcp_servers)),
            )
            self._info = info
        return info

    def _start_run(self, prompt_or_state: Any, method: str, context: RunContext | None = None) -> State:
        """03 §15: turn the argument into a State, refuse a finished one, compare on resume, record `run_start`
        and take the "being run" mark. The caller releases it with `state._end_run()`."""
        return start_run(self, prompt_or_state, method, context)

    def _choose_specs(self, tools: Any) -> tuple[ToolSpec, ...]:
        """The specs `think(tools=...)` shows (03 §4)."""
        if not _list_like(tools):
            raise TypeError(
                fix_message(
                    f"think(tools= takes a list (got: {tools!r})",
                    "pass the tools to show in a list, or [] for none",
                    "agent.think(state, tools=[read_file])",
                )
            )
        chosen: dict[str, Tool] = {}
        for item in tools:
            if isinstance(item, Agent):
                found = None
                for tool in self._tools.values():
                    if isinstance(tool, SubagentTool) and tool.agent is item:
                        found = tool
                        break
                if found is None:
                    raise ValueError(
                        fix_message(
                            f"{item!r} passed in think(tools=...) is not one of this Agent's tools",
                            "pass tools this Agent has in tools=",
                            "agent.think(state, tools=[researcher])",
                        )
                    )
                chosen[found.name] = found
                continue
            if _is_mcp(item):
                from alpineagents._mcp.servers import choose

                picked = choose(self, item)
                if picked is not None:
                    for tool in picked:
                        chosen[tool.name] = tool
                    continue
                raise ValueError(
                    fix_message(
                        f"{item!r} is not a connected MCP tool of this Agent",
                        "pass MCP tools of this Agent's servers, during a run or inside with agent:",
                        "agent.think(state, tools=[github.search_code])",
                    )
                )
            for name, tool in collect_tools([item]).items():
                mine = self._tools.get(name)
                if mine is None or not _same_tool(mine, tool):
                    names = ", ".join(self._tools) or "(none)"
                    raise ValueError(
                        fix_message(
                            f"Tool {name!r} passed in think(tools=...) is not one of this Agent's tools "
                            f"(this Agent's tools: {names})",
                            "pass tools this Agent has in tools=",
                            "agent.think(state, tools=[read_file])",
                        )
                    )
                chosen[name] = mine
        return tuple(tool.spec for tool in chosen.values())

    # --- run ------------------------------------------------------------------------------------------------

    def run(self, prompt_or_state: str | State, /) -> Any:
        """Run the loop on a State (a prompt starts a new one) and return what the loop returns.

        Raises:
            TypeError, ValueError: Before anything is recorded: a wrong argument, an async loop, a finished
                State, a State already being run, ...
            BaseException: Whatever left the loop, unchanged, after it was recorded and the pending calls were
                closed.
        """
        if blocks_event_loop():
            raise _sync_refusal("run")
        state, context, loop = prepare_run(self, prompt_or_state, "run")
        return drive(run_steps(self, state, context, loop))

    async def arun(self, prompt_or_state: str | State, /) -> Any:
        """The async twin of `run`: the loop must be async (`default_loop` becomes `adefault_loop`)."""
        state, context, loop = prepare_run(self, prompt_or_state, "arun")
        return await adrive(run_steps(self, state, context, loop))

    # --- think ----------------------------------------------------------------------------------------------

    def think(self, state: State, tools: Iterable[Any] | None = None) -> None:
        """Send the State's messages to the model once and record the reply; its tool calls become pending.

        `tools` chooses which of this Agent's tools the model sees (`None`: all of them).
        """
        if blocks_event_loop():
            raise _sync_refusal("think")
        if not isinstance(state, State):
            raise _not_a_state("think", state)
        self._mcp_sticky()
        specs = self._specs if tools is None else self._choose_specs(tools)
        reporter, store = think_start(self, state)
        if store is None:  # nothing to save: the same steps without the driver (the common case)
            think_now(self, state, specs, reporter)
        else:
            drive(think_steps(self, state, specs, reporter, store))

    async def athink(self, state: State, tools: Iterable[Any] | None = None) -> None:
        """The async twin of `think`."""
        if not isinstance(state, State):
            raise _not_a_state("athink", state)
        if self._mcp_servers and self._mcp_users == 0:  # `_amcp_sticky`, without a coroutine when nothing to do
            await self._amcp_open()
        specs = self._specs if tools is None else self._choose_specs(tools)
        reporter, store = think_start(self, state)
        if store is None:  # nothing to save: the same steps without the driver (the common case)
            await athink_now(self, state, specs, reporter)
        else:
            await adrive(think_steps(self, state, specs, reporter, store))

    # --- use_tools ------------------------------------------------------------------------------------------

    def use_tools(self, state: State) -> None:
        """Run every pending call of `state` and record one result per call (03 §5, 04 §11)."""
        if blocks_event_loop():
            raise _sync_refusal("use_tools")
        if not isinstance(state, State):
            raise _not_a_state("use_tools", state)
        self._mcp_sticky()
        context = use_tools_start(self, state, "use_tools")
        if context.store is None:  # nothing to save: the steps are just the runner's (the common case)
            if state.pending_calls:
                run_tool_calls(state, self._tool_map, context)
        else:
            drive(use_tools_steps(state, self._tool_map, context))

    async def ause_tools(self, state: State) -> None:
        """The async twin of `use_tools`: `async def` tools run as tasks on the event loop."""
        if not isinstance(state, State):
            raise _not_a_state("ause_tools", state)
        if self._mcp_servers and self._mcp_users == 0:  # `_amcp_sticky`, without a coroutine when nothing to do
            await self._amcp_open()
        context = use_tools_start(self, state, "ause_tools")
        if context.store is None:  # nothing to save: the steps are just the runner's (the common case)
            if state.pending_calls:
                await arun_tool_calls(state, self._tool_map, context)
        else:
            await adrive(use_tools_steps(state, self._tool_map, context))

    # --- compact --------------------------------------------------------------------------------------------

    def _compact_checks(self, state: Any, instructions: Any, method: str) -> None:
        if not isinstance(state, State):
            raise _not_a_state(method, state)
        if instructions is not None and not isinstance(instructions, str):
            raise TypeError(
                fix_message(
                    f"The instructions of compact() take a string (got: {instructions!r})",
                    "say in words what the summary must keep",
                    f'agent.{method}(state, instructions="Keep the list of files changed")',
                )
            )

    def compact(self, state: State, instructions: str | None = None) -> None:
        """Ask the model for a summary and replace the messages with the first user message and that summary.

        Raises:
            OutputError: The summary was empty (the messages are unchanged).
            ValueError: Calls are pending, or another compaction of this State is under way.
        """
        if blocks_event_loop():
            raise _sync_refusal("compact")
        self._compact_checks(state, instructions, "compact")
        self._mcp_sticky()
        drive(compact_steps(self, state, instructions))

    async def acompact(self, state: State, instructions: str | None = None) -> None:
        """The async twin of `compact`."""
        self._compact_checks(state, instructions, "acompact")
        await self._amcp_sticky()
        await adrive(compact_steps(self, state, instructions))

    # --- ask ------------------------------------------------------------------------------------------------

    def _ask_checks(self, state: Any, prompt: Any, returns: Any, retries: Any, method: str) -> None:
        if not isinstance(state, State):
            raise _not_a_state(method, state)
        if not isinstance(prompt, str):
            raise TypeError(
                fix_message(
                    f"The prompt of {method}() takes a string (got: {prompt!r})",
                    "pass the question as a string",
                    f'agent.{method}(state, "Summarize the work so far")',
                )
            )
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(
                fix_message(
                    f"retries={retries!r} is not allowed",
                    "pass how many times to ask again after an answer that does not fit, as an int >= 0",
                    f'agent.{method}(state, "Make a plan", returns=Plan, retries=2)',
                )
            )
        state._ensure_open(method)
        _structured.check_returns(returns)

    def ask(self, state: State, prompt: str, returns: Any = str, *, retries: int = 2) -> Any:
        """Ask the model a side question about the State's context and return the answer as `returns`.

        The context does not change; one `ask` entry records the question, the answer and the usage.

        Raises:
            OutputError: No answer fitted `returns` after `retries + 1` attempts.
        """
        if blocks_event_loop():
            raise _sync_refusal("ask")
        self._ask_checks(state, prompt, returns, retries, "ask")
        self._mcp_sticky()
        return drive(ask_steps(self, state, prompt, returns, retries, "ask"))

    async def aask(self, state: State, prompt: str, returns: Any = str, *, retries: int = 2) -> Any:
        """The async twin of `ask`."""
        self._ask_checks(state, prompt, returns, retries, "aask")
        await self._amcp_sticky()
        return await adrive(ask_steps(self, state, prompt, returns, retries, "aask"))

    # --- ask_human ------------------------------------------------------------------------------------------

    def _human_for(self, state: Any, method: str) -> tuple[Any, bool]:
        if not isinstance(state, State):
            raise _not_a_state(method, state)
        context = self._active_context(state)
        if context is not None:
            return context.human, context.human_inherited
        return self.human, False

    def ask_human(self, state: State, prompt: str, returns: Any = str) -> Any:
        """Ask the applicable Human and record the exchange; `returns` is `str`, `bool` or `Literal[...]`.

        Raises:
            NoHumanError: Nobody can answer.
        """
        if blocks_event_loop():
            raise _sync_refusal("ask_human")
        human, inherited = self._human_for(state, "ask_human")
        return ask_human_with(state, human, prompt, returns, method="ask_human", inherited=inherited)

    async def aask_human(self, state: State, prompt: str, returns: Any = str) -> Any:
        """The async twin of `ask_human`: awaits the Human's `aask` (or runs its `ask` on a worker thread)."""
        human, inherited = self._human_for(state, "aask_human")
        return await aask_human_with(state, human, prompt, returns, method="aask_human", inherited=inherited)


def _same_tool(mine: Tool, other: Tool) -> bool:
    if mine is other:
        return True
    if isinstance(mine, FunctionTool) and isinstance(other, FunctionTool):
        return mine.fn is other.fn and mine.bound_to is other.bound_to
    return False


def _subagent_tool(helper: Agent) -> SubagentTool:
    """Check an Agent passed in `tools=` and make its subagent tool (08 §3.8.1)."""
    missing = [attr for attr in ("name", "description") if not getattr(helper, attr)]
    if missing:
        raise ValueError(
            fix_message(
                f"{helper!r} passed in tools= has no {', '.join(missing)}. A subagent's name becomes the tool name "
                "and its description the tool description",
                "Give an Agent used as a subagent both name and description",
                'researcher = Agent(model, name="researcher", description="Looks things up on the web")',
            )
        )
    name = helper.name
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise TypeError(
            fix_message(
                f"name={name!r} of {helper!r} passed in tools= cannot be used as a tool name. It must be 1-64 "
                "characters of letters, digits, _ and -",
                "Give the Agent a valid name",
                'Agent(model, name="web_researcher", description="...")',
            )
        )
    return SubagentTool(helper)
