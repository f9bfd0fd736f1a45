#!/usr/bin/env bash
# Set up sixnines in ./.venv on a fresh Debian/Ubuntu machine (or reuse what is there).
#   deploy/setup.sh          the controller: sixnines + Spark (and Java 17+ if absent)
#   deploy/setup.sh --test   the same plus the test tools
# Idempotent: a second run only checks. Needs root (or sudo) only when Java is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="analysis"
[[ "${1:-}" == "--test" ]] && extras="test"

say() { printf 'setup: %s\n' "$*" >&2; }
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1
}

if ! command -v java >/dev/null || [[ "$(java_major)" -lt 17 ]]; then
  if command -v apt-get >/dev/null; then
    say "installing a Java runtime for Spark (openjdk-17-jre-headless)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    say "Spark needs Java 17 or newer on PATH; install it and run this again"
    exit 1
  fi
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
