"""`resolve_model`: turn a model string (or a Model) into a Model."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Protocol

from alpineagents.errors import fix_message
from alpineagents.models.anthropic import Anthropic
from alpineagents.models.base import Model
from alpineagents.models.bedrock import Bedrock
from alpineagents.models.gemini import Gemini
from alpineagents.models.openai_compatible import OpenAICompatible
from alpineagents.models.openai_responses import OpenAIResponses

__all__ = ["resolve_model", "OLLAMA_BASE_URL", "PROVIDERS", "Provider"]

OLLAMA_BASE_URL = "http://localhost:11434/v1"
"""Where `"ollama/..."` model strings point by default."""


class AdapterClass(Protocol):
    """An adapter class as `resolve_model` builds it: called with the model name and keyword options."""

    __name__: str

    def __call__(self, *args: Any, **options: Any) -> Model: ...


@dataclass(frozen=True)
class Provider:
    """One row of `PROVIDERS`: the model strings `"{prefix}/NAME"` (and bare names starting with `name_prefix`)
    pick `adapter`."""

    prefix: str
    """What comes before the slash, e.g. `"anthropic"`."""
    adapter: AdapterClass
    api: str
    """What the adapter speaks, for the docs (`"Messages API"`)."""
    key: str
    """Where the credentials come from, for the docs (an environment variable, or `"none"`)."""
    name_prefix: str | None = None
    """A bare model name (no slash, no `base_url=`) starting with this picks the row (`"claude-"`)."""
    base_url: str | None = None
    """The `base_url=` given to the adapter unless the caller gives one."""
    keeps_base_url: bool = False
    """Whether a `base_url=` option keeps this adapter. Otherwise a string with `base_url=` goes to the catch-all,
    `OpenAICompatible` with the whole string as the name (routers name models `"anthropic/claude-sonnet-5"`)."""


PROVIDERS: tuple[Provider, ...] = (
    Provider("anthropic", Anthropic, "Messages API", "ANTHROPIC_API_KEY", name_prefix="claude-"),
    Provider("openai", OpenAICompatible, "Chat Completions", "OPENAI_API_KEY", name_prefix="gpt-"),
    Provider("ollama", OpenAICompatible, "Chat Completions", "none", base_url=OLLAMA_BASE_URL, keeps_base_url=True),
    Provider("openai-responses", OpenAIResponses, "Responses API", "OPENAI_API_KEY", keeps_base_url=True),
    Provider("google", Gemini, "Gemini API", "GOOGLE_API_KEY", name_prefix="gemini-"),
    Provider("bedrock", Bedrock, "Converse API", "AWS_ACCESS_KEY_ID"),
)
"""The model-string prefixes and the adapters they pick, in the order error messages list them. A new adapter adds
its row here; the docs' table of model strings is checked against this one."""

_BY_PREFIX = {provider.prefix: provider for provider in PROVIDERS}


def _accepted(adapter: AdapterClass) -> list[str]:
    parameters = inspect.signature(adapter).parameters.values()
    return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


def _build(adapter: AdapterClass, model: str, name: str, options: dict[str, Any]) -> Model:
    accepted = _accepted(adapter)
    unknown = [key for key in options if key not in accepted]
    if unknown:
        raise TypeError(
            fix_message(
                f"The model string {model!r} picked {adapter.__name__}, which does not accept "
                + ", ".join(f"{key}=" for key in unknown),
                f"Pass only options {adapter.__name__} accepts: {', '.join(accepted)}",
                f"resolve_model({model!r}, max_tokens=16_000)",
            )
        )
    return adapter(name, **options)


def _from_row(provider: Provider, model: str, name: str, options: dict[str, Any]) -> Model:
    if provider.base_url is not None:
        options = {"base_url": provider.base_url, **options}
    return _build(provider.adapter, model, name, options)


def resolve_model(model: Any, **options: Any) -> Model:
    """Turn `model` into a Model: a Model instance is returned as is; a string picks an adapter from `PROVIDERS`.

    `"anthropic/NAME"` and `"claude-..."` give `Anthropic`; `"openai/NAME"` and `"gpt-..."` give
    `OpenAICompatible` (Chat Completions); `"ollama/NAME"` gives `OpenAICompatible` at `OLLAMA_BASE_URL`;
    `"openai-responses/NAME"` gives `OpenAIResponses` (the Responses API); `"google/NAME"` and `"gemini-..."` give
    `Gemini`; `"bedrock/NAME"` gives `Bedrock` (Converse, credentials from the AWS chain). A `base_url=` option
    keeps `ollama` and `openai-responses` (they go to that address); with any other string it gives the catch-all,
    `OpenAICompatible` with the whole string as the name. Keyword `options` go to the adapter. Needs no network and no credentials.
    """
    if isinstance(model, Model):
        if options:
            raise TypeError(
                fix_message(
                    f"resolve_model got a Model instance ({type(model).__name__}) together with options "
                    f"({', '.join(options)})",
                    "Options are only for model strings: set them on the Model when you create it",
                    "Anthropic('claude-sonnet-5', max_tokens=16_000)",
                )
            )
        return model
    if not isinstance(model, str):
        raise TypeError(
            fix_message(
                f"model got a value that is neither a Model instance nor a string ({type(model).__name__})",
                "Pass a model string such as 'anthropic/claude-sonnet-5', or a Model instance",
                "Agent(model='anthropic/claude-sonnet-5')",
            )
        )
    if not model:
        raise ValueError(
            fix_message(
                "The model string is empty",
                "Name a model, with its provider as a prefix",
                "resolve_model('anthropic/claude-sonnet-5')",
            )
        )
    if "base_url" in options and options["base_url"] is None:
        del options["base_url"]
    has_url = "base_url" in options
    if "/" in model:
        provider, rest = model.split("/", 1)
        if not rest:
            raise ValueError(
                fix_message(
                    f"The model string {model!r} has no model name",
                    "Put the model name after the provider and the slash",
                    f"resolve_model('{provider}/MODEL-NAME')",
                )
            )
        row = _BY_PREFIX.get(provider)
        if row is not None and (row.keeps_base_url or not has_url):
            return _from_row(row, model, rest, options)
        if has_url:
            return _build(OpenAICompatible, model, model, options)
        raise ValueError(
            fix_message(
                f"Unknown provider {provider!r}",
                f"Use one of the known providers {', '.join(p.prefix for p in PROVIDERS)}, or for another server "
                "speaking the OpenAI API use OpenAICompatible(model, base_url='...')",
                f"OpenAICompatible({rest!r}, base_url='https://my-server/v1')",
            )
        )
    if has_url:
        return _build(OpenAICompatible, model, model, options)
    for row in PROVIDERS:
        if row.name_prefix is not None and model.startswith(row.name_prefix):
            return _from_row(row, model, model, options)
    raise ValueError(
        fix_message(
            f"The provider is ambiguous from the model name {model!r} alone",
            "Add the provider as a prefix",
            "\n".join(f"{p.prefix}/{model}" for p in PROVIDERS),
        )
    )
