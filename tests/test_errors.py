"""Tests for alpineagents.errors: the misuse message layout and the error classes."""

from __future__ import annotations

import copy
import pickle
import warnings

import pytest

import alpineagents
import alpineagents.errors as errors
from alpineagents.errors import (
    AlpineAgentsError,
    AuthError,
    ContextTooLongError,
    CutOffError,
    MCPConnectionError,
    NoHumanError,
    OutputError,
    PermissionWarning,
    ProviderError,
    RateLimitError,
    ResumeWarning,
    ToolError,
    ToolInputError,
    fix_message,
)
from alpineagents.types import Message, Reply, Usage


def test_fix_message_lays_out_problem_fix_and_example() -> None:
    assert fix_message("p", "f") == "p\nFix: f"
    assert fix_message("p", "f", "x\n\ny") == "p\nFix: f\nExample:\n    x\n    \n    y"


def test_fix_message_strips_only_newlines_at_the_ends() -> None:
    assert fix_message("p", "f", "\na\n  b\n") == "p\nFix: f\nExample:\n    a\n      b"
    assert fix_message("p", "f", "\n\n  a  \n\n") == "p\nFix: f\nExample:\n      a  "
    assert fix_message("p", "f", None) == "p\nFix: f"
    assert fix_message("p", "f", "") == "p\nFix: f"


def test_the_error_classes_form_the_documented_tree() -> None:
    assert issubclass(RateLimitError, ProviderError)
    assert issubclass(ProviderError, AlpineAgentsError)
    assert issubclass(MCPConnectionError, AlpineAgentsError)
    assert not issubclass(CutOffError, ProviderError)
    assert not issubclass(ToolError, AlpineAgentsError)
    assert not issubclass(ToolInputError, AlpineAgentsError)
    assert issubclass(ResumeWarning, UserWarning)
    assert issubclass(PermissionWarning, UserWarning)


def test_full_class_tree() -> None:
    for cls in (ContextTooLongError, AuthError):
        assert issubclass(cls, ProviderError)
    for cls in (ProviderError, OutputError, CutOffError, NoHumanError, MCPConnectionError):
        assert cls.__bases__ == (AlpineAgentsError,)
    assert AlpineAgentsError.__bases__ == (Exception,)
    assert ToolError.__bases__ == (Exception,)
    assert ToolInputError.__bases__ == (Exception,)
    assert ResumeWarning.__bases__ == (UserWarning,)
    assert PermissionWarning.__bases__ == (UserWarning,)


def test_plain_constructors() -> None:
    for cls in (AlpineAgentsError, ProviderError, RateLimitError, AuthError, OutputError, NoHumanError):
        e = cls("a", 2)
        assert e.args == ("a", 2)
    assert str(MCPConnectionError("Could not connect")) == "Could not connect"
    assert str(ToolInputError("x")) == "x"
    assert ToolInputError().args == ()
    assert str(PermissionWarning("No permission allowed or denied the call to rm")).startswith("No permission")


def test_tool_error_needs_a_non_empty_string() -> None:
    with pytest.raises(TypeError) as info:
        ToolError(404)  # type: ignore[arg-type]
    text = str(info.value)
    assert text.startswith("ToolError takes a string")
    assert text.splitlines()[0] == "ToolError takes a string, the message the model is told (got: 404)"
    assert "Fix: Pass the message as a string" in text
    assert 'raise ToolError(f"HTTP {status}: {url}")' in text
    with pytest.raises(ValueError) as info2:
        ToolError("  ")
    assert "ToolError got an empty message" in str(info2.value)
    assert "Say what went wrong" in str(info2.value)
    with pytest.raises(ValueError):
        ToolError("")
    assert str(ToolError("HTTP 404")) == "HTTP 404"
    assert ToolError("HTTP 404").args == ("HTTP 404",)


def test_tool_error_pickles() -> None:
    e = pickle.loads(pickle.dumps(ToolError("HTTP 404")))
    assert type(e) is ToolError and str(e) == "HTTP 404"


def test_cut_off_error_keeps_the_reply() -> None:
    reply = Reply(Message("assistant", (), stop_reason="max_tokens"), Usage(requests=1), stop_reason="max_tokens")
    e = CutOffError("m", reply)
    assert e.reply is reply
    assert str(e) == "m"
    assert e.args == ("m",)
    assert not isinstance(e, ProviderError)


def test_resume_warning_keeps_its_changes_through_pickle_and_copy() -> None:
    w = ResumeWarning("msg", {"model": ("a", "b")})
    assert str(w) == "msg"
    assert w.args == ("msg",)
    assert pickle.loads(pickle.dumps(w)).changes == {"model": ("a", "b")}
    assert str(pickle.loads(pickle.dumps(w))) == "msg"
    assert copy.copy(w).changes == {"model": ("a", "b")}
    assert copy.deepcopy(w).changes == {"model": ("a", "b")}
    assert str(copy.deepcopy(w)) == "msg"
    with pytest.raises(TypeError):
        ResumeWarning("msg")  # type: ignore[call-arg]


def test_resume_warning_through_warnings_module() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn(
            ResumeWarning("This State was saved by a different Agent (x)", {"name": (None, "b")}), stacklevel=1
        )
    assert caught[0].category is ResumeWarning
    assert caught[0].message.changes == {"name": (None, "b")}  # type: ignore[union-attr]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=ResumeWarning)
        with pytest.raises(ResumeWarning):
            warnings.warn(ResumeWarning("m", {}), stacklevel=1)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=PermissionWarning)
        warnings.warn(PermissionWarning("silenced"), stacklevel=1)


def test_the_package_exports_every_error() -> None:
    assert "MCPConnectionError" in alpineagents.__all__
    assert errors.__all__[-1] == "fix_message"
    assert "MCPConnectionError" not in errors.__all__
    from alpineagents.errors import MCPConnectionError as imported

    assert imported is MCPConnectionError


def test_errors_all_in_order() -> None:
    assert errors.__all__ == [
        "AlpineAgentsError",
        "ProviderError",
        "RateLimitError",
        "ContextTooLongError",
        "AuthError",
        "OutputError",
        "CutOffError",
        "NoHumanError",
        "ToolError",
        "ToolInputError",
        "ResumeWarning",
        "PermissionWarning",
        "fix_message",
    ]
    for name in errors.__all__:
        assert hasattr(errors, name)


def test_root_reexports_every_error_class() -> None:
    names = [
        "AlpineAgentsError",
        "ProviderError",
        "RateLimitError",
        "ContextTooLongError",
        "AuthError",
        "OutputError",
        "CutOffError",
        "NoHumanError",
        "MCPConnectionError",
        "ResumeWarning",
        "PermissionWarning",
        "ToolError",
        "ToolInputError",
    ]
    for name in names:
        assert name in alpineagents.__all__
        assert getattr(alpineagents, name) is getattr(errors, name)
    assert not hasattr(alpineagents, "fix_message")
