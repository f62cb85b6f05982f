"""Choosing a model. Building an adapter touches no network and reads no key; the first request does."""

import os

from alpineagents import Agent, Anthropic, OpenAICompatible, Price
from alpineagents.models import OpenAIResponses, resolve_model

models = [
    resolve_model("anthropic/claude-sonnet-5"),  # Anthropic Messages API, reads ANTHROPIC_API_KEY
    resolve_model("openai/gpt-5"),  # OpenAI Chat Completions, reads OPENAI_API_KEY
    resolve_model("ollama/llama3:8b"),  # a local Ollama server at http://localhost:11434/v1
    OpenAICompatible("qwen3:8b", base_url="http://gpu-box:8000/v1"),  # vLLM, or any compatible server
    OpenAICompatible(  # OpenRouter: a name with a slash, its URL, its key
        "meta-llama/llama-3.3-70b-instruct",
        base_url="https://openrouter.ai/api/v1",
        api_key=os.environ.get("OPENROUTER_API_KEY"),
    ),
    resolve_model("openai-responses/gpt-5"),  # OpenAI's Responses API
    OpenAIResponses("gpt-5", max_tokens=16_000),  # the same adapter, built directly
    Anthropic("claude-sonnet-5", thinking=8192, price=Price(input=3, output=15)),  # dollars per million tokens
]
for model in models:
    print(f"{type(model).__name__:16} {model.provider:18} {model.name}")

agent = Agent("anthropic/claude-sonnet-5")  # an Agent takes the same strings
print(type(agent.model).__name__)
