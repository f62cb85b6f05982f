"""The JSON form of this library's events (`alpineagents.events`), as the `native` dialect sends them.

An event is an object with `"type"` (its class name: `"TextDelta"`, `"ToolCallEnded"`, ...) and its fields. The
values inside follow the same rule: a value class becomes an object with `"type"` and its fields, a tuple a list, an
enum its value, a time an ISO 8601 text, an exception `"Type: message"`. An image is sent without its bytes (its
`media_type` only): a stream is for showing a run, and the run itself is read with `GET /api/runs/{id}`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from alpineagents.types import Image


def plain(value: Any) -> Any:
    """`value` as plain JSON values."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, BaseException):
        text = str(value)
        return f"{type(value).__name__}: {text}" if text else type(value).__name__
    if isinstance(value, Image):
        return {"type": "Image", "media_type": value.media_type}
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        shown: dict[str, Any] = {"type": type(value).__name__}
        for field in dataclasses.fields(value):
            if field.compare or field.name == "error":
                shown[field.name] = plain(getattr(value, field.name))
        return shown
    return str(value)
