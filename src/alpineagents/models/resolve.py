"""`resolve_model`: turn a model string (or a Model) into a Model."""

from __future__ import annotations

import inspect
from typing import Any

from alpineagents.errors import fix_message
from alpineagents.models.anthropic import Anthropic
from alpineagents.models.base import Model
from alpineagents.models.bedrock import Bedrock
from alpineagents.models.gemini import Gemini
from alpineagents.models.openai_compatible import OpenAICompatible
from alpineagents.models.openai_responses import OpenAIResponses

__all__ = ["resolve_model", "OLLAMA_BASE_URL"]

OLLAMA_BASE_URL = "http://localhost:11434/v1"
"""Where `"ollama/..."` model strings point by default."""


_Adapter = type[Anthropic] | type[OpenAICompatible] | type[OpenAIResponses] | type[Gemini] | type[Bedrock]


def _accepted(adapter: _Adapter) -> list[str]:
    parameters = inspect.signature(adapter.__init__).parameters.values()
    return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


def _build(adapter: _Adapter, model: str, name: str, options: dict[str, Any]) -> Model:
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


def resolve_model(model: Any, **options: Any) -> Model:
    """Turn `model` into a Model: a Model instance is returned as is; a string picks an adapter.

    `"anthropic/NAME"` and `"claude-..."` give `Anthropic`; `"openai/NAME"` and `"gpt-..."` give
    `OpenAICompatible` (Chat Completions); `"openai-responses/NAME"` gives `OpenAIResponses` (the Responses API,
    at `base_url=` when given); `"google/NAME"` and `"gemini-..."` give `Gemini`; `"bedrock/MODEL-ID"` gives
    `Bedrock`; `"ollama/NAME"` gives `OpenAICompatible` at `OLLAMA_BASE_URL`; any string with a
    `base_url=` option gives `OpenAICompatible` with the whole string as the name. Keyword `options` go to the
    adapter. Needs no network and no credentials.
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
        if provider == "ollama":
            return _build(OpenAICompatible, model, rest, {"base_url": OLLAMA_BASE_URL, **options})
        if provider == "openai-responses":  # the Responses API, also at a base_url that speaks it
            return _build(OpenAIResponses, model, rest, options)
        if has_url:
            return _build(OpenAICompatible, model, model, options)
        if provider == "google":
            return _build(Gemini, model, rest, options)
        if provider == "bedrock":
            return _build(Bedrock, model, rest, options)
        if provider == "anthropic":
            return _build(Anthropic, model, rest, options)
        if provider == "openai":
            return _build(OpenAICompatible, model, rest, options)
        raise ValueError(
            fix_message(
                f"Unknown provider {provider!r}",
                "Use one of the known providers anthropic, openai, openai-responses, google, bedrock, ollama, or for another server speaking the "
                "OpenAI API use OpenAICompatible(model, base_url='...')",
                f"OpenAICompatible({rest!r}, base_url='https://my-server/v1')",
            )
        )
    if has_url or model.startswith("gpt-"):
        return _build(OpenAICompatible, model, model, options)
    if model.startswith("claude-"):
        return _build(Anthropic, model, model, options)
    if model.startswith("gemini-"):
        return _build(Gemini, model, model, options)
    raise ValueError(
        fix_message(
            f"The provider is ambiguous from the model name {model!r} alone",
            "Add the provider as a prefix",
            f"anthropic/{model}\nopenai/{model}\nollama/{model}",
        )
    )
