"""An `OnStream` that keeps every piece of a streamed reply it gets, for the tests of streaming."""

from __future__ import annotations

import threading

from alpineagents.models.base import OnStream


class Pieces(OnStream):
    """Keeps every piece it gets, in order (`got`), and the threads they came on (`threads`)."""

    def __init__(self) -> None:
        self.got: list[tuple[str, ...]] = []
        self.threads: set[int] = set()

    def __call__(self, chunk: str) -> None:
        self.got.append(("text", chunk))
        self.threads.add(threading.get_ident())

    def thinking(self, chunk: str) -> None:
        self.got.append(("thinking", chunk))
        self.threads.add(threading.get_ident())

    def tool_args(self, call_id: str, name: str, delta: str) -> None:
        self.got.append(("args", call_id, name, delta))
        self.threads.add(threading.get_ident())

    def joined(self, kind: str) -> str:
        """The pieces of one kind (`text`, `thinking` or `args`) joined."""
        return "".join(piece[-1] for piece in self.got if piece[0] == kind)
