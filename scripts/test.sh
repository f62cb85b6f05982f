#!/usr/bin/env bash
# Install alpineagents with its test tools in ./.venv, then lint, type-check and run the tests.
# The run viewer's tests drive Debian's chromium through Playwright, the group-commit tests count flushes with
# strace, and the power-loss test makes a small ext4 disk with mkfs.ext4 (it mounts it, so it runs only as root):
# when one is missing and this script runs as root, it is installed here (as another user, install them first:
# sudo apt-get install chromium strace; without strace those tests are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
missing=""
[ -x /usr/bin/chromium ] || missing="$missing chromium"
command -v strace >/dev/null || missing="$missing strace"
command -v npm >/dev/null || missing="$missing nodejs npm"  # the serve tests run the AG-UI and AI SDK clients
if [ "$(id -u)" = 0 ]; then command -v mkfs.ext4 >/dev/null || missing="$missing e2fsprogs"; fi
if [ -n "$missing" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== installing$missing (Debian packages) for the browser, flush-count and power-loss tests"
  # another apt run (unattended upgrades, a second test run) may hold the package locks: wait up to 10 minutes
  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "== ruff"
.venv/bin/ruff check src tests benchmarks examples docs/examples
echo "== pyright"
.venv/bin/pyright src
echo "== mkdocs"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
echo "== pytest"
exec .venv/bin/python -m pytest "$@"
