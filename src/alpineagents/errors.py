"""Errors and warnings of alpineagents, and the layout of every misuse message.

A wrong use of the library raises a plain ``TypeError`` or ``ValueError`` whose text is built by
:func:`fix_message`. The classes here are for failures outside the code: the provider, the model's output, a
missing human, an MCP server. ``ToolError`` and ``ToolInputError`` are raised by tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alpineagents.types import Reply

__all__ = [
    "AlpineAgentsError",
    "ProviderError",
    "RateLimitError",
    "ContextTooLongError",
    "AuthError",
    "OutputError",
    "CutOffError",
    "NoHumanError",
    "ToolError",
    "ToolInputError",
    "ResumeWarning",
    "PermissionWarning",
    "fix_message",
]


def fix_message(problem: str, fix: str, example: str | None = None) -> str:
    """Build a misuse message: ``problem``, then ``Fix: fix``, then an indented ``Example:`` block if given.

    Newlines at the start and end of ``example`` are stripped; every remaining line is indented by four spaces.
    """
    text = f"{problem}\nFix: {fix}"
    if example:
        lines = example.strip("\n").split("\n")
        text += "\nExample:\n" + "\n".join("    " + line for line in lines)
    return text


class AlpineAgentsError(Exception):
    """Base of what the library raises about the world outside the code."""


class ProviderError(AlpineAgentsError):
    """The model API failed after the SDK's own retries. The SDK exception is in ``__cause__``.

    Attributes:
        status_code: The HTTP status the provider answered with (``429``, ``500``, ...), or ``None`` when there
            was no answer (a dropped connection, a timeout, a request that could not be built).
    """

    status_code: int | None = None

    def __init__(self, *args: object, status_code: int | None = None) -> None:
        super().__init__(*args)
        self.status_code = status_code


class RateLimitError(ProviderError):
    """The provider's rate limit (HTTP 429) was hit after retries."""


class ContextTooLongError(ProviderError):
    """The request is larger than the model's context window."""


class AuthError(ProviderError):
    """No API key, a rejected key, or missing permission."""


class OutputError(AlpineAgentsError):
    """The model gave no well-formed answer (``ask(returns=...)``) or an empty summary (``compact``)."""


class CutOffError(AlpineAgentsError):
    """``think`` recorded a reply that an output limit cut off before it held any text or tool call.

    Attributes:
        reply: The cut-off ``Reply`` (already recorded in the State).
    """

    reply: Reply

    def __init__(self, message: str, reply: Reply) -> None:
        super().__init__(message)
        self.reply = reply


class NoHumanError(AlpineAgentsError):
    """There is nobody to ask: the Agent (or the run above a subagent) has ``human=None``."""


class MCPConnectionError(AlpineAgentsError):
    """An MCP server could not connect, the mcp package is missing, or the connection is lost or not open."""


_TOOL_ERROR_EXAMPLE = 'raise ToolError(f"HTTP {status}: {url}")'


class ToolError(Exception):
    """Raised by a tool for a failure the model should see: the message becomes an error result.

    Raises:
        TypeError: The message is not a string.
        ValueError: The message is empty or whitespace only.
    """

    def __init__(self, message: str) -> None:
        if not isinstance(message, str):
            raise TypeError(
                fix_message(
                    f"ToolError takes a string, the message the model is told (got: {message!r})",
                    "Pass the message as a string",
                    _TOOL_ERROR_EXAMPLE,
                )
            )
        if not message.strip():
            raise ValueError(
                fix_message(
                    "ToolError got an empty message. Providers reject empty tool results",
                    "Say what went wrong, so the model can do something about it",
                    _TOOL_ERROR_EXAMPLE,
                )
            )
        super().__init__(message)


class ToolInputError(Exception):
    """Raised by a tool (or argument validation) for wrong arguments: the result is ``(input error: ...)``."""


class ResumeWarning(UserWarning):
    """A loaded State is resumed by an Agent that differs from the one that last ran it.

    Attributes:
        changes: For each differing ``AgentInfo`` key, the pair ``(saved value, current value)``.
    """

    changes: dict[str, tuple[Any, Any]]

    def __init__(self, message: str, changes: dict[str, tuple[Any, Any]]) -> None:
        super().__init__(message)
        self.changes = changes

    def __reduce__(self) -> tuple[Any, ...]:
        state = {k: v for k, v in self.__dict__.items() if k != "changes"}
        return (type(self), (str(self), self.changes), state or None)


class PermissionWarning(UserWarning):
    """A tool call that no permission allowed or denied was refused."""
