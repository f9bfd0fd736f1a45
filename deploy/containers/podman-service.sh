#!/usr/bin/env bash
# A private rootful podman serving the Docker API, for the tests and for users without a
# Docker engine (the container launcher talks to any Docker API endpoint).
#
#   deploy/containers/podman-service.sh start [--dir DIR]   prints DOCKER_HOST=unix://DIR/podman.sock
#   deploy/containers/podman-service.sh stop  [--dir DIR]   removes its containers, stops it
#   deploy/containers/podman-service.sh env   [--dir DIR]   prints the CONTAINERS_* variables
#                                                           that point the podman CLI at it
#
# Everything (config, image storage, runtime state, socket, log) lives under DIR, so the
# system's own podman storage is never touched. DIR defaults to $SIXNINES_PODMAN_DIR or
# /var/tmp/sixnines-podman: /var/tmp survives reboots and is not emptied as eagerly as /tmp,
# so the base and agent images built once stay cached between test sessions. `stop` keeps
# the images; delete DIR (after `stop`) to drop them.
#
# The settings are the ones that work on this kind of host: runc (crun fails on its cgroup
# layout), cgroupfs (no systemd), file events (no journald), explicit ulimits.
# Idempotent: `start` on a running service only prints its address; `stop` on a stopped
# one does nothing. Needs root and the apt packages podman, runc (deploy/setup.sh --test).
set -euo pipefail

say() { printf 'podman-service: %s\n' "$*" >&2; }

usage() {
  say "usage: $0 start|stop|env [--dir DIR]"
  exit 2
}

[[ $# -ge 1 ]] || usage
action=$1
shift
[[ $action =~ ^(start|stop|env)$ ]] || usage
dir=${SIXNINES_PODMAN_DIR:-/var/tmp/sixnines-podman}
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) [[ $# -ge 2 ]] || usage; dir=$2; shift 2 ;;
    *) usage ;;
  esac
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
socket=$dir/podman.sock
pidfile=$dir/service.pid
export CONTAINERS_CONF=$dir/containers.conf
export CONTAINERS_STORAGE_CONF=$dir/storage.conf

write_config() {  # rewritten on every start: the settings follow this script
  mkdir -p "$dir/storage" "$dir/run" "$dir/tmp"
  cat >"$CONTAINERS_CONF" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$dir/tmp/events.log"
tmp_dir = "$dir/tmp"
static_dir = "$dir/storage/libpod"
volume_path = "$dir/storage/volumes"
EOF
  cat >"$CONTAINERS_STORAGE_CONF" <<EOF
[storage]
driver = "overlay"
graphroot = "$dir/storage"
runroot = "$dir/run"
EOF
}

service_pid() {  # the running service's PID, or nothing
  local pid
  pid=$(cat "$pidfile" 2>/dev/null) || return 0
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null \
      && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "system service"; then
    echo "$pid"
  fi
}

answers() {  # the Docker API on the socket replies to a ping
  [[ -S "$socket" ]] && curl -sf --max-time 2 --unix-socket "$socket" http://d/_ping >/dev/null
}

start() {
  if [[ -n "$(service_pid)" ]] && answers; then
    echo "DOCKER_HOST=unix://$socket"
    return
  fi
  local attempt
  for attempt in 1 2 3; do  # a first start on a fresh host has been seen to exit at once
    launch && return
    say "attempt $attempt: podman system service did not come up"
  done
  exit 1
}

launch() {  # one start of the service; prints its address once it answers
  stop_service
  write_config
  rm -f "$socket"
  local log_start
  log_start=$(($(stat -c %s "$dir/service.log" 2>/dev/null || echo 0) + 1))
  setsid podman system service --time=0 "unix://$socket" \
    </dev/null >>"$dir/service.log" 2>&1 9>&- &
  echo $! >"$pidfile"
  for _ in $(seq 300); do  # up to 30 s; it answers in well under a second
    if answers; then
      echo "DOCKER_HOST=unix://$socket"
      return 0
    fi
    if [[ -z "$(service_pid)" ]]; then
      say "podman system service exited; what it logged ($dir/service.log):"
      tail -c "+$log_start" "$dir/service.log" | tail -n 20 >&2
      return 1
    fi
    sleep 0.1
  done
  say "podman system service does not answer on $socket; see $dir/service.log"
  stop_service
  return 1
}

stop_service() {  # by PID only: other podman services on this machine are not ours
  local pid
  pid=$(service_pid)
  if [[ -n "$pid" ]]; then
    kill "$pid"
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile" "$socket"
}

stop() {
  if [[ -f "$CONTAINERS_CONF" ]]; then  # containers left behind, in our storage only
    podman rm -fa >/dev/null 2>&1 || say "podman rm -fa failed (ignored)"
  fi
  stop_service
}

# one start/stop at a time per DIR: test sessions may start concurrently
exec 9>"$dir/lock"
flock 9
case $action in
  start) start ;;
  stop) stop ;;
  env) echo "CONTAINERS_CONF=$CONTAINERS_CONF"; echo "CONTAINERS_STORAGE_CONF=$CONTAINERS_STORAGE_CONF" ;;
esac
