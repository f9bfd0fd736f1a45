#!/usr/bin/env bash
# Build the base image sixnines-base:bookworm (Debian 12 minbase + python3, python3-venv)
# in the private podman of podman-service.sh, when it is not there yet.
#
#   deploy/containers/base-image.sh [--dir DIR]
#
# No registry is reachable from the machines this is for, so nothing is pulled: the root
# filesystem comes from debootstrap, from the Debian mirror apt uses here (or
# $SIXNINES_DEBIAN_MIRROR), and `podman import` turns it into an image (~80 s in all). The
# agent image (deploy/Dockerfile) is then built FROM it with BASE=sixnines-base:bookworm.
# Its Python is bookworm's 3.11.2: a bundle built on a later 3.11 must also carry the wheels
# that only older patch releases need (redis wants async-timeout below 3.11.3).
# DIR is the directory of a podman service set up by podman-service.sh start; the image
# stays cached there. Needs root and the apt package debootstrap.
set -euo pipefail

image=sixnines-base:bookworm
suite=bookworm
here=$(cd "$(dirname "$0")" && pwd)
say() { printf 'base-image: %s\n' "$*" >&2; }

dir=${SIXNINES_PODMAN_DIR:-/var/tmp/sixnines-podman}
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) [[ $# -ge 2 ]] || { say "usage: $0 [--dir DIR]"; exit 2; }; dir=$2; shift 2 ;;
    *) say "usage: $0 [--dir DIR]"; exit 2 ;;
  esac
done

if [[ ! -f "$dir/containers.conf" ]]; then
  say "no podman service set up in $dir: run podman-service.sh start --dir $dir first"
  exit 1
fi
# the podman CLI on the service's private storage
while IFS= read -r assignment; do
  export "${assignment?}"
done < <("$here/podman-service.sh" env --dir "$dir")

debian_mirror() {  # a mirror serving $suite from this machine's apt sources
  if [[ -n "${SIXNINES_DEBIAN_MIRROR:-}" ]]; then
    echo "$SIXNINES_DEBIAN_MIRROR"
    return
  fi
  local found=""
  if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
    found=$(awk -v suite="$suite" 'BEGIN { RS = "" }
      $0 ~ "(^|\n)Suites:([^\n]* )?" suite "( |\n|$)" && $0 !~ /(^|\n)Enabled: *no/ {
        if (match($0, /(^|\n)URIs: *[^ \n]+/)) {
          uri = substr($0, RSTART, RLENGTH); sub(/^\n?URIs: */, "", uri); print uri; exit
        }
      }' /etc/apt/sources.list.d/*.sources)
  fi
  if [[ -z "$found" ]]; then
    found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | sed -E 's/\[[^]]*\]//' \
      | awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }')
  fi
  echo "${found:-http://deb.debian.org/debian}"
}

exec 9>"$dir/base-image.lock"  # concurrent test sessions: one builds, the other waits
flock 9
if podman image exists "$image"; then
  say "$image is there"
  exit 0
fi
mirror=$(debian_mirror)
root=$(mktemp -d "$dir/rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
say "debootstrap $suite from $mirror (~40 s)"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
  "$suite" "$root" "$mirror" >"$dir/debootstrap.log" 2>&1 \
  || { say "debootstrap failed; see $dir/debootstrap.log"; tail -n 20 "$dir/debootstrap.log" >&2; exit 1; }
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
say "built $image"
