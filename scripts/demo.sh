#!/usr/bin/env bash
# Install alpineagents in ./.venv and run the demo agent.
# Offline with a scripted model; against a real provider when ANTHROPIC_API_KEY or OPENAI_API_KEY is set.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e .
exec .venv/bin/python examples/demo.py "$@"
