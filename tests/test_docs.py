"""The documentation's code samples: each file in `docs/examples/` runs, offline, and prints what its page shows.

A page includes a sample with `--8<-- "docs/examples/NAME.py"` and, when it shows the output, the file
`docs/examples/NAME.out`; these tests run every sample in a fresh process (no API key in its environment, a
temporary working folder, a deadline) and compare what it prints with its `.out` file, character for character.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
DEADLINE = 60  # seconds for one sample

NOT_RUN = {
    "real_provider.py": "talks to a real provider: needs the network and an API key",
    "workers_app.py": "needs a PostgreSQL server shared by the worker processes (workers_local.py runs offline)",
    "mcp_server.py": "an MCP server that waits for a client; mcp_agent.py starts it and runs through it",
}
"""Samples the pages show but this suite does not run, with the reason."""

WITH_POSTGRES = ["postgres_store.py"]
"""Samples that need a PostgreSQL server: run here against a fresh database of the test server (`DATABASE_URL`)."""

SHELL_RUN = ["cli_try.sh"]
"""Shell samples this suite runs (with bash, from the repository root, the interpreter's bin folder first on PATH);
the other `.sh` files are install and serve commands, shown only."""

INCLUDE = re.compile(r'--8<--\s+"([^"]+)"')

SAMPLES = sorted(path.name for path in EXAMPLES.glob("*.py"))
RUN = [name for name in SAMPLES if name not in NOT_RUN and name not in WITH_POSTGRES]


def included_files() -> set[str]:
    """Every file a page of the site includes with the snippets syntax, as a path from the repository root."""
    found: set[str] = set()
    for page in DOCS.rglob("*.md"):
        found.update(INCLUDE.findall(page.read_text(encoding="utf-8")))
    return found


def run_sample(name: str, tmp_path: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(extra_env)
    env["PYTHONPATH"] = str(ROOT / "src")
    env["NO_COLOR"] = "1"
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )


def run_shell_sample(name: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("ALPINEAGENTS_STORE", None)
    return subprocess.run(
        ["bash", "-eu", str(EXAMPLES / name)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )


def check_output(name: str, done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    shown = EXAMPLES / (Path(name).stem + ".out")
    if shown.exists():
        assert done.stdout == shown.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", RUN)
def test_a_sample_runs_offline_and_prints_what_its_page_shows(name: str, tmp_path: Path) -> None:
    check_output(name, run_sample(name, tmp_path))


@pytest.mark.parametrize("name", WITH_POSTGRES)
def test_a_postgres_sample_runs_against_a_local_server(name: str, tmp_path: Path, postgres_database: str) -> None:
    check_output(name, run_sample(name, tmp_path, DATABASE_URL=postgres_database))


@pytest.mark.parametrize("name", SHELL_RUN)
def test_a_shell_sample_runs_offline_and_prints_what_its_page_shows(name: str) -> None:
    check_output(name, run_shell_sample(name))


def test_every_sample_and_every_shown_output_is_on_a_page() -> None:
    included = included_files()
    files = sorted(p.relative_to(ROOT).as_posix() for p in EXAMPLES.iterdir() if p.suffix in {".py", ".out", ".sh"})
    assert [f for f in files if f not in included] == []


def test_every_included_file_exists() -> None:
    assert [f for f in sorted(included_files()) if not (ROOT / f).is_file()] == []


def test_every_shown_output_belongs_to_a_sample_that_runs() -> None:
    runs = {Path(name).stem for name in RUN + WITH_POSTGRES + SHELL_RUN}
    assert sorted(p.name for p in EXAMPLES.glob("*.out") if p.stem not in runs) == []


def test_the_samples_named_here_exist() -> None:
    assert sorted(name for name in [*NOT_RUN, *WITH_POSTGRES, *SHELL_RUN] if not (EXAMPLES / name).is_file()) == []


def public_modules() -> list[str]:
    """The public modules of the package: the package, `models`, and each module file without a leading underscore
    (the command line and the viewer are documented by their page, not by a reference page)."""
    package = ROOT / "src" / "alpineagents"
    found = ["alpineagents", "alpineagents.models"]
    for folder, prefix in [(package, "alpineagents."), (package / "models", "alpineagents.models.")]:
        found += [prefix + path.stem for path in sorted(folder.glob("*.py")) if not path.name.startswith("_")]
    return found


def test_every_public_module_has_a_reference_in_the_navigation() -> None:
    """Each public module's reference (`::: module`) stands on a page of the nav: its own page under `reference/`,
    or, for a model adapter, the section of `models.md` that describes it."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [DOCS / name for name in re.findall(r"([\w./-]+\.md)\s*$", nav, re.MULTILINE)]
    texts = [page.read_text(encoding="utf-8") for page in pages if page.is_file()]
    missing = [module for module in public_modules() if not any(f"::: {module}\n" in text for text in texts)]
    assert missing == [], f"no page of the nav of mkdocs.yml holds the reference (`::: module`) of {missing}"


def test_the_built_reference_shows_every_public_name(tmp_path: Path) -> None:
    """Builds the site (as `scripts/test.sh` does) and looks for an entry of every name in each module's `__all__`
    on a page of the site (its module's, or the page of the module that defines it)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    anchors: set[str] = set()
    for page in tmp_path.rglob("index.html"):
        anchors.update(re.findall(r'id="(alpineagents\.[^"]+)"', page.read_text(encoding="utf-8")))
    missing = []
    for module in public_modules():
        if module == "alpineagents":
            continue  # the package page links each export to the page of its module (checked by the strict build)
        names = getattr(importlib.import_module(module), "__all__", [])
        for name in names:
            value = getattr(importlib.import_module(module), name)
            home = getattr(value, "__module__", module) if isinstance(value, type) else module
            if f"{module}.{name}" not in anchors and f"{home}.{name}" not in anchors:
                missing.append(f"{module}.{name}")
    assert missing == []
