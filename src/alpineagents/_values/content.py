"""Content blocks, ``Message`` and the display helpers (a private part of ``alpineagents.types``).

Import these names from ``alpineagents.types``: it re-exports them, and they present themselves as its own.
"""

from __future__ import annotations

import base64 as _b64
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from alpineagents._frozen import FrozenDict, freeze
from alpineagents._values.construct import freeze_fields, value
from alpineagents._values.cut_off import is_cut_off
from alpineagents.errors import fix_message

# ---------------------------------------------------------------------------------------------------------------
# Constants

NOTICE_PREFIX = "[notice] "
"""A notice is a user message whose first text starts with this (``Message.notice``)."""

INVALID_ARGS_KEY = "__invalid_json__"
"""The only key of ``ToolCall.args`` when the model's argument JSON could not be read; its value is the raw text."""

TRUNCATED_ARGS_MESSAGE = (
    "The response hit the output token limit (max_tokens), so these arguments are incomplete. "
    "Split the work into smaller calls and try again."
)
"""The ``INVALID_ARGS_KEY`` value used when an output limit cut the arguments off."""

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The accepted image media types."""

_set = object.__setattr__


def format_size(n: int) -> str:
    """A byte count for display: ``108B``, ``2.0KB``, ``3.0MB``."""
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}KB"
    return f"{n / (1024 * 1024):.1f}MB"


# ---------------------------------------------------------------------------------------------------------------
# Content blocks


@value
class TextBlock:
    """A piece of text."""

    text: str


def _sniff(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True)
class Image:
    """An image the model sees: a tool result, or part of a user message.

    ``data`` is the file's bytes (a ``bytearray`` or ``memoryview`` is copied to ``bytes``). PNG, JPEG, GIF and
    WebP are supported; the type is read from the bytes unless ``media_type`` is given.

    Example:
        ``Message.user("What is wrong in this chart?", Image.from_path("chart.png"))``

    Raises:
        TypeError: ``data`` is not bytes-like.
        ValueError: The data is not a PNG, JPEG, GIF or WebP image, or ``media_type`` is not one of ``IMAGE_TYPES``.
    """

    data: bytes
    """The image file's bytes (always ``bytes``)."""
    media_type: str | None = None
    """``"image/png"``, ``"image/jpeg"``, ``"image/gif"`` or ``"image/webp"``. Read from ``data`` when not given."""

    if TYPE_CHECKING:  # the generated __init__ also takes the forms that are normalized

        def __init__(self, data: bytes | bytearray | memoryview, media_type: str | None = None) -> None: ...

    def __post_init__(self) -> None:
        data: Any = self.data
        if type(data) is not bytes:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(
                    fix_message(
                        f"Image needs the image file's bytes (got: {type(data).__name__})",
                        "Pass bytes, or use Image.from_path(path) or Image.from_base64(text, media_type)",
                        'Image(open("chart.png", "rb").read())',
                    )
                )
            data = bytes(data)
            _set(self, "data", data)
        media_type = self.media_type
        if media_type is None:
            media_type = _sniff(data)
            if media_type is None:
                raise ValueError(
                    fix_message(
                        f"Image data is not a PNG, JPEG, GIF or WebP image (it starts with {data[:8]!r})",
                        "Pass the bytes of one of those formats, or convert the image first",
                    )
                )
            _set(self, "media_type", media_type)
        elif media_type not in IMAGE_TYPES:
            raise ValueError(
                fix_message(
                    f"Image media_type {media_type!r} is not supported",
                    "Use one of image/png, image/jpeg, image/gif, image/webp, or leave media_type out to read it "
                    "from the data",
                )
            )

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Image:
        """Read a whole image file; the type is read from its bytes, never from the file name."""
        with open(path, "rb") as f:
            return cls(f.read())

    @classmethod
    def from_base64(cls, data: str, media_type: str | None = None) -> Image:
        """Decode standard base64 (strictly: any other character raises ``binascii.Error``, a ``ValueError``)."""
        return cls(_b64.b64decode(data, validate=True), media_type)

    @cached_property
    def base64(self) -> str:
        """``data`` as standard base64 text (computed once)."""
        return _b64.b64encode(self.data).decode("ascii")

    def __repr__(self) -> str:
        return f"Image({self.media_type}, {format_size(len(self.data))})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Image, (self.data, self.media_type))


