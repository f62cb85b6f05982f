"""A real worker process serving `tests/approval_worker_app.py`, for the tests of runs that wait on real DBOS."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent


def wait_status(run: Any, wanted: str, timeout: float = 60) -> str:
    """Poll a Run handle until its status is `wanted` or `timeout` seconds pass; the last status seen."""
    deadline = time.monotonic() + timeout
    while (status := run.status()) != wanted and time.monotonic() < deadline:
        time.sleep(0.1)
    return status


@contextmanager
def approval_worker(log_path: Path) -> Iterator[ModuleType]:
    """Start worker `w1` of `approval_worker_app:workers` (its output in `log_path`) and give the app module, whose
    `workers` submit to it; stop the worker with SIGTERM (a kill after 60 s) when the block ends."""
    sys.path.insert(0, str(TESTS))
    sys.modules.pop("approval_worker_app", None)
    import approval_worker_app as app

    with open(log_path, "wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "alpineagents", "worker", "approval_worker_app:workers", "--id", "w1"],
            env={**os.environ, "PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT / 'src'}"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield app
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(10)
            sys.path.remove(str(TESTS))
