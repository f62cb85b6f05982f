"""The input a `think` records with its `model_request`: the system prompt and tool specs, each text kept once.

A request names its system prompt and its tool specs by digest (`RequestInput`); the first request of a State
that sends a prompt or a set of tools also holds its text, so the viewer can show the exact input of every request
(the messages come from the history itself). Each text is redacted before it is recorded: every credential the
Agent's model knows of and every one the environment holds is replaced by `[REDACTED]`.

What it costs a turn: two digests looked up in a set, about half a microsecond. The digest of a prompt and of a tool
set, and the plain JSON of the specs, are worked out once per distinct text or spec tuple (`_cached`), and the
redacted texts once per process (`_firsts`): redacting reads the whole environment, which cost a 50-turn run of
`benchmarks/turns.py` a microsecond per turn when every new State did it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from alpineagents._frozen import thaw
from alpineagents._secrets import environment_secrets, known_by, redact
from alpineagents._values.details import recorded
from alpineagents._values.request_input import RequestInput, digest, reference, specs_digest

if TYPE_CHECKING:
    from alpineagents._turn.seams import AgentSeam
    from alpineagents.state import State
    from alpineagents.types import ToolSpec

__all__ = ["request_input"]

_CACHE_SIZE = 64
_cache: dict[object, tuple[object, str, Any]] = {}
"""By `id` of a prompt text, or the names of the specs of a tuple (`think(tools=...)` makes new specs each time, and
equal specs give the same digest): the object itself (kept, and compared), its digest and, for specs, their plain
JSON."""


def _cached(thing: str | tuple[ToolSpec, ...]) -> tuple[str, Any]:
    """The digest of a prompt or a specs tuple (and the plain specs), worked out once per object."""
    key: object = id(thing) if isinstance(thing, str) else tuple([spec.name for spec in thing])
    found = _cache.get(key)
    if found is not None and (found[0] is thing or found[0] == thing):
        return found[1], found[2]
    if isinstance(thing, str):
        result: tuple[str, Any] = (digest(thing), None)
    else:
        plain = [
            {"name": spec.name, "description": spec.description, "input_schema": thaw(spec.input_schema)}
            for spec in thing
        ]
        result = (specs_digest(plain), plain)
    if len(_cache) >= _CACHE_SIZE:
        _cache.clear()
    _cache[key] = (thing, *result)
    return result


def request_input(agent: AgentSeam, state: State, specs: tuple[ToolSpec, ...]) -> RequestInput | None:
    """What the next request of `agent` on `state` carries besides its messages, with the texts `state` has not
    recorded yet (redacted); `None` for a request with neither a system prompt nor tools, or when
    `ALPINEAGENTS_RECORD` does not ask for inputs (see `_values.details`)."""
    system = agent._system
    if (system is None and not specs) or not recorded("inputs"):
        return None
    system_sha = None if system is None else _cached(system)[0]
    tools_sha, plain = _cached(specs) if specs else (None, None)
    known = state._sent_digests()
    new_system = system is not None and system_sha not in known
    new_tools = tools_sha is not None and tools_sha not in known
    if not new_system and not new_tools:  # the usual turn: both texts are in the history already
        return reference(system_sha, tools_sha)
    own = tuple(known_by(agent._model))
    key = (system_sha, tools_sha, new_system, new_tools, own)
    found = _firsts.get(key)
    if found is None:  # the first State of this process to send these texts (with this model's credentials)
        secrets = [*own, *environment_secrets().values()]
        found = RequestInput(
            system_sha256=system_sha,
            system=redact(system, secrets) if new_system and system is not None else None,
            tools_sha256=tools_sha,
            tools=_redacted_specs(plain, secrets) if new_tools and plain is not None else None,
        )
        if len(_firsts) >= _CACHE_SIZE:
            _firsts.clear()
        _firsts[key] = found
    return found


_firsts: dict[tuple[object, ...], RequestInput] = {}
"""The input of a State's first request that sends these texts, redacted once per process (values never change;
the environment is read when a process first records a text)."""


def _redacted_specs(plain: list[dict[str, Any]], secrets: list[str | None]) -> list[dict[str, Any]]:
    """The specs with every credential of `secrets` taken out of their descriptions and schemas."""
    text = json.dumps(plain, ensure_ascii=False)
    clean = redact(text, secrets)
    return plain if clean == text else json.loads(clean)
