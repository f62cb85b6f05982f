#!/usr/bin/env bash
# Install alpineagents with its test tools in ./.venv, then lint, type-check and run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
echo "== ruff"
.venv/bin/ruff check src tests benchmarks examples
echo "== pyright"
.venv/bin/pyright src
echo "== pytest"
exec .venv/bin/python -m pytest "$@"
