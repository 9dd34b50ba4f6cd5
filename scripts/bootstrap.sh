#!/usr/bin/env bash
# Install everything netfleet needs on Debian 12, idempotently: apt packages, uv, Python deps.
# Sourced by scripts/demo.sh and scripts/test.sh; safe to run again (does nothing when all is there).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

APT_PACKAGES=(iperf3 iperf sockperf iproute2 iputils-ping iputils-tracepath ethtool debootstrap
              procps python3 python3-venv ca-certificates
              irtt                           # isochronous round-trip latency engine
              gcc libc6-dev make             # builds the lab's delay line (native/delayline)
              openssh-server openssh-client  # sshd in lab namespaces (SSH tests); ssh-keyscan
              default-jre-headless           # PySpark local mode (export/Spark tests)
              chromium)                      # headless screenshots of the HTML report (tests)

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "netfleet setup: run as root (sudo $0): it installs apt packages and builds network labs" >&2
    exit 4
  fi
}

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  need_root
  echo "netfleet setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# uv: use the one on PATH, else a private copy installed from PyPI into a venv of our own.
UV_HOME="${NETFLEET_UV_HOME:-$HOME/.local/share/netfleet/uv}"
if command -v uv >/dev/null 2>&1; then
  UV="$(command -v uv)"
elif [ -x "$UV_HOME/bin/uv" ]; then
  UV="$UV_HOME/bin/uv"
else
  echo "netfleet setup: installing uv into $UV_HOME" >&2
  python3 -m venv "$UV_HOME"
  "$UV_HOME/bin/pip" install -q uv
  UV="$UV_HOME/bin/uv"
fi
export UV
# Use the machine's python3 (>= 3.11); never download an interpreter.
export UV_PYTHON_DOWNLOADS=never
# Trust the system CA store (corporate proxies, mirrors) like apt and pip do.
export UV_SYSTEM_CERTS=1
export UV_PYTHON="${UV_PYTHON:-python3}"
"$UV" sync --frozen --quiet

# The lab's delay line (links with delay/jitter/loss; docs/lab.md): built next to its source,
# where netfleet looks for it. make does nothing when it is up to date.
make -s -C native/delayline
