#!/usr/bin/env bash
# Several SSH "hosts" on one Linux machine: network namespaces joined by a bridge, each
# running its own sshd, so launchers and scenarios meet real remote hosts in tests.
#   testbed.sh up N [--dir DIR] [--prefix P] [--subnet A.B.C] [--skew hI=SECONDS,...]
#   testbed.sh down [--dir DIR] [--prefix P]
#   testbed.sh shape HOST --rate R [--delay D] [--loss L] [--dir DIR] [--prefix P]
#   testbed.sh shape HOST --clear [--dir DIR] [--prefix P]
#   testbed.sh status [--dir DIR] [--prefix P]
# Defaults: prefix sn, subnet 10.77.0, DIR /tmp/sixnines-testbed-P. Needs root.
# See README.md beside this file.
set -euo pipefail
shopt -s inherit_errexit   # a failure inside $(...) fails the command that used it
# ip, tc and sshd live in sbin, which a non-login root shell may lack
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"

readonly MARKER=".sixnines-testbed"   # marks DIR as ours, so `down` may delete it whole
readonly MAX_HOSTS=244                # addresses .11 .. .254
readonly NS_DEV="eth0"                # each host's end of its veth, inside its namespace

prefix="sn"
dir=""
subnet="10.77.0"
rate=""
delay=""
loss=""
clear_shaping=""
skew=""         # hI=SECONDS,...: hosts whose monotonic clock runs SECONDS ahead
burst=""        # tbf's bucket for --rate, in bytes
sshd_pids=()    # while `up` runs, one per host