def _args_error(args: Any) -> TypeError:
    return TypeError(
        fix_message(
            f"ToolCall args must be a dict (got: {type(args).__name__})",
            "Pass the arguments as a dict",
            'ToolCall("read_file", {"path": "main.py"}, "call_1")',
        )
    )


@value
class ToolCall:
    """One tool call the model requested. Also a block of an assistant message.

    ``args`` is stored read-only (a ``FrozenDict``, frozen at every level); copy it (``dict(call.args)``) to
    change it. Calls are told apart by ``id``: ``hash(call) == hash(call.id)``.

    Raises:
        TypeError: ``args`` is not a mapping.
    """

    name: str
    args: Mapping[str, Any]
    id: str

    def __post_init__(self) -> None:
        args = self.args
        cls = type(args)
        if cls is not FrozenDict:
            if cls is not dict and not isinstance(args, Mapping):
                raise _args_error(args)
            _set(self, "args", freeze(args))

    def __hash__(self) -> int:
        return hash(self.id)


@value
class ToolResultBlock:
    """The result of one tool call. Goes in user messages only.

    ``content`` is exactly what the model gets: a string, or a tuple of ``TextBlock`` and ``Image``.
    """

    call_id: str
    content: ToolResultContent
    name: str = ""
    is_error: bool = False

    __normal_types__ = {"content": (str, tuple)}  # its maker skips __post_init__ for these (see maker)

    def __post_init__(self) -> None:
        content: Any = self.content
        if not isinstance(content, (str, tuple)):
            _set(self, "content", tuple(content))


@value
class RawBlock:
    """A provider-specific block (thinking, server tools, ...), sent back as is to the same provider only.

    ``data`` is read-only (a ``FrozenDict``, frozen at every level). Always unhashable.
    """

    provider: str
    data: Mapping[str, Any]

    def __post_init__(self) -> None:
        freeze_fields(self, "data")


ToolResultContent = str | tuple[TextBlock | Image, ...]
"""A tool result as sent to the model: a string, or a tuple of ``TextBlock`` and ``Image``."""

Block = TextBlock | Image | ToolCall | ToolResultBlock | RawBlock
"""One part of a ``Message``."""


# ---------------------------------------------------------------------------------------------------------------
# Message


def _type_error(method: str, what: str, value: Any, fix: str, example: str) -> TypeError:
    return TypeError(fix_message(f"Message.{method} takes {what} (got: {type(value).__name__})", fix, example))


def _check_text(method: str, text: object, fix: str, example: str) -> None:
    """Raise the misuse ``TypeError`` of ``Message.{method}`` unless ``text`` is a string."""
    if not isinstance(text, str):
        raise _type_error(method, "the text as a string", text, fix, example)


_USER_EXAMPLE = 'Message.user("What is in this picture?", Image.from_path("photo.png"))'


