"""The stack of a recorded error: where it was raised, as text that may be saved.

An `error` entry keeps, beside the exception's type and message, the traceback Python prints for it (its chained
causes included): file names, line numbers, function names and source lines, never the values of local variables.
Any credential the library knows of (see `_secrets`) is replaced by `[REDACTED]`, and a long stack keeps its last
`TRACEBACK_CHARS` characters (the frames nearest the error) after a line saying how much was cut.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable

from alpineagents._secrets import environment_secrets, redact

__all__ = ["TRACEBACK_CHARS", "stack_text"]

TRACEBACK_CHARS = 16_000
"""The most characters of a stack an error entry keeps."""


def stack_text(error: BaseException, secrets: Iterable[str | None] = ()) -> str | None:
    """The traceback of `error` as Python prints it, redacted and bounded; `None` when it was never raised."""
    if error.__traceback__ is None and error.__cause__ is None and error.__context__ is None:
        return None
    try:
        text = "".join(traceback.format_exception(error))
    except Exception:  # noqa: BLE001 - an exception whose str() raises: its stack is not worth losing the error
        return None
    text = redact(text, [*secrets, *environment_secrets().values()])
    if len(text) > TRACEBACK_CHARS:
        cut = len(text) - TRACEBACK_CHARS
        text = f"… ({cut} characters of the outer frames cut)\n" + text[cut:]
    return text
