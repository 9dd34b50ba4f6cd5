#!/usr/bin/env bash
# The whole test suite: set up (idempotent), lint, type-check, then pytest. Run as root on Debian 12
# (the namespace tests need root; they are part of the suite, not optional).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bootstrap.sh
source scripts/bootstrap.sh
"$UV" run --frozen ruff check src tests scripts bench
"$UV" run --frozen ruff format --check src tests scripts bench
"$UV" run --frozen mypy
exec "$UV" run --frozen pytest --durations=15 "$@"