@value
class Message:
    """One message in the context (``state.messages``). The system prompt is not a message.

    Raises:
        TypeError: ``content`` is a string (use ``Message.user(text)``).
    """

    role: Literal["user", "assistant"]
    """``"user"`` or ``"assistant"``. Notices and tool results are user messages."""
    content: tuple[Block, ...]
    """The blocks in order. A list or other iterable becomes a tuple."""
    tokens: int | None = None
    """The provider-reported token count of the whole context up to and including this message, or ``None``."""
    stop_reason: str | None = None
    """Why the model stopped writing this message, as the provider gave it, or ``None``."""

    if TYPE_CHECKING:  # the generated __init__ also takes the forms that are normalized

        def __init__(
            self,
            role: Literal["user", "assistant"],
            content: Iterable[Block],
            tokens: int | None = None,
            stop_reason: str | None = None,
        ) -> None: ...

    __normal_types__ = {"content": (tuple,)}  # its maker skips __post_init__ for a tuple (see maker)

    def __post_init__(self) -> None:
        content: Any = self.content
        if type(content) is not tuple:
            if isinstance(content, str):
                raise TypeError(
                    fix_message(
                        f"Message content is a tuple of blocks, not a string (got: {content!r})",
                        "Use Message.user(text) or Message.assistant(text) for plain text, or pass a tuple of blocks",
                        'Message.user("hi")',
                    )
                )
            _set(self, "content", tuple(content))

    @classmethod
    def user(cls, text: str, *images: Image) -> Message:
        """A user message: the text, then the images. With images, an empty text is left out.

        Raises:
            TypeError: ``text`` is not a string, or an image is not an ``Image``.
        """
        _check_text("user", text, "Pass the text first, then any Image objects", _USER_EXAMPLE)
        if not images:
            return cls("user", (TextBlock(text),))
        for image in images:
            if not isinstance(image, Image):
                raise _type_error(
                    "user",
                    "Image objects after the text",
                    image,
                    "Wrap the file in an Image first: Image.from_path(path) or Image(bytes)",
                    _USER_EXAMPLE,
                )
        if text == "":
            return cls("user", images)
        return cls("user", (TextBlock(text), *images))

    @classmethod
    def notice(cls, text: str) -> Message:
        """A notice: a user message from code (a loop or a tool), its text starting with ``NOTICE_PREFIX``.

        Raises:
            TypeError: ``text`` is not a string.
        """
        _check_text("notice", text, "Pass the notice text", 'Message.notice("The tests failed")')
        if not text.startswith(NOTICE_PREFIX):
            text = NOTICE_PREFIX + text
        return cls("user", (TextBlock(text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant message with one text block, for importing a conversation.

        Raises:
            TypeError: ``text`` is not a string.
        """
        _check_text("assistant", text, "Pass the text of the reply", 'Message.assistant("The bug is in line 12.")')
        return cls("assistant", (TextBlock(text),))

    @property
    def is_notice(self) -> bool:
        """True for a user message whose first text block starts with ``NOTICE_PREFIX``."""
        if self.role != "user":
            return False
        for block in self.content:
            if isinstance(block, TextBlock):
                return block.text.startswith(NOTICE_PREFIX)
        return False

    @property
    def text(self) -> str:
        """The texts of all text blocks, joined with no separator (``""`` without any)."""
        return "".join([b.text for b in self.content if isinstance(b, TextBlock)])

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool-call blocks, in order."""
        return tuple([b for b in self.content if isinstance(b, ToolCall)])

    @property
    def cut_off(self) -> bool:
        """True if an output limit stopped the model before it finished (``stop_reason`` in
        ``CUT_OFF_STOP_REASONS``, or a cut-off word an adapter declared)."""
        return is_cut_off(self.stop_reason)


# ---------------------------------------------------------------------------------------------------------------
# Display helpers


def format_call(call: ToolCall) -> str:
    """A tool call as one line of code, such as ``read_file(path="main.py")``.

    Each argument is ``key=value`` with the value as JSON (its ``repr`` when JSON cannot show it).

    Example:
        ``format_call(ToolCall("read_file", {"path": "main.py"}, "call_1"))`` gives ``'read_file(path="main.py")'``
    """
    parts: list[str] = []
    for key, argument in call.args.items():
        try:
            shown = json.dumps(argument, ensure_ascii=False)
        except (TypeError, ValueError):
            shown = repr(argument)
        parts.append(f"{key}={shown}")
    return f"{call.name}({', '.join(parts)})"


def result_text(content: ToolResultContent) -> str:
    """A tool result as one string: the string itself, or the text blocks joined by newlines with each image as
    ``(image/png, 34.2KB)``."""
    if isinstance(content, str):
        return content
    lines: list[str] = []
    for block in content:
        if isinstance(block, TextBlock):
            lines.append(block.text)
        elif isinstance(block, Image):
            lines.append(f"({block.media_type}, {format_size(len(block.data))})")
        else:
            lines.append(str(block))
    return "\n".join(lines)
