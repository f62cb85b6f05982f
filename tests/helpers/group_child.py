"""A child process for the group-commit tests: States saved many times at once, each save acknowledged in a file.

Usage: `python group_child.py KIND PATH ACKS THREADS SAVES [lone|creates]`

KIND is `sqlite` or `file`, PATH the store's file or folder. THREADS threads (or, with `lone`, one thread) each
save their own State `t{n}` SAVES times, one new message per save. After a save returns, the thread appends
`t{n} {messages}` to the file ACKS and flushes it: a line there is a save point the store acknowledged (ACKS `-`:
no acknowledgements). Each State is created by a first save before the timed saves, or, with `creates`, by the
first timed save. The process asks `access("/alpineagents-marker")` once before the first timed save and once
after the last (markers strace can see), and prints `done` at the end.
"""

from __future__ import annotations

import os
import sys
import threading

from store_kinds import kind_named

from alpineagents.state import State
from alpineagents.types import Message

MARKER = "/alpineagents-marker"


def main() -> None:
    kind, path, acks, threads, saves = sys.argv[1:6]
    lone = sys.argv[6:] == ["lone"]
    creates = sys.argv[6:] == ["creates"]
    store = kind_named(kind).open({"kind": kind, "dir": path})
    count = 1 if lone else int(threads)
    states = [State(id=f"t{n}", messages=[Message.user(f"t{n} message 0")]) for n in range(count)]
    for state in states:
        if not creates:
            store.save(state)  # the first save (a create) before the marker
    ack = None if acks == "-" else os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    start = threading.Barrier(count)

    def work(state: State) -> None:
        start.wait()
        for n in range(1, int(saves) + 1):
            state.add_message(Message.user(f"{state.id} message {n}"))
            store.save(state)
            if ack is not None:
                os.write(ack, f"{state.id} {len(state.messages)}\n".encode())
                os.fsync(ack)

    os.access(MARKER, os.F_OK)
    workers = [threading.Thread(target=work, args=(state,)) for state in states]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    os.access(MARKER, os.F_OK)
    print("done", flush=True)


if __name__ == "__main__":
    main()
