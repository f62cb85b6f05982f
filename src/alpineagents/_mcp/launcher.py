"""Runs a stdio MCP server so that it never outlives the process that started it (its client).

`python -I -S launcher.py CLIENT_PID COMMAND [ARGS...]`. The client starts this script in place of the server's
command; the script starts the command with the same standard streams (the client's pipes), in its own process
group, and waits for it. When the client dies, however it dies (a SIGKILL included), the script kills that whole
group, server and the processes the server started, whatever its tool is doing at that moment: a blocking call,
an async one, a call that never returns. Without it the server would run on, reparented, until its tool returned,
and finish the call's side effects for a client that is gone. Killing the client's process group does not reach
it, because the MCP SDK starts a stdio server in a session of its own.

How the script learns that the client died: on Linux, the kernel sends it SIGTERM when the client's thread that
started it ends (`prctl(PR_SET_PDEATHSIG)`; the MCP connections live on one thread that lasts as long as the
process). Elsewhere a thread checks every half second whether its parent is still the client. A SIGTERM while
the client lives is the client's own shutdown of the group (the SDK signals the group, the server included): the
script then waits for the server as before, so a server's grace period is unchanged.

It imports only the standard library and runs isolated (`-I -S`), so it starts in a few milliseconds in any
environment the client passes, and never writes to the server's standard output. It exits as the server exited.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1


def _signal_on_parent_death(signum: int) -> bool:
    """Ask the kernel for `signum` when the parent thread ends (Linux); False where that cannot be asked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _kill_all(server: subprocess.Popen[bytes] | None) -> None:
    """Kill the server and everything in this script's process group (the script too)."""
    if os.getpgrp() == os.getpid():  # the script leads its own group (the SDK starts it in a new session)
        os.killpg(os.getpgrp(), signal.SIGKILL)
    if server is not None:
        server.kill()
    os._exit(137)


def main(argv: list[str]) -> int:
    client = int(argv[1])
    command = argv[2:]
    watched = _signal_on_parent_death(signal.SIGTERM)
    if os.getppid() != client:  # the client died before the watch was set
        return 137
    server: list[subprocess.Popen[bytes]] = []

    def on_term(signum: int, frame: object) -> None:
        if os.getppid() != client:  # the client is gone: nobody will ever read the server's answers
            _kill_all(server[0] if server else None)
        # Else the client is shutting the server down: the server got the signal too; wait for it.

    signal.signal(signal.SIGTERM, on_term)
    if os.getppid() != client:
        return 137
    try:
        server.append(subprocess.Popen(command))
    except OSError as error:
        print(f"could not start the MCP server {command[0]!r}: {error}", file=sys.stderr)
        return 127
    if not watched:

        def watch() -> None:
            while os.getppid() == client:
                time.sleep(0.5)
            _kill_all(server[0])

        threading.Thread(target=watch, daemon=True).start()
    code = server[0].wait()
    if code < 0:  # ended by a signal: end the same way, so the client sees what happened
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
