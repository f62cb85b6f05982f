"""Workers on one machine, offline: DBOS keeps its queue in SQLite, the runs are kept in a SQLiteStore.

Run as `python workers_local.py`: it starts one worker process (`alpineagents worker workers_local:workers`),
submits three runs, prints their answers and stops the worker. Needs `pip install -e '.[dbos]'` (in the clone).
"""

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from alpineagents import Agent, SQLiteStore
from alpineagents.testing import FakeModel
from alpineagents.workers import Workers

HERE = Path(__file__).resolve().parent
FOLDER = Path(os.environ.setdefault("WORKERS_FOLDER", tempfile.mkdtemp()))  # shared by this process and the worker


def reply(request):
    return "Checked: " + request.messages[-1].text  # a scripted model: the worker runs it for every run


workers = Workers(
    agents={"checker": Agent(FakeModel([reply] * 1000), reporter=None)},
    store=SQLiteStore(FOLDER / "runs.db"),
    database=f"sqlite:///{FOLDER / 'queue.sqlite'}",
)

if __name__ == "__main__":
    runs = [workers.submit("checker", f"invoice {n}") for n in range(1, 4)]  # queued at once, none runs here
    worker = subprocess.Popen(
        [sys.executable, "-m", "alpineagents", "worker", "workers_local:workers"],
        cwd=HERE,
        env={**os.environ, "PYTHONPATH": str(HERE)},
        stdout=subprocess.DEVNULL,  # the worker logs to stderr
    )
    try:
        for run in runs:
            print(run.result(timeout=60), "-", run.status())
    finally:
        worker.send_signal(signal.SIGTERM)  # takes no new run, lets the current ones finish, then exits
        worker.wait(timeout=60)
