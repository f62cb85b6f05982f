"""Which stop reasons mean that an output limit cut a reply off (a private part of ``alpineagents.types``).

``CUT_OFF_STOP_REASONS`` is the library's fixed, public vocabulary: the stop reasons a Model, a custom one too,
reports a cut-off reply with. A provider whose own word for it is another one does not add it here: its adapter
declares its provider's cut-off words on its class (``cut_off_stop_reasons``), and the adapter base hands them to
``declare_cut_off`` when the class is defined. ``Message.cut_off`` and ``Reply.cut_off`` ask ``is_cut_off``, which
knows the vocabulary and every declared word.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

__all__ = ["CUT_OFF_STOP_REASONS", "declare_cut_off", "is_cut_off"]

CUT_OFF_STOP_REASONS = frozenset({"max_tokens", "model_context_window_exceeded", "length", "max_output_tokens"})
"""``stop_reason`` values meaning an output limit stopped the model before it finished."""

_known: frozenset[str] = CUT_OFF_STOP_REASONS
_lock = threading.Lock()


def declare_cut_off(reasons: Iterable[str]) -> None:
    """Count each of `reasons` (a provider's stop reasons) as a cut-off reply from now on."""
    global _known
    with _lock:
        _known = _known | frozenset(reasons)


def is_cut_off(stop_reason: str | None) -> bool:
    """True when `stop_reason` says an output limit stopped the model (``None`` never does)."""
    return stop_reason in _known
