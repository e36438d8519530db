#!/usr/bin/env bash
# Start or stop a throw-away highly available PostgreSQL for the failover
# tests: one etcd and three Patroni nodes, each with its PostgreSQL, all
# on 127.0.0.1 on free ports, in synchronous mode.
#
#   eval "$(scripts/patroni.sh start DIR)"   # prints export TEST_PATRONI_DSN=... and more
#   scripts/patroni.sh start-node DIR node1  # (re)start one node's Patroni
#   scripts/patroni.sh stop DIR
#
# Everything lives in DIR/patroni: etcd's data and log, and per node
# DIR/patroni/nodeN/{patroni.yml,patroni.pid,patroni.log,data}; a node's
# PostgreSQL pid is the first line of its data/postmaster.pid. The
# variables printed:
#
#   TEST_PATRONI_DSN    multi-host URL of the three nodes with
#                       target_session_attrs=read-write (the primary)
#   TEST_PATRONI_REST   the three REST API URLs, comma separated
#   TEST_PATRONI_DIR    DIR/patroni (the layout above)
#   TEST_PATRONI_CTL    a patronictl config (patronictl -c FILE list)
#
# Patroni and etcd are Debian's packages (patroni, etcd-server),
# installed with apt-get when missing and we are root; PostgreSQL's server
# binaries are found (or installed) as scripts/postgres.sh does. Patroni
# and PostgreSQL refuse to run as root: as root they run as the user
# scripts/postgres.sh uses (pg_run_user). stop ends what start recorded,
# by pid, and removes nothing outside DIR.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

scope=claimcheck-test

install_tools() {
  if command -v patroni >/dev/null && command -v patronictl >/dev/null && command -v etcd >/dev/null; then
    return 0
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "patroni or etcd not found; install the patroni and etcd-server packages"
    return 1
  fi
  log "installing patroni and etcd-server with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends patroni etcd-server >&2 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends patroni etcd-server >&2; }
}

# start_etcd runs etcd on two free ports, retried on new ones when the
# start fails (a port taken between the check and the bind).
start_etcd() {
  local tries=0 client peer
  while :; do
    client=$(free_port) peer=$(free_port)
    rm -rf "$root/etcd"
    etcd --name claimcheck-test --data-dir "$root/etcd" \
      --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "claimcheck-test=http://127.0.0.1:$peer" --initial-cluster-state new >"$root/etcd.log" 2>&1 &
    echo $! >"$root/etcd.pid"
    local i
    for i in $(seq 1 100); do
      if etcd_healthy "$client"; then echo "$client" >"$root/etcd.port"; return 0; fi
      kill -0 "$(cat "$root/etcd.pid")" 2>/dev/null || break
      sleep 0.1 # waiting for our etcd to answer
    done
    stop_recorded "$root/etcd.pid"
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then cat "$root/etcd.log" >&2; return 1; fi
  done
}

etcd_healthy() {
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1).read()' \
    "http://127.0.0.1:$1/health" >/dev/null 2>&1
}

# write_node_config writes nodeN's patroni.yml with its PostgreSQL and
# REST ports.
write_node_config() {
  local node=$1 pgport=$2 restport=$3 bin=$4 etcdport=$5
  local d="$root/$node"
  mkdir -p "$d"
  cat >"$d/patroni.yml" <<EOF
scope: $scope
namespace: /claimcheck/
name: $node
restapi:
  listen: 127.0.0.1:$restport
  connect_address: 127.0.0.1:$restport
etcd3:
  hosts: 127.0.0.1:$etcdport
bootstrap:
  dcs:
    # Short timings, for tests: a dead leader's key expires after ttl
    # seconds and a replica takes over at its next loop, so a failover
    # takes about ttl + loop_wait rather than production's 30 + 10.
    # Patroni needs loop_wait + 2 * retry_timeout <= ttl; 10 s leaves a
    # leader on a busy two-core test machine time to renew its key, so
    # a slow loop does not fail it over when nothing happened.
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    # A commit is acknowledged only once a standby has it, so a failover
    # loses no acknowledged commit.
    synchronous_mode: true
    postgresql:
      # The old primary rejoins as a replica: rewound when its history
      # went past the new primary's (a kill -9 mid-write).
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: "on"
        max_connections: 200
        # A test cluster: a crashed process keeps its writes in the OS's
        # cache, only a crash of the machine would need fsync.
        fsync: "off"
  initdb:
    - encoding: UTF8
    - auth: trust
  pg_hba:
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$pgport
  connect_address: 127.0.0.1:$pgport
  data_dir: $d/data
  bin_dir: $bin
  pgpass: $d/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: $d
log:
  level: INFO
EOF
  echo "$pgport" >"$d/pgport"
  echo "$restport" >"$d/restport"
}

