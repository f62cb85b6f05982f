#!/usr/bin/env bash
# Install alpineagents with its test tools in ./.venv, then lint, type-check and run the tests.
# The run viewer's tests drive Debian's chromium through Playwright: when it is missing and this script runs as
# root, it is installed here (as another user, install it first: sudo apt-get install chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== installing chromium (Debian package) for the viewer's browser tests"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
echo "== ruff"
.venv/bin/ruff check src tests benchmarks examples docs/examples
echo "== pyright"
.venv/bin/pyright src
echo "== mkdocs"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
echo "== pytest"
exec .venv/bin/python -m pytest "$@"
