"""The child program of tests/test_effects.py: a run whose tool pays into a ledger file (the "external system"),
killed with SIGKILL at a named point, then resumed in another process whose tool can reconcile.

`python tests/helpers/effects_child.py run DIR POINT`: run the payment; POINT is `before_effect` (the tool dies before
it writes the ledger) or `after_effect` (it dies after the ledger line is written, before its result is saved).
`python tests/helpers/effects_child.py resume DIR MODE [DECISION]`: load the State, optionally decide its waiting call
(`approve` or `deny`), run it; MODE is `ledger` (reconcile looks the call's idempotency key up in the ledger) or
`unsure` (reconcile cannot tell). Writes `final.json`: what the model read last, the State's stop, its waiting
calls and the effect marks of its history.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from alpineagents._history.effects import effect_marks
from alpineagents.agent import Agent
from alpineagents.state import State
from alpineagents.store import SQLiteStore
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import CannotTell, CurrentCall, Happened, NotHappened, current_call, tool
from alpineagents.types import Message, Request, ToolResultBlock, result_text

STATE_ID = "payment-1"
DIR = Path(sys.argv[2])
LEDGER = DIR / "ledger.txt"
CALLS = DIR / "calls.txt"


def _append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def _ledger() -> dict[str, str]:
    if not LEDGER.exists():
        return {}
    return dict(line.split(" ", 1) for line in LEDGER.read_text().splitlines())


def paid(call: CurrentCall) -> Happened | NotHappened | CannotTell:
    """Look the payment up in the ledger by its idempotency key."""
    _append(CALLS, f"reconcile {call.idempotency_key}")
    if os.environ.get("RECONCILE") == "unsure":
        return CannotTell()
    found = _ledger().get(call.idempotency_key)
    return Happened(f"paid {found} (found in the ledger)") if found is not None else NotHappened()


@tool(reconcile=paid)
def pay(amount: int) -> str:
    """Pay an amount (a side effect: one ledger line, keyed by the call's idempotency key)."""
    key = current_call().idempotency_key
    _append(CALLS, f"pay {key}")
    if os.environ.get("POINT") == "before_effect":
        os.kill(os.getpid(), signal.SIGKILL)
    _append(LEDGER, f"{key} {amount}")
    if os.environ.get("POINT") == "after_effect":
        os.kill(os.getpid(), signal.SIGKILL)
    return f"paid {amount}"


def read_back(request: Request) -> str:
    """The model answers with the result it read last."""
    for message in reversed(request.messages):
        results = [block for block in message.content if isinstance(block, ToolResultBlock)]
        if results:
            return "model read: " + result_text(results[-1].content)
    return "model read nothing"


def run() -> None:
    store = SQLiteStore(DIR / "runs.db")
    agent = Agent(
        FakeModel([tool_call("pay", amount=30), read_back]), tools=[pay], store=store, reporter=None, human=None
    )
    agent.run(State(id=STATE_ID, messages=[Message.user("Pay 30")]))


def resume(decision: str | None) -> None:
    store = SQLiteStore(DIR / "runs.db")
    state = store.load(STATE_ID)
    if decision == "approve":
        state.approve(state.awaiting_approval[0].call.id, by="ana")
    elif decision == "deny":
        state.deny(state.awaiting_approval[0].call.id, "It was paid: receipt 7", by="ana")
    agent = Agent(FakeModel([read_back]), tools=[pay], store=store, reporter=None, human=None)
    answer: Any = agent.run(state)
    final = {
        "answer": answer,
        "stopped": str(state.stopped) if state.stopped is not None else None,
        "waiting": [item.call.id for item in state.awaiting_approval],
        "marks": effect_marks(state.history),
    }
    (DIR / "final.json").write_text(json.dumps(final))


if __name__ == "__main__":
    os.environ["POINT"] = sys.argv[3] if sys.argv[1] == "run" else ""
    if sys.argv[1] == "run":
        run()
    else:
        os.environ["RECONCILE"] = sys.argv[3]
        resume(sys.argv[4] if len(sys.argv) > 4 else None)
