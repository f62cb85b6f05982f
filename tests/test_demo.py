"""The README's main job: `examples/demo.py` runs offline (no key) end to end, in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_demo_runs_offline_and_reloads_its_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEMO_MODEL")}
    db = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert f"README.md has {lines} lines" in done.stdout
    assert "demo.py" in done.stdout
    assert "loaded back intact: True" in done.stdout
    assert db.exists()
