#!/usr/bin/env bash
# One nightly run of sixnines: check the hosts, run the scenario into the results root,
# update the history (JUnit and the HTML page) where this sixnines has `history`, prune
# older nights' raw chunks, and exit with a code a scheduler acts on.
#   nightly.sh [ENV_FILE]      (default: $NIGHTLY_ENV, else /etc/sixnines/nightly.env)
# Exit: 0 no change, 1 regression, 2 bad input (configuration, scenario, inventory),
#       3 the night itself failed (a host not ready, the run failed or was interrupted,
#       or the history judged the night unsteady or failed).
# Configuration: KEY=VALUE lines in ENV_FILE (nightly.env beside this script shows them);
# the file is read as data, never run. Of its values only the paths used (scenario, root,
# JUnit file) are printed: secrets for what the scenario reaches may be among the others.
# See README.md beside this file.
set -uo pipefail

readonly EXIT_NO_CHANGE=0 EXIT_REGRESSION=1 EXIT_BAD_INPUT=2 EXIT_NIGHT_FAILED=3

say() { printf 'nightly: %s\n' "$*" >&2; }
die() {  # exit code, message
  local code="$1"
  shift
  say "$*"
  exit "$code"
}

load_env() {  # KEY=VALUE lines, as systemd's EnvironmentFile= reads them; exported
  local file="$1" line name value number=0
  [[ -f "$file" && -r "$file" ]] || die "$EXIT_BAD_INPUT" "cannot read the configuration $file"
  while IFS= read -r line || [[ -n "$line" ]]; do
    number=$((number + 1))
    line="${line#"${line%%[![:space:]]*}"}"   # leading blanks
    [[ -z "$line" || "$line" == \#* ]] && continue
    if ! [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
      die "$EXIT_BAD_INPUT" "$file:$number: not a KEY=VALUE line"
    fi
    name="${BASH_REMATCH[1]}"
    value="${BASH_REMATCH[2]}"
    if [[ "$value" =~ ^\"(.*)\"$ || "$value" =~ ^\'(.*)\'$ ]]; then
      value="${BASH_REMATCH[1]}"
    fi
    export "$name=$value"
  done <"$file"
}

has_command() {  # whether this sixnines has the subcommand $1 (its help says so)
  "$SIXNINES" "$1" --help >/dev/null 2>&1
}

has_option() {  # whether subcommand $1 of this sixnines takes option $2
  local help
  help="$("$SIXNINES" "$1" --help 2>/dev/null)"
  [[ "$help" == *"$2"* ]]
}

main() {
  local env_file="${1:-${NIGHTLY_ENV:-/etc/sixnines/nightly.env}}"
  load_env "$env_file"
  SIXNINES="${SIXNINES:-sixnines}"
  local scenario="${NIGHTLY_SCENARIO:-}" root="${NIGHTLY_ROOT:-}"
  local keep="${NIGHTLY_KEEP_RAW:-7}"
  [[ -n "$scenario" ]] || die "$EXIT_BAD_INPUT" "$env_file: NIGHTLY_SCENARIO is not set"
  [[ -n "$root" ]] || die "$EXIT_BAD_INPUT" "$env_file: NIGHTLY_ROOT is not set"
  [[ "$keep" =~ ^[0-9]+$ ]] \
    || die "$EXIT_BAD_INPUT" "$env_file: NIGHTLY_KEEP_RAW must be a whole number of nights"
  command -v "$SIXNINES" >/dev/null \
    || die "$EXIT_BAD_INPUT" "$env_file: SIXNINES: no sixnines command at $SIXNINES"
  local junit="${NIGHTLY_JUNIT:-$root/junit.xml}" html="${NIGHTLY_HTML:-$root/history.html}"

  mkdir -p -- "$root" || die "$EXIT_BAD_INPUT" "cannot create the results root $root"
  exec 9>>"$root/.nightly.lock" || die "$EXIT_BAD_INPUT" "cannot write in $root"
  flock -n 9 || die "$EXIT_NIGHT_FAILED" "another nightly run is still going in $root"

  say "checking the hosts of $scenario"
  "$SIXNINES" hosts check "$scenario"
  case $? in
    0) ;;
    2) die "$EXIT_BAD_INPUT" "the scenario or its inventory is wrong (above); nothing was run" ;;
    *) die "$EXIT_NIGHT_FAILED" "a host is not ready (above); nothing was run" ;;
  esac

  say "running $scenario into $root"
  local night_failed=0
  "$SIXNINES" run "$scenario" --output "$root"
  case $? in
    0) ;;
    2) die "$EXIT_BAD_INPUT" "the scenario was refused (above); nothing was run" ;;
    *) night_failed=1
       say "the run did not go well (above); what it recorded is kept and judged below" ;;
  esac

  local history_code=0
  if has_command history; then
    local history=("$SIXNINES" history "$root")
    if has_option history --junit; then history+=(--junit "$junit"); fi
    if has_option history --html; then history+=(--html "$html"); fi
    say "updating the history of $root"
    "${history[@]}"
    history_code=$?
  else
    say "this sixnines has no \`history\` command: no history, JUnit or page is written," \
        "and no change is looked for (install a sixnines with it)"
  fi

  if has_command prune; then
    say "pruning raw chunks older than the newest $keep night(s)"
    "$SIXNINES" prune "$root" --keep-raw "$keep" \
      || say "pruning did not finish (above): the night's verdict stands"
  else
    say "this sixnines has no \`prune\` command: raw chunks are kept"
  fi

  case "$history_code" in
    2) die "$EXIT_BAD_INPUT" "the history refused its input (above)" ;;
    3) die "$EXIT_NIGHT_FAILED" "the history judged tonight failed or unsteady (above)" ;;
  esac
  ((night_failed == 0)) || die "$EXIT_NIGHT_FAILED" "the night failed: see the run above"
  case "$history_code" in
    0) say "no change"; exit "$EXIT_NO_CHANGE" ;;
    1) die "$EXIT_REGRESSION" "a regression (above; JUnit: $junit)" ;;
    *) die "$EXIT_NIGHT_FAILED" "the history ended with code $history_code (above)" ;;
  esac
}

main "$@"
