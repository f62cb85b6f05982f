"""`resolve_model` and the environment variables the adapters read."""

from __future__ import annotations

import pytest

from alpineagents.models import Anthropic, Model, OpenAICompatible, resolve_model
from alpineagents.models.resolve import OLLAMA_BASE_URL
from alpineagents.types import Price


def test_exports() -> None:
    import alpineagents.models as models
    from alpineagents.models import anthropic, base, openai_compatible, resolve

    assert models.__all__ == ["Model", "Anthropic", "OpenAICompatible", "resolve_model"]
    assert OLLAMA_BASE_URL == "http://localhost:11434/v1"
    assert anthropic.DEFAULT_MAX_TOKENS == 64_000
    assert resolve.resolve_model is resolve_model
    assert base.Model is Model and openai_compatible.OpenAICompatible is OpenAICompatible
    assert models.Retry is models.wrappers.Retry and models.Fallback is models.wrappers.Fallback


def test_resolve_model_strings() -> None:
    ollama = resolve_model("ollama/llama3:8b")
    assert type(ollama) is OpenAICompatible and ollama.name == "llama3:8b" and ollama.base_url == OLLAMA_BASE_URL
    router = resolve_model("anthropic/claude-sonnet-5", base_url="https://openrouter.ai/api/v1")
    assert type(router) is OpenAICompatible and router.name == "anthropic/claude-sonnet-5"
    assert router.base_url == "https://openrouter.ai/api/v1"
    with pytest.raises(ValueError, match="Unknown provider") as info:
        resolve_model("mystery/x")
    assert "anthropic, openai, ollama" in str(info.value)
    assert "OpenAICompatible('x', base_url='https://my-server/v1')" in str(info.value)
    with pytest.raises(ValueError) as info:
        resolve_model("mystery-model")
    for candidate in ("anthropic/mystery-model", "openai/mystery-model", "ollama/mystery-model"):
        assert candidate in str(info.value)
    assert "ambiguous" in str(info.value) and "Add the provider as a prefix" in str(info.value)
    with pytest.raises(ValueError, match="no model name"):
        resolve_model("anthropic/")
    with pytest.raises(ValueError, match="no model name"):
        resolve_model("anthropic/", base_url="http://x")
    with pytest.raises(TypeError) as tinfo:
        resolve_model(123)
    assert "neither a Model instance nor a string (int)" in str(tinfo.value)
    with pytest.raises(TypeError) as tinfo:
        resolve_model("openai/gpt-5", thinking=True)
    text = str(tinfo.value)
    assert "OpenAICompatible" in text and "thinking=" in text and "Fix:" in text and "base_url" in text
    with pytest.raises(TypeError, match="does not accept name="):
        resolve_model("claude-x", name="y")
    with pytest.raises(TypeError, match="Model instance") as tinfo:
        resolve_model(Anthropic("c"), max_tokens=1)
    assert "(Anthropic)" in str(tinfo.value) and "(max_tokens)" in str(tinfo.value)
    assert type(resolve_model("anthropic/claude-sonnet-5", base_url=None)) is Anthropic


def test_mapping_table() -> None:
    for text in ("claude-sonnet-5", "anthropic/claude-sonnet-5"):
        m = resolve_model(text)
        assert type(m) is Anthropic and m.name == "claude-sonnet-5"
    for text in ("gpt-5", "openai/gpt-5"):
        m = resolve_model(text)
        assert type(m) is OpenAICompatible and m.name == "gpt-5" and m.base_url is None
    local = resolve_model("qwen3:8b", base_url="http://box:8000/v1")
    assert type(local) is OpenAICompatible and local.name == "qwen3:8b" and local.base_url == "http://box:8000/v1"
    with pytest.raises(ValueError, match="ambiguous"):
        resolve_model("qwen3:8b")
    custom = resolve_model("ollama/qwen3:8b", base_url="http://gpu:11434/v1")
    assert (
        custom.name == "qwen3:8b" and isinstance(custom, OpenAICompatible) and custom.base_url == "http://gpu:11434/v1"
    )
    other = resolve_model("mystery/x", base_url="http://h/v1")
    assert type(other) is OpenAICompatible and other.name == "mystery/x"
    assert resolve_model("a/b/c", base_url="http://h").name == "a/b/c"


def test_model_instance_returned_as_is() -> None:
    m = OpenAICompatible("x")
    assert resolve_model(m) is m
    with pytest.raises(TypeError, match="Model instance"):
        resolve_model(m, base_url=None)


def test_empty_string() -> None:
    with pytest.raises(ValueError, match="empty"):
        resolve_model("")
    with pytest.raises(ValueError, match="empty"):
        resolve_model("", base_url="http://x")


def test_options_reach_the_adapter() -> None:
    price = Price(input=1, output=2)
    m = resolve_model("anthropic/claude-x", max_tokens=10_000, retries=5, price=price, thinking=2048)
    assert isinstance(m, Anthropic)
    assert m.max_tokens == 10_000 and m.retries == 5 and m.price is price
    assert m._thinking == {"type": "enabled", "budget_tokens": 2048}
    o = resolve_model("gpt-5", api_key="k", temperature=0.1, context_window=9)
    assert isinstance(o, OpenAICompatible) and o.api_key == "k" and o.temperature == 0.1 and o.context_window == 9
    with pytest.raises(ValueError, match="does not support"):
        resolve_model("claude-x", supports=[], thinking=True)


def test_option_name_check_lists_accepted_names() -> None:
    with pytest.raises(TypeError) as info:
        resolve_model("claude-x", bogus=1, other=2)
    text = str(info.value)
    assert "The model string 'claude-x' picked Anthropic, which does not accept bogus=, other=" in text
    assert (
        "Pass only options Anthropic accepts: max_tokens, temperature, timeout, retries, price, thinking, cache, "
        "context_window, api_key, base_url, supports" in text
    )
    assert "resolve_model('claude-x', max_tokens=16_000)" in text
    with pytest.raises(TypeError) as info:
        resolve_model("gpt-5", cache=True)
    assert (
        "Pass only options OpenAICompatible accepts: base_url, api_key, max_tokens, temperature, timeout, retries, "
        "price, context_window, supports" in str(info.value)
    )


def test_no_network_or_credentials_needed(no_credentials: None) -> None:
    for text in ("claude-sonnet-5", "gpt-5", "ollama/llama3:8b", "openai/o3"):
        m = resolve_model(text)
        assert m._sdk_client is None  # type: ignore[attr-defined]


def test_openai_base_url_env_is_left_to_the_sdk(monkeypatch: pytest.MonkeyPatch, no_credentials: None) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    m = resolve_model("openai/gpt-5")
    assert isinstance(m, OpenAICompatible) and m.base_url is None
    client = m._client()
    assert str(client.base_url).startswith("http://127.0.0.1:9/v1")
    assert client.api_key == "sk-env"
