"""What a model request carried besides its messages: the system prompt and the tool specs, each kept once.

A `model_request` entry holds a `RequestInput`. The system prompt and the set of tool specs are named by their
SHA-256; the text of each is written only by the first request of the State that sent it, and later requests name
it by its digest alone. So a long run keeps each distinct prompt and each distinct set of tools once, and the input
of any request is found by looking the digests up in the history before it (`input_texts`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from alpineagents._frozen import FrozenDict, freeze
from alpineagents._values.construct import value

__all__ = ["RequestInput", "digest", "input_texts", "reference", "specs_digest"]


def digest(text: str) -> str:
    """The hex SHA-256 of `text` encoded as UTF-8 (as `AgentInfo.system_sha256` names a system prompt)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@value(kw_only=True)
class RequestInput:
    """The system prompt and tool specs of one request, by digest, with their text the first time a State sent them.

    - `system_sha256`: hex SHA-256 of the system prompt as the Agent has it, or `None` without one.
    - `system`: the prompt's text (any credential the library knows of replaced by `[REDACTED]`), or `None` when an
      earlier request of this State holds it (or there is no prompt).
    - `tools_sha256`: hex SHA-256 of the tool specs as compact JSON with sorted keys, or `None` without tools.
    - `tools`: the specs, each `{"name", "description", "input_schema"}` (deep-frozen), or `None` when an earlier
      request holds them (or there are none).
    """

    system_sha256: str | None = None
    system: str | None = None
    tools_sha256: str | None = None
    tools: tuple[FrozenDict[str, Any], ...] | None = None

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            system_sha256: str | None = None,
            system: str | None = None,
            tools_sha256: str | None = None,
            tools: Iterable[Mapping[str, Any]] | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        tools = self.tools
        if tools is not None and not (type(tools) is tuple and all(type(t) is FrozenDict for t in tools)):
            object.__setattr__(self, "tools", tuple(freeze(dict(spec)) for spec in tools))

    def texts(self) -> dict[str, Any]:
        """The texts this request holds, by digest (none when earlier requests hold them)."""
        found: dict[str, Any] = {}
        if self.system is not None and self.system_sha256 is not None:
            found[self.system_sha256] = self.system
        if self.tools is not None and self.tools_sha256 is not None:
            found[self.tools_sha256] = self.tools
        return found


def input_texts(inputs: Iterable[RequestInput | None]) -> dict[str, Any]:
    """Every system prompt text and tool spec set that `inputs` hold, by digest."""
    found: dict[str, Any] = {}
    for sent in inputs:
        if sent is not None and (sent.system is not None or sent.tools is not None):
            found.update(sent.texts())
    return found


def specs_digest(specs: Iterable[Mapping[str, Any]]) -> str:
    """The digest of a list of plain tool specs: SHA-256 of their compact JSON with sorted keys."""
    return digest(json.dumps(list(specs), sort_keys=True, separators=(",", ":"), ensure_ascii=False))


_references: dict[tuple[str | None, str | None], RequestInput] = {}


def reference(system_sha256: str | None, tools_sha256: str | None) -> RequestInput:
    """The input that names both texts by digest alone: one shared value per pair of digests (values never change),
    so the usual request, recorded or loaded, builds nothing."""
    key = (system_sha256, tools_sha256)
    found = _references.get(key)
    if found is None:
        if len(_references) >= 64:  # a bound: a process that sees many prompts keeps only the latest pairs
            _references.clear()
        found = _references[key] = RequestInput(system_sha256=system_sha256, tools_sha256=tools_sha256)
    return found
