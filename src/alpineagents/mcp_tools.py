"""MCP servers as tools: `MCP` (a server placed in `tools=`), `MCPToolRef` (one picked tool), `MCPTool` (a tool of
a connected server).

Importing this module does not import the MCP SDK; it is imported the first time a server connects.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import shlex
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from alpineagents._mcp.connection import Connection, describe, not_connected, scrubbed, submit, wait_async
from alpineagents.errors import MCPConnectionError, ToolError, ToolInputError, fix_message
from alpineagents.tool import Tool
from alpineagents.types import Image

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = ["MCP", "MCPTool", "MCPToolRef", "SEPARATOR"]

SEPARATOR = "__"
"""Separates the server name from the tool name in the names the model sees."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def model_name(server_name: str, remote_name: str) -> str:
    """The name the model sees for remote tool `remote_name` of server `server_name`: `{server}__{tool}`, with
    every character of the tool name outside `[A-Za-z0-9_-]` replaced by `_`."""
    return server_name + SEPARATOR + _UNSAFE.sub("_", remote_name)


class MCP:
    """An MCP server, placed in `Agent(tools=[...])` like a tool. Creating it connects nothing.

    Args:
        command: A command line that starts a stdio server (split with `shlex.split`).
        name: Required; the model sees this server's tools as `{name}__{tool}`.
        url: The URL of a Streamable HTTP server.
        server: Anything the MCP SDK client accepts as a target (e.g. an in-process server object).
        env: Extra environment variables for the started command.
        headers: HTTP headers sent to `url`.
        cwd: Working directory of the started command.
        timeout: Seconds allowed for connecting, and the read timeout of each call; `None` = no limit.

    Raises:
        TypeError: Not exactly one of command, url, server; `env=` without a command; `headers=` without a url.
        ValueError: No name, a name that is not allowed, or an empty command.
    """

    def __init__(
        self,
        command: str | None = None,
        *,
        name: str | None = None,
        url: str | None = None,
        server: Any = None,
        env: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
    ) -> None:
        given = [label for label, value in (("command", command), ("url", url), ("server", server)) if value]
        if len(given) != 1:
            problem = "MCP() takes exactly one server: a command, url= or server="
            if len(given) > 1:
                problem += f" (got: {', '.join(given)})"
            raise TypeError(
                fix_message(
                    problem,
                    "Pass one of them",
                    'MCP("npx -y @modelcontextprotocol/server-github", name="github")',
                )
            )
        if name is None:
            raise ValueError(
                fix_message(
                    "MCP() needs name=: the model sees this server's tools as {name}__{tool}",
                    "Give the server a short name",
                    'MCP("npx -y @modelcontextprotocol/server-github", name="github")',
                )
            )
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(
                fix_message(
                    f"MCP name {name!r} is not allowed",
                    "Use letters, digits, '-' and single '_' (no '__': it separates the server from the tool)",
                    'MCP("npx -y @modelcontextprotocol/server-github", name="github")',
                )
            )
        if env is not None and not command:
            raise TypeError(fix_message("env= is for a server started by a command", "Remove env="))
        if headers is not None and not url:
            raise TypeError(fix_message("headers= is for a server reached by url=", "Remove headers="))
        if command and not shlex.split(command):
            raise ValueError(fix_message("MCP() got an empty command", "Pass the command that starts the server"))
        self.name = name
        self.command = command
        self.url = url
        self.server = server
        self.env = None if env is None else dict(env)
        self.headers = None if headers is None else dict(headers)
        self.cwd = cwd
        self.timeout = timeout
        self._conn: Connection | None = None
        self._holders = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        target = self.command or self.url or self.server
        return f"MCP({target!r}, name={self.name!r})"

    def __getattr__(self, tool_name: str) -> MCPToolRef:
        if tool_name.startswith("_"):
            raise AttributeError(tool_name)
        return MCPToolRef(self, tool_name)

    def __getitem__(self, tool_name: str) -> MCPToolRef:
        return MCPToolRef(self, tool_name)

    # --- server-level holding: the Agents holding this server share one connection ----------------------------

    def _hold(self) -> Connection:
        """Take one hold on this server; the first opens a connection, later ones share it."""
        with self._lock:
            self._holders += 1
            conn = self._conn
            if conn is None:
                conn = Connection(self)
                self._conn = conn
            return conn

    def _unhold(self) -> None:
        """Give back one hold; the last one closes the connection."""
        with self._lock:
            self._holders -= 1
            if self._holders > 0:
                return
            self._holders = 0
            conn = self._conn
            self._conn = None
        if conn is not None:
            conn.close()