# start_node starts one node's Patroni in the background, as the nodes'
# user, its pid in the node's patroni.pid.
start_node() {
  local d="$root/$1"
  [ -f "$d/patroni.yml" ] || { log "no node $1 in $root"; return 1; }
  # From / (the caller's working directory may not be readable by that
  # user); the subshell execs setpriv, which execs Patroni, so $! is
  # Patroni's own pid.
  if [ "$(id -u)" = 0 ]; then
    local pguser; pguser=$(cat "$root/user")
    (cd / && exec setpriv --reuid="$pguser" --regid="$pguser" --init-groups -- patroni "$d/patroni.yml") >>"$d/patroni.log" 2>&1 &
  else
    (cd / && exec patroni "$d/patroni.yml") >>"$d/patroni.log" 2>&1 &
  fi
  echo $! >"$d/patroni.pid"
}

# psql_at runs one query on the node listening on port.
psql_at() {
  psql -h 127.0.0.1 -p "$1" -U postgres -d postgres -XAtq -c "$2" 2>/dev/null
}

# ready reports a leader whose both replicas stream, one synchronously,
# printing the leader's port.
ready() {
  local n port
  for n in node1 node2 node3; do
    port=$(cat "$root/$n/pgport")
    if [ "$(psql_at "$port" 'SELECT pg_is_in_recovery()')" = f ] &&
      [ "$(psql_at "$port" "SELECT count(*) FILTER (WHERE state = 'streaming') || ' ' || count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication")" = "2 1" ]; then
      echo "$port"; return 0
    fi
  done
  return 1
}

start() {
  local dir=$1
  root="$dir/patroni"
  install_tools
  local bin; bin=$(pg_bindir)
  mkdir -p "$root"
  chmod 755 "$dir"
  pg_run_user >"$root/user"
  start_etcd
  local etcdport; etcdport=$(cat "$root/etcd.port")
  local i p taken=" $etcdport " ports=()
  while [ ${#ports[@]} -lt 6 ]; do # six distinct ports: three PostgreSQL, three REST
    p=$(free_port)
    case "$taken" in *" $p "*) continue ;; esac
    taken+="$p " ports+=("$p")
  done
  local rest=("${ports[@]:3}")
  ports=("${ports[@]:0:3}")
  for i in 1 2 3; do
    write_node_config "node$i" "${ports[$((i - 1))]}" "${rest[$((i - 1))]}" "$bin" "$etcdport"
  done
  chown -R "$(cat "$root/user")" "$root"/node*
  cat >"$root/patronictl.yml" <<EOF
scope: $scope
namespace: /claimcheck/
etcd3:
  hosts: 127.0.0.1:$etcdport
EOF
  for i in 1 2 3; do start_node "node$i"; done
  # Up to 3 minutes: three initdb/basebackups on a busy machine. A node
  # whose Patroni exits (its port taken between the check and the bind)
  # is started again; it retries its PostgreSQL start itself.
  local leader="" t
  for t in $(seq 1 360); do
    if leader=$(ready); then break; fi
    for i in 1 2 3; do
      kill -0 "$(cat "$root/node$i/patroni.pid")" 2>/dev/null || start_node "node$i"
    done
    sleep 0.5 # waiting for the cluster to form
  done
  if [ -z "$leader" ]; then
    for i in 1 2 3; do log "node$i:"; tail -20 "$root/node$i/patroni.log" >&2; done
    return 1
  fi
  psql_at "$leader" "CREATE DATABASE claimcheck_test" >/dev/null
  log "Patroni $(patroni --version | awk '{print $2}'): leader on 127.0.0.1:$leader, nodes on ${ports[*]} (REST ${rest[*]}), etcd on $etcdport; in $root"
  local hosts="127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
  echo "export TEST_PATRONI_DSN='postgres://postgres@$hosts/claimcheck_test?sslmode=disable&target_session_attrs=read-write'"
  echo "export TEST_PATRONI_REST='http://127.0.0.1:${rest[0]},http://127.0.0.1:${rest[1]},http://127.0.0.1:${rest[2]}'"
  echo "export TEST_PATRONI_DIR='$root'"
  echo "export TEST_PATRONI_CTL='$root/patronictl.yml'"
}

stop() {
  root="$1/patroni"
  [ -d "$root" ] || return 0
  local i d pid
  # Patroni stops its PostgreSQL on TERM; one that did not (killed by a
  # test, or past stop_recorded's wait) is stopped here, by the pid file
  # in its data directory.
  for i in 1 2 3; do stop_recorded "$root/node$i/patroni.pid"; done
  for i in 1 2 3; do
    d="$root/node$i/data"
    if [ -f "$d/postmaster.pid" ]; then
      pid=$(head -1 "$d/postmaster.pid")
      kill -INT "$pid" 2>/dev/null || true # fast shutdown
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1 # waiting for our PostgreSQL to exit
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  stop_recorded "$root/etcd.pid"
}

case "${1:-}" in
  start) start "${2:?usage: $0 start DIR}" ;;
  start-node) root="${2:?usage: $0 start-node DIR NODE}/patroni"; start_node "${3:?usage: $0 start-node DIR NODE}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  *) echo "usage: $0 start|start-node|stop DIR [NODE]" >&2; exit 2 ;;
esac
