"""Installing: the distribution's name, the install lines of the README, the docs and the error messages (none may
lead to the other project named `alpineagents` on the package index), and the test script's wait for apt."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from alpineagents._install import DISTRIBUTION, install_hint
from helpers.cli_agents import cli

ROOT = Path(__file__).resolve().parents[1]
OTHER_PROJECT = re.compile(r"pip3? install (?:-U |--upgrade )?['\"]?alpineagents\b")
"""An install line that would fetch the package index's `alpineagents`, which is another project."""

WARNING = re.compile(r"different, older project|installs that one|says `pip install alpineagents|Not `pip install")
"""The sentences that warn against that line (they quote it)."""


def test_the_distribution_has_a_name_of_its_own_and_the_import_name_stays() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION != "alpineagents"
    assert project["scripts"]["alpineagents"] == "alpineagents.cli:main"
    assert (ROOT / "src" / "alpineagents" / "__init__.py").exists()


def test_no_install_line_leads_to_the_other_project() -> None:
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "CONTRIBUTING.md"]
    for folder, pattern in (
        (ROOT / "docs", "*"),
        (ROOT / "src", "*.py"),
        (ROOT / "examples", "*"),
        (ROOT / "scripts", "*"),
    ):
        files += [
            path for path in folder.rglob(pattern) if path.is_file() and path.suffix in (".md", ".py", ".sh", ".txt")
        ]
    found = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in files
        for line in path.read_text(encoding="utf-8").splitlines()
        if OTHER_PROJECT.search(line) and not WARNING.search(line)
    ]
    assert found == []
    assert "pip install -e '.[viewer]'" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert OTHER_PROJECT.search(install_hint("viewer")) is None


def test_a_missing_extra_says_how_to_install_this_library(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    (hidden / "jinja2").mkdir(parents=True)
    (hidden / "jinja2" / "__init__.py").write_text(
        "raise ImportError(\"No module named 'jinja2'\")\n", encoding="utf-8"
    )
    store = str(tmp_path / "runs")
    assert cli("run", "cli_agents:calc", "hi", "--id", "r1", "--store", store, cwd=tmp_path).returncode == 0
    for command in (["export", "r1"], ["view", "--port", "0"]):
        result = cli(*command, "--store", store, cwd=tmp_path, env={"PYTHONPATH": str(hidden)})
        assert result.returncode == 1
        line = result.stderr.strip()
        assert "\n" not in line and "pip install -e '.[viewer]'" in line and "alpineloop-" in line, line
        assert OTHER_PROJECT.search(line) is None


def test_the_test_script_waits_for_the_package_lock() -> None:
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("#")]
    calls = [line for line in lines if re.search(r"\bapt-get (-o \S+ )*(update|install)\b", line)]
    assert len(calls) == 2 and all("-o DPkg::Lock::Timeout=" in line for line in calls), calls
