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
# two workers (pytest-xdist), a test file per worker at a time: most tests wait on shaped links
# or on other processes, so two files at once use the two cores without crowding them. Files go
# out in collection order (tests/conftest.py puts the long ones first), not xdist's default
# order by number of tests
exec "$UV" run --frozen pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15 "$@"
