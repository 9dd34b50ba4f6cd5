#!/usr/bin/env bash
# The main job: set up (idempotent) and run `netfleet demo`. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bootstrap.sh
source scripts/bootstrap.sh
exec "$UV" run --frozen netfleet demo "$@"
