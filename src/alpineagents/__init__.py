"""alpineagents: LLM agents whose loop is a plain Python function.

An `Agent` holds settings (model, system prompt, tools, loop); a `State` holds one conversation as an append-only
history from which everything else is computed; a loop is a function `(agent, state)` that calls `think` and
`use_tools` until a stop condition. Start with `Agent(...).run("prompt")`.
"""

from typing import TYPE_CHECKING

from alpineagents.agent import Agent
from alpineagents.blocks import CompactIfFull, acompact_if_full, compact_if_full
from alpineagents.compare import diff
from alpineagents.errors import (
    AlpineAgentsError,
    AuthError,
    ContextTooLongError,
    CutOffError,
    MCPConnectionError,
    NoHumanError,
    OutputError,
    PermissionWarning,
    ProviderError,
    RateLimitError,
    ResumeWarning,
    ToolError,
    ToolInputError,
)
from alpineagents.human import Human
from alpineagents.loop import Loop, adefault_loop, default_loop, loop, waiting_for_user
from alpineagents.mcp_tools import MCP, MCPTool
from alpineagents.models import Anthropic, Model, OpenAICompatible
from alpineagents.reporter import Reporter
from alpineagents.state import State, StateSnapshot
from alpineagents.store import FileStore, SQLiteStore, StateInfo, Store
from alpineagents.terminal import Terminal
from alpineagents.tool import FunctionTool, Hints, Tool, tool
from alpineagents.types import (
    CUT_OFF_STOP_REASONS,
    AgentInfo,
    ContextChange,
    ContextChangeEntry,
    ErrorEntry,
    ExchangeEntry,
    ExtraDataEntry,
    HistoryEntry,
    Image,
    Message,
    MessageEntry,
    ModelEvent,
    ModelEventEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    Price,
    Reply,
    Request,
    RunStartEntry,
    StopEntry,
    StoppedByFinish,
    StoppedByLimit,
    StoppedByPermission,
    StoppedByUntil,
    ToolCall,
    ToolOutcome,
    ToolOutcomeKind,
    ToolResultEntry,
    ToolSpec,
    Usage,
)

__all__ = [
    # agent and loops
    "Agent",
    "loop",
    "Loop",
    "default_loop",
    "adefault_loop",
    "waiting_for_user",
    "CompactIfFull",
    "compact_if_full",
    "acompact_if_full",
    # state
    "State",
    "StateSnapshot",
    "diff",
    # tools
    "tool",
    "Tool",
    "FunctionTool",
    "Hints",
    # models
    "Model",
    "Anthropic",
    "OpenAICompatible",
    # MCP servers
    "MCP",
    "MCPTool",
    # stores
    "Store",
    "FileStore",
    "SQLiteStore",
    "PostgresStore",
    "StateInfo",
    # people and progress
    "Human",
    "Reporter",
    "Terminal",
    # types
    "Price",
    "Usage",
    "ToolCall",
    "Reply",
    "Request",
    "Message",
    "ToolSpec",
    "HistoryEntry",
    "MessageEntry",
    "ModelRequestEntry",
    "ModelReplyEntry",
    "ModelEventEntry",
    "ToolResultEntry",
    "ExchangeEntry",
    "ContextChangeEntry",
    "RunStartEntry",
    "StopEntry",
    "ExtraDataEntry",
    "ErrorEntry",
    "ContextChange",
    "ModelEvent",
    "ToolOutcome",
    "ToolOutcomeKind",
    "StoppedByUntil",
    "StoppedByLimit",
    "StoppedByFinish",
    "StoppedByPermission",
    "AgentInfo",
    "Image",
    "CUT_OFF_STOP_REASONS",
    # errors and warnings
    "AlpineAgentsError",
    "ProviderError",
    "RateLimitError",
    "ContextTooLongError",
    "AuthError",
    "OutputError",
    "CutOffError",
    "NoHumanError",
    "MCPConnectionError",
    "ResumeWarning",
    "PermissionWarning",
    "ToolError",
    "ToolInputError",
]


if TYPE_CHECKING:
    from alpineagents.postgres import PostgresStore


def __getattr__(name: str) -> object:
    """A built-in store not imported above (`PostgresStore`, which needs an extra) is imported on first use, from
    the one list of the built-in stores, so that importing the package never loads its module."""
    from alpineagents._stores.registry import builtin_store

    found = builtin_store(name)
    if found is None:
        raise AttributeError(f"module 'alpineagents' has no attribute {name!r}")
    return found.load()
