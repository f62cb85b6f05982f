"""Model adapters: the `Model` role, `Anthropic`, `OpenAICompatible`, `resolve_model`.

`OpenAIResponses` (the OpenAI Responses API adapter), `Gemini` (Google's Gemini API, extra `alpineagents[gemini]`),
`Bedrock` (Amazon Bedrock's Converse API, extra `alpineagents[bedrock]`), `Retry` and `Fallback` (wrapper Models) are
importable from here too, beside the four names of `__all__`. Their SDKs are imported on the first request only.
"""

from alpineagents.models import anthropic as anthropic
from alpineagents.models import base as base
from alpineagents.models import bedrock as bedrock
from alpineagents.models import gemini as gemini
from alpineagents.models import openai_compatible as openai_compatible
from alpineagents.models import openai_responses as openai_responses
from alpineagents.models import resolve as resolve
from alpineagents.models import wrappers as wrappers
from alpineagents.models.anthropic import Anthropic
from alpineagents.models.base import Model
from alpineagents.models.bedrock import Bedrock as Bedrock
from alpineagents.models.gemini import Gemini as Gemini
from alpineagents.models.openai_compatible import OpenAICompatible
from alpineagents.models.openai_responses import OpenAIResponses as OpenAIResponses
from alpineagents.models.resolve import resolve_model
from alpineagents.models.wrappers import Fallback as Fallback
from alpineagents.models.wrappers import Retry as Retry

__all__ = ["Model", "Anthropic", "OpenAICompatible", "resolve_model"]
