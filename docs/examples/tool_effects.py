"""A payment that never happens twice: the process dies right after the payment, before its result is saved; the
next process asks the tool's reconcile, which finds the payment by the call's idempotency key.

Run as `python tool_effects.py`: it starts itself a second time as the process that crashes.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from alpineagents import Agent, Message, SQLiteStore, State, tool
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import CurrentCall, Happened, NotHappened, current_call

LEDGER = Path("ledger.txt")  # the payment service, for this example: a file in the working folder


def find_payment(call: CurrentCall) -> Happened | NotHappened:
    """Ask the payment service whether a payment with this call's key exists."""
    for line in LEDGER.read_text().splitlines() if LEDGER.exists() else []:
        key, receipt = line.split(" ")
        if key == call.idempotency_key:
            return Happened(f"paid, receipt {receipt}")
    return NotHappened()


@tool(reconcile=find_payment)
def pay(amount: int) -> str:
    """Pay the invoice.

    Args:
        amount: How much, in euros.
    """
    key = current_call().idempotency_key  # the same for every attempt of this call, in any process
    with LEDGER.open("a") as ledger:
        ledger.write(f"{key} R-{amount}\n")
    if sys.argv[1:2] == ["crash"]:
        os._exit(9)  # the process dies after the payment, before its result is saved
    return f"paid, receipt R-{amount}"


def main() -> None:
    LEDGER.unlink(missing_ok=True)
    db = str(Path(tempfile.mkdtemp()) / "runs.db")
    child = subprocess.run([sys.executable, __file__, "crash", db], capture_output=True, text=True)
    print("the first process died with exit code", child.returncode)

    store = SQLiteStore(db)
    state = store.load("invoice-7")
    print("state.pending_calls:", state.pending_calls, "| the call's result:", state.history[-1].content[:40] + "…")

    model = FakeModel(["The invoice is paid (receipt R-120)."])
    Agent(model, tools=[pay], store=store).run(state)  # reconcile runs first: the tool is not called again
    print("payments in the ledger:", len(LEDGER.read_text().splitlines()))
    print("the model read:", state.messages[-2].content[0].content)


def crashing_process(db: str) -> None:
    agent = Agent(FakeModel([tool_call("pay", amount=120)]), tools=[pay], store=SQLiteStore(db))
    agent.run(State(id="invoice-7", messages=[Message.user("Pay invoice 7: 120 euros")]))


if __name__ == "__main__":
    if sys.argv[1:2] == ["crash"]:
        crashing_process(sys.argv[2])
    else:
        main()