say() { printf 'testbed: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

usage() {
  sed -n '4,9s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

# --- names -------------------------------------------------------------------------------
# Interface names must fit in 15 characters: with a prefix of at most 8, "P-h244-v" does.
ns_name() { printf '%s-h%s' "$prefix" "$1"; }
veth_name() { printf '%s-h%s-v' "$prefix" "$1"; }   # the bridge's end, in the root namespace
bridge_name() { printf '%s-br' "$prefix"; }
probe_name() { printf '%s-np%s' "$prefix" "$1"; }    # throwaway veth pair for the netem probe
host_address() { printf '%s.%s' "$subnet" "$((10 + $1))"; }

# --- checks ------------------------------------------------------------------------------
need_root() { [[ "$(id -u)" -eq 0 ]] || die "needs root (network namespaces, bridge, tc)"; }

need_tools() {  # arguments: tool:debian-package
  local pair missing=()
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:} (for ${pair%%:*})")
  done
  [[ ${#missing[@]} -eq 0 ]] || die "missing tools; apt-get install ${missing[*]}"
}

check_options() {
  [[ "$prefix" =~ ^[a-z][a-z0-9]{0,7}$ ]] \
    || die "--prefix must be 1-8 lowercase letters/digits starting with a letter (interface names fit in 15 chars)"
  [[ -z "$skew" || "$skew" =~ ^h[0-9]+=[0-9]+(,h[0-9]+=[0-9]+)*$ ]] \
    || die "--skew takes hI=SECONDS[,hJ=SECONDS...] (whole seconds ahead), e.g. h3=7"
  [[ -n "$dir" ]] || dir="/tmp/sixnines-testbed-$prefix"
  dir="$(realpath -m -- "$dir")"
  # the path goes unquoted into sshd_config, known_hosts and YAML flow mappings
  [[ "$dir" =~ ^/[A-Za-z0-9._/-]+$ ]] || die "--dir may only hold letters, digits and . _ / -"
}

check_subnet() {
  if ! [[ "$subnet" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] \
      || ((BASH_REMATCH[1] > 255 || BASH_REMATCH[2] > 255 || BASH_REMATCH[3] > 255)); then
    die "--subnet takes the first three octets, e.g. 10.77.0"
  fi
  # a second bridge on a routed /24 would make the hosts unreachable in silence
  [[ -z "$(ip -4 route show "$subnet.0/24")" ]] \
    || die "$subnet.0/24 is already routed here (another test bed?): pick another --subnet"
}

# --- discovery (works on whatever part of a bed exists) ------------------------------------
namespaces() {  # this prefix's host namespaces, one a line
  ip netns list | awk -v re="^${prefix}-h[0-9]+\$" '$1 ~ re { print $1 }'
}

links() {  # this prefix's links in the root namespace, one a line
  ip -o link show | awk -F': ' -v re="^${prefix}-(br|h[0-9]+-v|np[01])\$" '
    { sub(/@.*/, "", $2) } $2 ~ re { print $2 }'
}

# Pipelines that end in `grep -q` can fail under pipefail when grep quits early, so output
# is captured first and matched in bash.
ns_exists() {
  local all
  all="$(namespaces)"
  [[ $'\n'"$all"$'\n' == *$'\n'"$1"$'\n'* ]]
}

link_exists() { ip link show dev "$1" >/dev/null 2>&1; }

ns_address() {  # the address of a host, read from its namespace
  ip -n "$1" -4 -o addr show dev "$NS_DEV" | awk '{ sub(/\/.*/, "", $4); print $4; exit }'
}

alive() {  # a zombie counts as gone: an init that is slow to reap must not stall `down`
  [[ -e "/proc/$1" ]] && ! grep -qs '^State:[[:space:]]*Z' "/proc/$1/status"
}

# --- processes -----------------------------------------------------------------------------
any_alive() {
  local pid
  for pid in "$@"; do alive "$pid" && return 0; done
  return 1
}

terminate() {  # TERM the given pids, KILL whoever is still there after 2 s
  local tries
  [[ $# -gt 0 ]] || return 0
  kill -TERM "$@" 2>/dev/null || true   # some may have exited meanwhile
  for ((tries = 0; tries < 40; tries++)); do
    any_alive "$@" || return 0
    sleep 0.05
  done
  kill -KILL "$@" 2>/dev/null || true
}

stop_sshds() {  # by the pid files, checking each pid is still that sshd (pids get reused)
  local pidfile pid cmdline pids=()
  for pidfile in "$dir"/h*/sshd.pid; do
    [[ -f "$pidfile" ]] || continue
    pid="$(<"$pidfile")"
    if ! [[ "$pid" =~ ^[0-9]+$ ]] || ! alive "$pid"; then continue; fi
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"   # it may just have gone
    [[ "$cmdline" != *"${pidfile%/sshd.pid}/sshd_config"* ]] || pids+=("$pid")
  done
  terminate "${pids[@]}"
}

stop_namespace_processes() {  # sessions outlive their sshd; so does anything run inside
  local ns="$1" round pids
  for ((round = 0; round < 5; round++)); do   # a dying process may have forked another
    mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
    [[ ${#pids[@]} -gt 0 ]] || return 0
    terminate "${pids[@]}"
  done
  die "processes keep appearing in namespace $ns: ${pids[*]}"
}

# --- up --------------------------------------------------------------------------------------
refuse_if_present() {
  if [[ -n "$(namespaces)" || -n "$(links)" || -e "$dir/$MARKER" ]]; then
    die "a test bed with prefix $prefix is already up or left over: run '$0 down --prefix $prefix --dir $dir' first"
  fi
  if [[ -e "$dir" && -n "$(ls -A -- "$dir")" ]]; then
    die "$dir exists and is not empty: pick another --dir"
  fi
}

make_bridge() {
  local bridge
  bridge="$(bridge_name)"
  # without br_netfilter's calls a host firewall (e.g. FORWARD policy DROP) can't cut the
  # hosts off from each other
  ip link add "$bridge" type bridge nf_call_iptables 0 nf_call_ip6tables 0 nf_call_arptables 0
  ip addr add "$subnet.1/24" dev "$bridge"
  ip link set "$bridge" up
}

make_namespace() {  # host $1: namespace, veth to the bridge, address, loopback
  local ns veth address
  ns="$(ns_name "$1")"
  veth="$(veth_name "$1")"
  address="$(host_address "$1")"
  ip netns add "$ns"
  ip link add "$veth" type veth peer name "$NS_DEV" netns "$ns"
  ip link set "$veth" master "$(bridge_name)" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$address/24" dev "$NS_DEV"
  ip -n "$ns" link set "$NS_DEV" up
}

write_sshd_config() {  # host $1; given with -f, so the system's sshd_config is never read
  local home="$dir/h$1"
  cat >"$home/sshd_config" <<EOF
ListenAddress $(host_address "$1"):22
HostKey $home/ssh_host_ed25519_key
PidFile $home/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
PrintMotd no
MaxStartups 100
SetEnv SHLVL=1
EOF
}

skew_of() {  # seconds host $1's clocks run ahead (0 unless --skew names it)
  local entry
  for entry in ${skew//,/ }; do
    [[ "${entry%%=*}" != "h$1" ]] || { printf '%s' "${entry#*=}"; return; }
  done
  printf '0'
}

start_sshd() {  # host $1, in its namespace under its own hostname (and clock, if skewed)
  local home="$dir/h$1" ns sshd seconds clock=()
  ns="$(ns_name "$1")"
  seconds="$(skew_of "$1")"
  # a time namespace offsets CLOCK_MONOTONIC and CLOCK_BOOTTIME for everything sshd
  # starts: a host with its own clock, as a separate machine has
  [[ "$seconds" == 0 ]] || clock=(--time --monotonic "$seconds" --boottime "$seconds")
  sshd="$(command -v sshd)"   # sshd re-executes itself and insists on an absolute path
  # setsid: a Ctrl-C meant for the caller must not take the hosts down with it (our
  # children lead no process group, so setsid execs and $! stays sshd's pid); the
  # redirections let a caller that captures our output see its end
  # shellcheck disable=SC2016  # $1.. are the inner shell's arguments
  setsid ip netns exec "$ns" unshare --uts "${clock[@]}" \
    sh -c 'hostname "$1" && exec "$2" -D -e -f "$3"' sh "$ns" "$sshd" "$home/sshd_config" \
    </dev/null >>"$home/sshd.log" 2>&1 &
  sshd_pids+=("$!")
}

make_host() {  # host $1: namespace, key, config, sshd
  local home="$dir/h$1"
  make_namespace "$1"
  mkdir -p "$home"
  ssh-keygen -q -t ed25519 -N '' -C "$(ns_name "$1")" -f "$home/ssh_host_ed25519_key"
  write_sshd_config "$1"
  start_sshd "$1"
}

wait_for_sshd() {  # host $1 with sshd pid $2: until it accepts TCP connections
  local address deadline=$((SECONDS + 10))
  address="$(host_address "$1")"
  # shellcheck disable=SC2016  # $1 is the inner shell's argument
  until timeout 1 bash -c 'exec 3<>"/dev/tcp/$1/22"' _ "$address" 2>/dev/null; do
    if ! alive "$2" || ((SECONDS >= deadline)); then
      tail -n 5 "$dir/h$1/sshd.log" >&2 || true
      die "sshd of h$1 ($address) did not start"
    fi
    sleep 0.02
  done
}

write_client_files() {  # known_hosts for strict host-key checking, the inventory
  local i count="$1"
  : >"$dir/known_hosts"
  printf 'hosts:\n' >"$dir/hosts.yaml"
  for ((i = 1; i <= count; i++)); do
    printf '%s %s\n' "$(host_address "$i")" \
      "$(cut -d' ' -f1,2 "$dir/h$i/ssh_host_ed25519_key.pub")" >>"$dir/known_hosts"
    printf '  - {name: h%s, address: %s, user: root, key: %s, known_hosts: %s}\n' \
      "$i" "$(host_address "$i")" "$dir/id_ed25519" "$dir/known_hosts" >>"$dir/hosts.yaml"
  done
}

abort_up() {  # EXIT trap while `up` runs: leave nothing half made
  local status=$?
  say "bring-up failed; removing what was made"
  teardown
  exit "$status"
}

cmd_up() {
  local count="$1" i
  [[ "$count" =~ ^[1-9][0-9]*$ && "$count" -le "$MAX_HOSTS" ]] \
    || die "up takes a number of hosts, 1..$MAX_HOSTS"
  need_tools ip:iproute2 sshd:openssh-server ssh-keygen:openssh-client unshare:util-linux \
    setsid:util-linux timeout:coreutils
  refuse_if_present
  check_subnet
  trap abort_up EXIT
  mkdir -p "$dir"
  chmod 700 "$dir"
  touch "$dir/$MARKER"
  mkdir -p /run/sshd   # sshd's privilege-separation directory
  [[ -f "$dir/id_ed25519" ]] \
    || ssh-keygen -q -t ed25519 -N '' -C "sixnines-testbed-$prefix" -f "$dir/id_ed25519"
  cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
  make_bridge
  for ((i = 1; i <= count; i++)); do make_host "$i"; done
  for ((i = 1; i <= count; i++)); do wait_for_sshd "$i" "${sshd_pids[i - 1]}"; done
  write_client_files "$count"
  trap - EXIT
  printf '%s\n' "$dir/hosts.yaml"
}

# --- down ------------------------------------------------------------------------------------
teardown() {
  local ns link hosts bridged
  [[ ! -d "$dir" ]] || stop_sshds
  mapfile -t hosts < <(namespaces)
  for ns in "${hosts[@]}"; do stop_namespace_processes "$ns"; done
  # links first: a namespace's own links vanish only asynchronously after `ip netns del`
  mapfile -t bridged < <(links)
  for link in "${bridged[@]}"; do
    # deleting one veth end takes its peer, and so does a namespace that goes away
    ip link del "$link" 2>/dev/null || ! link_exists "$link"
  done
  for ns in "${hosts[@]}"; do ip netns del "$ns"; done
  if [[ -f "$dir/$MARKER" ]]; then
    rm -rf -- "$dir"
  elif [[ -e "$dir" ]]; then
    say "left $dir in place: it was not made by $0"
  fi
}

cmd_down() {
  need_tools ip:iproute2
  teardown
}

# --- shape -----------------------------------------------------------------------------------
rate_bits() {  # tc's rate units (bit, kbit, mbit, gbit, bps = bytes/s, ...) -> bits/s
  local number unit scale
  [[ "${1,,}" =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?)(bit|bps)$ ]] \
    || die "--rate takes a number with a unit tc knows: bit kbit mbit gbit bps kbps mbps gbps"
  number="${BASH_REMATCH[1]}"
  scale="${BASH_REMATCH[3]}"
  unit="${BASH_REMATCH[4]}"
  awk -v n="$number" -v s="$scale" -v u="$unit" 'BEGIN {
    f = (s == "k") ? 1e3 : (s == "m") ? 1e6 : (s == "g") ? 1e9 : (s == "t") ? 1e12 : 1
    printf "%d", n * f * (u == "bps" ? 8 : 1) }'
}

tbf_burst() {  # bytes for rate $1: 4 ms worth, at least 64 KiB, so timer slack and
  # segmentation offload (64 KiB packets) don't starve the rate
  local bits
  bits="$(rate_bits "$1")"
  awk -v b="$bits" 'BEGIN { x = b / 8 * 0.004; printf "%d", (x > 65536 ? x : 65536) }'
}

have_netem() {  # the kernel may lack sch_netem (this machine's does): ask it, on a throwaway pair
  local probe ok=0
  probe="$(probe_name 0)"
  ip link add "$probe" type veth peer name "$(probe_name 1)"
  tc qdisc add dev "$probe" root netem delay 1ms 2>/dev/null || ok=1
  ip link del "$probe"
  return "$ok"
}

tc_in() {  # tc in namespace $1 ("" for the root namespace)
  local ns="$1"
  shift
  if [[ -n "$ns" ]]; then tc -n "$ns" "$@"; else tc "$@"; fi
}

clear_dev() {  # namespace $1 ("" for root), device $2: back to the default qdisc
  local root
  root="$(tc_in "$1" qdisc show dev "$2" root)"
  [[ ! "$root" =~ ^qdisc\ (tbf|netem)\  ]] || tc_in "$1" qdisc del dev "$2" root
}

shape_dev() {  # namespace $1 ("" for root), device $2: the options given to `shape`
  local ns="$1" dev="$2" netem=() tbf=()
  [[ -z "$delay" ]] || netem+=(delay "$delay")
  [[ -z "$loss" ]] || netem+=(loss "$loss")
  [[ -z "$rate" ]] || tbf=(tbf rate "$rate" burst "$burst" latency 40ms)
  clear_dev "$ns" "$dev"
  if [[ ${#netem[@]} -eq 0 ]]; then
    tc_in "$ns" qdisc add dev "$dev" root "${tbf[@]}"
    return
  fi
  tc_in "$ns" qdisc add dev "$dev" root handle 1: netem "${netem[@]}"
  [[ ${#tbf[@]} -eq 0 ]] || tc_in "$ns" qdisc add dev "$dev" parent 1:1 handle 10: "${tbf[@]}"
}

host_index() {  # "h2" or "P-h2" -> 2, for a host that exists
  local index="${1#"$prefix"-}"
  [[ "$index" =~ ^h([0-9]+)$ ]] || die "no such host: $1 (hosts are h1, h2, ...)"
  ns_exists "$(ns_name "${BASH_REMATCH[1]}")" \
    || die "no such host: $1 (is the test bed with prefix $prefix up?)"
  printf '%s' "${BASH_REMATCH[1]}"
}

cmd_shape() {
  local index ns veth
  need_tools ip:iproute2 tc:iproute2
  index="$(host_index "$1")"
  ns="$(ns_name "$index")"
  veth="$(veth_name "$index")"
  if [[ -n "$clear_shaping" ]]; then
    [[ -z "$rate$delay$loss" ]] || die "--clear takes no --rate, --delay or --loss"
    clear_dev "$ns" "$NS_DEV"
    clear_dev "" "$veth"
    return
  fi
  [[ -n "$rate$delay$loss" ]] || die "shape takes --rate, --delay, --loss or --clear"
  [[ -z "$rate" ]] || burst="$(tbf_burst "$rate")"   # a bad rate fails before any change
  if [[ -n "$delay$loss" ]] && ! have_netem; then
    die "this kernel has no netem (sch_netem), so --delay and --loss are unavailable here; rate shaping (--rate) works"
  fi
  shape_dev "$ns" "$NS_DEV"   # what the host sends
  shape_dev "" "$veth"        # what the host receives
}

# --- status ----------------------------------------------------------------------------------
cmd_status() {
  local ns pid address shaping hosts
  need_tools ip:iproute2 tc:iproute2
  mapfile -t hosts < <(namespaces)
  if [[ ${#hosts[@]} -eq 0 ]]; then
    say "no test bed with prefix $prefix is up"
    return 0
  fi
  printf '%-6s %-12s %-16s %-14s %s\n' HOST NAMESPACE ADDRESS SSHD SHAPING
  for ns in "${hosts[@]}"; do
    pid="$(cat "$dir/${ns#"$prefix"-}/sshd.pid" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && alive "$pid"; then pid="$pid alive"; else pid="${pid:-?} dead"; fi
    address="$(ns_address "$ns")"
    shaping="$(tc -n "$ns" qdisc show dev "$NS_DEV" | awk '$2 != "noqueue" {
      $1 = $3 = ""; sub(/ (root|parent [0-9a-f:]+) refcnt [0-9]+/, ""); $1 = $1; print }' \
      | paste -sd ';')"
    printf '%-6s %-12s %-16s %-14s %s\n' "${ns#"$prefix"-}" "$ns" "${address:-?}" "$pid" \
      "${shaping:-none}"
  done
}

# --- command line ----------------------------------------------------------------------------
parse_options() {  # command $1, then its options
  local command="$1"
  shift
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --dir | --prefix | --subnet | --skew | --rate | --delay | --loss)
        [[ $# -ge 2 ]] || die "$1 needs a value"
        case "$1:$command" in
          --dir:* | --prefix:*) ;;
          --subnet:up | --skew:up | --rate:shape | --delay:shape | --loss:shape) ;;
          *) die "$1 is not an option of '$command'" ;;
        esac
        printf -v "${1#--}" '%s' "$2"   # --dir sets $dir, --rate $rate, ...
        shift 2
        ;;
      --clear)
        [[ "$command" == shape ]] || die "--clear is an option of 'shape'"
        clear_shaping=1
        shift
        ;;
      *) die "unknown argument: $1" ;;
    esac
  done
}

main() {
  local command="${1:-}" argument=""
  [[ $# -gt 0 ]] && shift
  case "$command" in
    up | shape)
      [[ $# -gt 0 && "$1" != --* ]] || usage
      argument="$1"
      shift
      ;;
    down | status) ;;
    *) usage ;;
  esac
  parse_options "$command" "$@"
  check_options
  need_root
  case "$command" in
    up) cmd_up "$argument" ;;
    down) cmd_down ;;
    shape) cmd_shape "$argument" ;;
    status) cmd_status ;;
  esac
}

main "$@"
