"""The `Agent`: settings fixed at creation, and the actions that need a model, tools or a person.

An Agent holds no conversation: every run, think, tool call and question is recorded in a `State`. Any Agent
may drive any State; one Agent may run many States at once (in threads, or as tasks with `arun`). Each action is
written once as a step sequence (`alpineagents._turn`) that the sync method drives and its async twin awaits.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from alpineagents._async import blocks_event_loop
from alpineagents._history.misuse import not_a_state_error
from alpineagents._settings import check_budget_price, check_settings
from alpineagents._skills.tools import add_skill_tools, skill_tool, system_with_catalogue
from alpineagents._stream import AsyncEventStream, EventStream
from alpineagents._structured import Answers, check_returns
from alpineagents._tokens import context_tokens, estimate_overhead_tokens
from alpineagents._turn.context import RunContext, active_context
from alpineagents._turn.driver import Steps, adrive, drive
from alpineagents._turn.program import new_call, program_call_steps, program_tool, same_tool
from alpineagents._turn.run import prepare_run, run_steps, start_run
from alpineagents._turn.seams import DEFAULT, Default, Feed, MCPUse
from alpineagents._turn.steps import ask_steps, compact_steps, think_steps, use_tools_steps
from alpineagents._turn.subagent import SubagentTool, checked_subagent_tool
from alpineagents._values.numbers import is_whole
from alpineagents.errors import fix_message
from alpineagents.human import Question
from alpineagents.loop import adefault_loop, default_loop, is_async_callable, turn_steps
from alpineagents.models.base import Model
from alpineagents.models.resolve import resolve_model
from alpineagents.permissions import Permission
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.terminal import default_terminal
from alpineagents.tool import Tool, ToolMap, collect_tools
from alpineagents.types import AgentInfo, Budget, ToolSpec

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
    "budget",
)
"""The settings `Agent.copy(**changes)` accepts, in constructor order."""


def _list_like(value: Any) -> bool:
    if isinstance(value, (str, bytes)):
        return False
    try:
        iter(value)
    except TypeError:
        return False
    return True


def _sync_refusal(method: str) -> TypeError:
    """The `TypeError` of a sync method called on the event-loop thread of an async run (it would block it)."""
    fix = f"Use the async version, await agent.a{method}(...)"
    if method == "compact":
        fix += " (in a loop: await acompact_if_full(agent, state))"
    example = "answer = await agent.arun(state)" if method == "run" else f"await agent.a{method}(state)"
    return TypeError(
        fix_message(
            f"agent.{method}() was called inside an async run, where it would block the event loop", fix, example
        )
    )


def _checked_state(state: object, method: str) -> State:
    """`state`, or the `TypeError` saying the first argument of `agent.{method}()` must be a State."""
    if not isinstance(state, State):
        raise not_a_state_error(
            method,
            state,
            "pass the State to work on",
            f'state = State(messages=[Message.user("Find the bug")])\nagent.{method}(state)',
        )
    return state


def _compact_checks(state: object, instructions: object, method: str) -> State:
    state = _checked_state(state, method)
    if instructions is not None and not isinstance(instructions, str):
        raise TypeError(
            fix_message(
                f"The instructions of compact() take a string (got: {instructions!r})",
                "say in words what the summary must keep",
                f'agent.{method}(state, instructions="Keep the list of files changed")',
            )
        )
    return state


def _ask_checks(state: object, prompt: object, returns: object, retries: object, method: str) -> Answers:
    """The checks of `ask` before anything is asked; the answer format of `returns`."""
    state = _checked_state(state, method)
    if not isinstance(prompt, str):
        raise TypeError(
            fix_message(
                f"The prompt of {method}() takes a string (got: {prompt!r})",
                "pass the question as a string",
                f'agent.{method}(state, "Summarize the work so far")',
            )
        )
    if not is_whole(retries) or retries < 0:
        raise ValueError(
            fix_message(
                f"retries={retries!r} is not allowed",
                "pass how many times to ask again after an answer that does not fit, as an int >= 0",
                f'agent.{method}(state, "Make a plan", returns=Plan, retries=2)',
            )
        )
    state._ensure_open(method)
    check_returns(returns)
    return Answers(returns)


def _is_mcp(item: object) -> bool:
    module = type(item).__module__
    return module == "alpineagents.mcp_tools"


# --- the constructor's checks, in the order they are made ------------------------------------------------------


def _as_tuple(value: Any, setting: str, fix: str, example: str) -> tuple[Any, ...]:
    """`value` as a tuple, or the `TypeError` `{setting}= takes a list (got: ...)` for a string or a non-iterable."""
    if not _list_like(value):
        raise TypeError(fix_message(f"{setting}= takes a list (got: {value!r})", fix, example))
    return tuple(value)


def _check_lists(tools: Any, permissions: Any, skills: Any) -> tuple[tuple[Any, ...], Any, tuple[Any, ...]]:
    """`tools`, `permissions` (None kept) and `skills` (a string is one item) as tuples."""
    tools_given = _as_tuple(
        tools, "tools", "put the tools in a list, even a single one", "Agent(model, tools=[read_file])"
    )
    permissions_given = None
    if permissions is not None:
        permissions_given = _as_tuple(
            permissions,
            "permissions",
            "put the permissions in a list, even a single one",
            "Agent(model, permissions=[DenyByName(['rm']), AllowByDefault()])",
        )
    if not _list_like((skills,) if isinstance(skills, str) else skills):
        raise TypeError(fix_message(f"skills= takes a list (got: {skills!r})", "leave skills= out", "Agent(model)"))
    skills_given = (skills,) if isinstance(skills, str) else tuple(skills)
    return tools_given, permissions_given, skills_given


def _check_labels(**labels: object) -> None:
    for setting, value in labels.items():
        if value is not None and not isinstance(value, str):
            raise TypeError(
                fix_message(
                    f"{setting}= takes a string (got: {value!r})",
                    f"pass {setting}= as a str, or leave it out",
                    f'Agent(model, {setting}="...")',
                )
            )


def _split_tools(items: tuple[Any, ...]) -> tuple[dict[str, Tool], tuple[Any, ...], dict[int, Any]]:
    """The own tools by name (subagents become their tools), the MCP servers, and the tools picked of each."""
    own_items: list[Any] = []
    mcp_items: list[Any] = []
    for item in items:
        if isinstance(item, Agent):
            own_items.append(_subagent_tool(item))
        elif _is_mcp(item):
            mcp_items.append(item)
        else:
            own_items.append(item)
    tool_dict = collect_tools(own_items)
    if not mcp_items:
        return tool_dict, (), {}
    from alpineagents._mcp.servers import group_servers  # the MCP layer sits above: loaded only when used

    servers, picks = group_servers(mcp_items)
    return tool_dict, servers, picks


def _loop_name(loop: object) -> str:
    name = getattr(loop, "__name__", None)
    return name if isinstance(name, str) else repr(loop)


def _choose_loop(loop: Callable[..., Any], method: str) -> Callable[..., Any]:
    """The loop `run` (a sync loop) or `arun` (an async loop; `default_loop` becomes `adefault_loop`) calls."""
    if method == "run":
        if is_async_callable(loop):
            raise TypeError(
                fix_message(
                    f"This Agent's loop {_loop_name(loop)!r} is async, so it cannot run with run()",
                    "Start the run with arun() from async code (answer = await agent.arun(...)), or give the "
                    "Agent a regular def loop",
                    "answer = await agent.arun(state)",
                )
            )
        return loop
    if loop is default_loop:
        return adefault_loop
    if not is_async_callable(loop):
        raise TypeError(
            fix_message(
                f"arun() needs an async loop, but this Agent's loop {_loop_name(loop)!r} is a regular def",
                "Write the loop with async def (await agent.athink(state), ...), or use adefault_loop; "
                "a regular def loop runs with run()",
                "@loop(until=waiting_for_user, limit=50)\nasync def my_loop(agent, state):\n"
                "    await agent.athink(state)\n    if state.pending_calls:\n        await agent.ause_tools(state)",
            )
        )
    return loop


class Agent:
    """Settings that never change after creation, plus the actions that need them.

    Args:
        model: A model name (e.g. `"claude-sonnet-5"`, `"ollama/llama3:8b"`) or a `Model` object.
        system: The system prompt.
        tools: Tool items: `@tool` functions, objects with `@tool` methods, `Tool` objects, and Agents with a
            name and a description (subagents).
        skills: Paths of skill folders (each with a `SKILL.md`), or of folders whose sub-folders are skills. Read
            and checked now; the model sees their names and descriptions and loads one when a task needs it.
        loop: The loop `run`/`arun` call, a callable `(agent, state)`; `None` means `default_loop`.
        reporter: Receives progress events; `DEFAULT` is the shared Terminal (or, for a subagent, the reporter of
            the run above); `None` is silent.
        human: Answers `ask_human` and `DecideByHuman`; `DEFAULT` as for `reporter`; `None`: nobody answers.
        store: Saves the States this Agent runs, at fixed save points.
        permissions: `None`: every tool call runs. A list (even empty): every call is checked first.
        name: A label; a subagent's tool name.
        description: A label; a subagent's tool description.
        budget: A `Budget`: the limits of each run and all of its subagents, counted from the history. A model
            request (or a turn's tool calls) that would pass it is not sent: the run stops and waits for
            `state.raise_budget(...)`. `None`: no limit.

    Raises:
        TypeError, ValueError: A setting is wrong, or a skill cannot be read (the message says how to fix it).
    """

    def __init__(
        self,
        model: str | Model,
        *,
        system: str | None = None,
        tools: Iterable[Any] = (),
        skills: Iterable[str] = (),
        loop: Callable[..., object] | None = None,
        reporter: Reporter | Default | None = DEFAULT,
        human: Human | Default | None = DEFAULT,
        store: Store | None = None,
        permissions: Iterable[Permission] | None = None,
        name: str | None = None,
        description: str | None = None,
        budget: Budget | None = None,
    ) -> None:
        tools_given, permissions_given, skills_given = _check_lists(tools, permissions, skills)
        _check_labels(system=system, name=name, description=description)
        resolved = resolve_model(model)
        tool_dict, mcp_servers, mcp_picks = _split_tools(tools_given)
        skills_read = add_skill_tools(tool_dict, skills_given)
        check_settings(
            loop=loop, reporter=reporter, human=human, store=store, permissions=permissions_given, budget=budget
        )
        check_budget_price(budget, resolved)
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
            "budget": budget,
        }
        self._model: Model = resolved
        self._model_string = f"{resolved.provider}/{resolved.name}" if resolved.provider else resolved.name
        self._system_given = system
        self._system = system_with_catalogue(system, skills_read)  # the text every request carries
        self._skills = skills_read
        self._tools_given = tools_given
        self._tools: dict[str, Tool] = tool_dict
        self._tool_map = ToolMap(tool_dict, tuple(server.name for server in mcp_servers))
        self._specs: tuple[ToolSpec, ...] = tuple(t.spec for t in tool_dict.values())
        self._overhead = estimate_overhead_tokens(self._system, self._specs)
        self._loop = default_loop if loop is None else loop
        self._reporter_given: Reporter | Default | None = reporter
        self._human_given: Human | Default | None = human
        self._store = store
        self._permissions: tuple[Permission, ...] | None = permissions_given
        self._name = name
        self._description = description
        self._budget: Budget | None = budget
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
        """The system prompt as given (requests carry it followed by the skills' catalogue, if any)."""
        return self._system_given

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
        """The names of the Agent's skills, in the order they were read."""
        return tuple(self._skills)

    @property
    def loop(self) -> Any:
        """The loop `run`/`arun` call (`default_loop` when none was given)."""
        return self._loop

    @property
    def reporter(self) -> Reporter | None:
        """The Agent's own reporter setting (`DEFAULT` resolves to the shared Terminal on every access)."""
        reporter = self._reporter_given
        return default_terminal() if isinstance(reporter, Default) else reporter

    @property
    def human(self) -> Human | None:
        """The Agent's own human setting (`DEFAULT` resolves to the shared Terminal on every access)."""
        human = self._human_given
        return default_terminal() if isinstance(human, Default) else human

    @property
    def store(self) -> Store | None:
        """The Agent's own store."""
        return self._store

    @property
    def permissions(self) -> tuple[Permission, ...]:
        """The given permissions in order; `()` both for `permissions=None` and `permissions=[]`."""
        return self._permissions or ()

    @property
    def budget(self) -> Budget | None:
        """The limits of each run of this Agent and its subagents, or `None`."""
        return self._budget

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

    def copy(self, **changes: object) -> Agent:
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
        self._mcp_use("acquire")
        return self

    def __exit__(self, *exc: object) -> None:
        self._mcp_use("release")

    async def __aenter__(self) -> Agent:
        """The async twin of `with agent:`."""
        await self._amcp_use("acquire")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._amcp_use("release")

    def _mcp_use(self, use: MCPUse) -> None:
        """Take one use of this Agent's MCP servers and wait until they are connected (`"acquire"`), or give one
        back (`"release"`); nothing for an Agent without servers. The MCP layer sits above the Agent and needs
        its optional dependency: it is loaded only when used."""
        if self._mcp_servers:
            from alpineagents._mcp import servers

            getattr(servers, use)(self)

    async def _amcp_use(self, use: MCPUse) -> None:
        """The async twin of `_mcp_use`: the event loop does not wait for a server to shut down."""
        if self._mcp_servers:
            from alpineagents._mcp import servers

            await getattr(servers, "a" + use)(self)

    # --- tool calls the program makes -----------------------------------------------------------------------

    def _program_steps(self, state: object, tool: object, args: dict[str, object], method: str) -> Steps:
        state = _checked_state(state, method)
        found = (
            self._subagent_of(tool, method) if isinstance(tool, Agent) else program_tool(self._tool_map, tool, method)
        )
        return program_call_steps(self, state, found, new_call(found, args, method), method, True)

    def run_tool(self, state: State, tool: object, /, **args: object) -> Any:
        """Run one tool call the program chose, as if the model had asked for it, and return its result content.

        `tool` is a tool of this Agent (the tool or its name) or any tool object; `args` are checked as a model's
        would be. The Agent's permissions, human and reporter apply. The call and its result are recorded as one
        turn, as `think` records a model's reply with one tool call: the model reads them at its next request, and
        the reply's model is `program` (a reply whose model is `program` holds a call the program made with
        run_tool; its usage is zero). So `state.turn` grows by one, and `str(state)` shows
        `model_request: program` and the call.

        Raises:
            TypeError, ValueError: Before anything is recorded: not a State, an unknown tool, arguments that are
                not JSON, a finished State, calls pending, a think waiting on the model, no messages.
            BaseException: What the tool raised (with a note), Ctrl+C or cancellation; the call is closed first.
        """
        if blocks_event_loop():
            raise _sync_refusal("run_tool")
        return drive(self._program_steps(state, tool, args, "run_tool"))

    async def arun_tool(self, state: State, tool: object, /, **args: object) -> Any:
        """The async twin of `run_tool`: an `async def` tool runs as a task on the event loop."""
        return await adrive(self._program_steps(state, tool, args, "arun_tool"))

    def _skill_steps(self, state: object, name: object, method: str) -> Steps:
        state = _checked_state(state, method)
        tool = skill_tool(self._skills, self._tools, name, method)
        return program_call_steps(self, state, tool, new_call(tool, {"name": name}, method), method, False)

    def load_skill(self, state: State, name: str) -> str:
        """Put a skill's instructions into the conversation from the program's side, and return them.

        Recorded as a `load_skill` call the program made, as `run_tool` records one (a turn whose reply's model is
        `program`; the model reads it at its next request). The program chose it, so no permission is asked; the
        reporter sees it as a tool call.

        Raises:
            ValueError: No skill of that name (the message lists the skills), a finished State, calls pending, a
                think waiting on the model, no messages.
        """
        if blocks_event_loop():
            raise _sync_refusal("load_skill")
        return drive(self._skill_steps(state, name, "load_skill"))

    async def aload_skill(self, state: State, name: str) -> str:
        """The async twin of `load_skill`."""
        return await adrive(self._skill_steps(state, name, "aload_skill"))

    # --- context size ---------------------------------------------------------------------------------------

    def context_tokens(self, state: State) -> int:
        """The estimated size of the next request this Agent would send for `state`: the context estimate of its
        messages plus the overhead of this Agent's system prompt and the specs of all its tools."""
        return context_tokens(_checked_state(state, "context_tokens").messages, self._overhead)

    def context_used(self, state: State) -> float:
        """`context_tokens(state) / model.context_window` (`0.0` without a usable window; may exceed 1.0)."""
        state = _checked_state(state, "context_used")
        window = self._model.context_window
        if not window or window <= 0:
            return 0.0
        return context_tokens(state.messages, self._overhead) / window

    # --- internal hooks with fixed names --------------------------------------------------------------------

    def _active_context(self, state: State) -> RunContext | None:
        """The run context of this Agent's run that `state` belongs to (kept on the State while this Agent runs
        it, else the one of this Agent's run going on in this thread or task), or None."""
        return active_context(self, state)

    def _reporter_for(self, state: State) -> Reporter | None:
        """The Reporter that applies to this Agent's notifications about `state` (the State calls it)."""
        context = active_context(self, state)
        return context.reporter if context is not None else self.reporter

    def _agent_info_now(self) -> AgentInfo:
        """The `AgentInfo` a run of this Agent records, built on first use (settings never change)."""
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

    def _start_run(self, prompt_or_state: str | State, method: str, context: RunContext | None = None) -> State:
        """Turn the argument into a State, refuse a finished one, compare Agents on resume, record `run_start`
        and take the "being run" mark. The caller releases it with `state._end_run()`."""
        return start_run(self, prompt_or_state, method, context)

    def _choose_specs(self, tools: Any) -> tuple[ToolSpec, ...]:
        """The specs `think(tools=...)` shows: the non-MCP items in the order given, then the chosen MCP tools;
        each must be one of this Agent's tools."""
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
                found = self._subagent_of(item, "think")
                chosen[found.name] = found
            elif _is_mcp(item):
                for tool in self._mcp_chosen(item):
                    chosen[tool.name] = tool
            else:
                for name, tool in collect_tools([item]).items():
                    chosen[name] = self._own_tool(name, tool)
        return tuple(tool.spec for tool in chosen.values())

    def _subagent_of(self, item: Agent, method: str) -> Tool:
        for tool in self._tools.values():
            if isinstance(tool, SubagentTool) and tool.agent is item:
                return tool
        if method != "think":  # run_tool runs any tool, a subagent included
            return _subagent_tool(item)
        raise ValueError(
            fix_message(
                f"{item!r} passed in think(tools=...) is not one of this Agent's tools",
                "pass tools this Agent has in tools=",
                "agent.think(state, tools=[researcher])",
            )
        )

    def _mcp_chosen(self, item: Any) -> Iterable[Tool]:
        from alpineagents._mcp.servers import choose  # the MCP layer sits above: loaded only when used

        picked = choose(self, item)
        if picked is None:
            raise ValueError(
                fix_message(
                    f"{item!r} is not a connected MCP tool of this Agent",
                    "pass MCP tools of this Agent's servers, during a run or inside with agent:",
                    "agent.think(state, tools=[github.search_code])",
                )
            )
        return picked

    def _own_tool(self, name: str, tool: Tool) -> Tool:
        mine = self._tools.get(name)
        if mine is None or not same_tool(mine, tool):
            names = ", ".join(self._tools) or "(none)"
            raise ValueError(
                fix_message(
                    f"Tool {name!r} passed in think(tools=...) is not one of this Agent's tools "
                    f"(this Agent's tools: {names})",
                    "pass tools this Agent has in tools=",
                    "agent.think(state, tools=[read_file])",
                )
            )
        return mine

    # --- the actions: each one step sequence, driven by the sync method and awaited by its async twin --------

    def _run_steps(self, prompt_or_state: str | State, method: str, feed: Feed | None = None) -> Steps:
        """The checks and the start of a run, then its step sequence (a plain function returning it: a generator
        here would be one more object per run in flight). `feed`: the stream that follows the run."""
        loop = _choose_loop(self._loop, method)
        state, context = prepare_run(self, prompt_or_state, method, feed)
        return run_steps(self, state, context, loop, turn_steps(loop, self, state))

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
        return drive(self._run_steps(prompt_or_state, "run"))

    async def arun(self, prompt_or_state: str | State, /) -> Any:
        """The async twin of `run`: the loop must be async (`default_loop` becomes `adefault_loop`)."""
        return await adrive(self._run_steps(prompt_or_state, "arun"))

    def stream(self, prompt_or_state: str | State, /, *, after: int | None = None) -> EventStream:
        """Run the loop on a State (a prompt starts a new one) and give its events as they happen.

        Returns an iterator of the events of `alpineagents.events` (the run goes on in a thread of its own, so a
        slow reader never slows it) that is also a context manager: leaving its block early, or `close()`, stops
        the run as Ctrl+C does (pending calls closed, the State saved). `after=N` first gives the events of the
        history after position N (a reader that reconnects passes the position of the last event it got), then
        those of the run. The State is `.state`; what the loop returned is `.result` once the stream ended. An
        exception that ended the run is raised by the iterator after the last event (`RunEnded`).

        Raises:
            TypeError, ValueError: `after` is not a position (-1 or more); the argument is not a prompt or State.
        """
        if blocks_event_loop():
            raise _sync_refusal("stream")
        return EventStream(self, prompt_or_state, after)

    def astream(self, prompt_or_state: str | State, /, *, after: int | None = None) -> AsyncEventStream:
        """The async twin of `stream` (the run is `arun`, in a Task): an async iterator and async context manager.
        Cancelling the task that reads it cancels the run."""
        return AsyncEventStream(self, prompt_or_state, after)

    def think(self, state: State, tools: Iterable[Any] | None = None) -> None:
        """Send the State's messages to the model once and record the reply; its tool calls become pending.

        `tools` chooses which of this Agent's tools the model sees (`None`: all of them).
        """
        if blocks_event_loop():
            raise _sync_refusal("think")
        drive(think_steps(self, _checked_state(state, "think"), tools))

    async def athink(self, state: State, tools: Iterable[Any] | None = None) -> None:
        """The async twin of `think`."""
        await adrive(think_steps(self, _checked_state(state, "athink"), tools))

    def use_tools(self, state: State) -> None:
        """Run every pending call of `state` and record one result per call: input errors first, then the
        permission checks, then the parallel calls on worker threads, then the serial ones."""
        if blocks_event_loop():
            raise _sync_refusal("use_tools")
        drive(use_tools_steps(self, _checked_state(state, "use_tools"), "use_tools"))

    async def ause_tools(self, state: State) -> None:
        """The async twin of `use_tools`: `async def` tools run as tasks on the event loop."""
        await adrive(use_tools_steps(self, _checked_state(state, "ause_tools"), "ause_tools"))

    def compact(self, state: State, instructions: str | None = None) -> None:
        """Ask the model for a summary and replace the messages with the first user message and that summary.

        Raises:
            OutputError: The summary was empty (the messages are unchanged).
            ValueError: Calls are pending, or another compaction of this State is under way.
        """
        if blocks_event_loop():
            raise _sync_refusal("compact")
        drive(compact_steps(self, _compact_checks(state, instructions, "compact"), instructions))

    async def acompact(self, state: State, instructions: str | None = None) -> None:
        """The async twin of `compact`."""
        await adrive(compact_steps(self, _compact_checks(state, instructions, "acompact"), instructions))

    def ask(self, state: State, prompt: str, returns: object = str, *, retries: int = 2) -> Any:
        """Ask the model a side question about the State's context and return the answer as `returns`.

        The context does not change; one `ask` entry records the question, the answer and the usage.

        Raises:
            OutputError: No answer fitted `returns` after `retries + 1` attempts.
        """
        if blocks_event_loop():
            raise _sync_refusal("ask")
        answers = _ask_checks(state, prompt, returns, retries, "ask")
        return drive(ask_steps(self, state, prompt, answers, retries, "ask"))

    async def aask(self, state: State, prompt: str, returns: object = str, *, retries: int = 2) -> Any:
        """The async twin of `ask`."""
        answers = _ask_checks(state, prompt, returns, retries, "aask")
        return await adrive(ask_steps(self, state, prompt, answers, retries, "aask"))

    # --- ask_human ------------------------------------------------------------------------------------------

    def _human_for(self, state: State, method: str) -> tuple[Human | None, bool]:
        context = active_context(self, _checked_state(state, method))
        if context is not None:
            return context.human, context.human_inherited
        return self.human, False

    def ask_human(self, state: State, prompt: str, returns: object = str) -> Any:
        """Ask the applicable Human and record the exchange; `returns` is `str`, `bool` or `Literal[...]`.

        Raises:
            NoHumanError: Nobody can answer.
        """
        if blocks_event_loop():
            raise _sync_refusal("ask_human")
        human, inherited = self._human_for(state, "ask_human")
        return Question(state, human, prompt, returns, method="ask_human", inherited=inherited).ask()

    async def aask_human(self, state: State, prompt: str, returns: object = str) -> Any:
        """The async twin of `ask_human`: awaits the Human's `aask` (or runs its `ask` on a worker thread)."""
        human, inherited = self._human_for(state, "aask_human")
        return await Question(state, human, prompt, returns, method="aask_human", inherited=inherited).aask()


def _subagent_tool(helper: Agent) -> SubagentTool:
    """The subagent tool of an Agent passed in `tools=` (checked: it needs a valid tool name and a description)."""
    loop = helper.loop
    return checked_subagent_tool(helper, None if loop is default_loop else is_async_callable(loop))