class MCPToolRef:
    """One tool of a server, picked by name (`server.tool` or `server["tool-name"]`); looked up at connect."""

    __slots__ = ("server", "tool_name")

    def __init__(self, server: MCP, tool_name: str) -> None:
        self.server = server
        self.tool_name = tool_name

    @property
    def name(self) -> str:
        """The name the model will see: `{server.name}__{sanitized tool_name}`."""
        return model_name(self.server.name, self.tool_name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MCPToolRef):
            return NotImplemented
        return self.server is other.server and self.tool_name == other.tool_name

    def __hash__(self) -> int:
        return hash((id(self.server), self.tool_name))

    def __repr__(self) -> str:
        return f"{self.server.name}.{self.tool_name}"


def _hint(annotations: Any, attr: str) -> bool | None:
    value = getattr(annotations, attr, None) if annotations is not None else None
    return value if isinstance(value, bool) else None


class MCPTool(Tool):
    """A `Tool` for one tool of a connected MCP server, as found in `agent.tool_map["{server}__{tool}"]`."""

    def __init__(self, server: MCP, remote: Any) -> None:
        schema = dict(getattr(remote, "input_schema", None) or {})
        schema.setdefault("type", "object")
        annotations = getattr(remote, "annotations", None)
        read_only = _hint(annotations, "read_only_hint") or False
        destructive = _hint(annotations, "destructive_hint")
        idempotent = _hint(annotations, "idempotent_hint")
        open_world = _hint(annotations, "open_world_hint")
        self.server = server
        self.remote_name: str = remote.name
        super().__init__(
            name=model_name(server.name, remote.name),
            description=getattr(remote, "description", None) or "",
            input_schema=schema,
            parallel=True,
            read_only=read_only,
            destructive=False if read_only else (True if destructive is None else destructive),
            idempotent=True if read_only else (False if idempotent is None else idempotent),
            open_world=True if open_world is None else open_world,
        )

    async def run(self, args: dict[str, Any], state: State) -> str | list[str | Image]:
        """Call the remote tool on the background loop and convert its result.

        Only the required argument names are checked here; the server checks the rest.

        Raises:
            ToolInputError: A required argument is missing.
            ToolError: The server answered with an error (a protocol error or an error result).
            MCPConnectionError: The server is not connected, or the connection broke during the call.
        """
        required = self.input_schema.get("required")
        names = required if isinstance(required, list) else []  # the server describes its own tools: trust no shape
        missing = [name for name in names if isinstance(name, str) and name not in args]
        if missing:
            raise ToolInputError(f"missing required arguments: {', '.join(missing)}")
        conn = self.server._conn
        if conn is None or conn.client is None:
            raise not_connected(self.server, None if conn is None else conn.lost)
        try:
            result = await wait_async(submit(conn.call(self.remote_name, dict(args))))
        except Exception as error:
            if isinstance(error, MCPConnectionError):
                raise
            text = f"(error from MCP server {self.server.name!r}: {describe(error)})"
            raise ToolError(scrubbed(self.server, text)) from error
        return convert_result(self.server.name, result)


def _part(block: Any) -> str | Image:
    kind = getattr(block, "type", None)
    if kind == "text":
        return block.text
    mime = getattr(block, "mime_type", None)
    if kind == "image":
        try:
            return Image(base64.b64decode(block.data, validate=True))
        except (ValueError, TypeError, binascii.Error):
            return f"(image {mime} not shown: this image type is not supported)"
    if kind == "audio":
        return f"(audio {mime} not shown: this audio type is not supported)"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        return f"(resource {resource.uri}: {getattr(resource, 'mime_type', None)})"
    if kind == "resource_link":
        return f"(resource link: {block.uri})"
    return f"({kind} content)"


def convert_result(server_name: str, result: Any) -> str | list[str | Image]:
    """Turn an SDK call result into a tool result.

    With at least one image (and no error): a list where adjacent texts are joined by newlines and empty texts
    dropped. Otherwise one text (an image shown as `(image/png image)`; the structured content as JSON when there is
    no text), `(done)` when empty. An error result raises `ToolError` with that text.
    """
    parts = [_part(block) for block in (getattr(result, "content", None) or ())]
    is_error = bool(getattr(result, "is_error", False))
    if not is_error and any(isinstance(part, Image) for part in parts):
        return _with_images(parts)
    texts = [part if isinstance(part, str) else f"({part.media_type} image)" for part in parts]
    text = "\n".join(t for t in texts if t)
    structured = getattr(result, "structured_content", None)
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    if is_error:
        raise ToolError(text or f"(MCP server {server_name!r} reported an error without a message)")
    return text or "(done)"


def _with_images(parts: list[str | Image]) -> list[str | Image]:
    """The parts of a result that holds images: adjacent texts joined by newlines, empty texts dropped."""
    out: list[str | Image] = []
    for part in parts:
        if isinstance(part, str):
            if not part:
                continue
            if out and isinstance(out[-1], str):
                out[-1] = out[-1] + "\n" + part
                continue
        out.append(part)
    return out
