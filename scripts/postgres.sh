#!/usr/bin/env bash
# Start or stop a throw-away PostgreSQL server for the tests.
#
#   eval "$(scripts/postgres.sh start DIR)"   # prints export TEST_DATABASE_URL=...
#   scripts/postgres.sh stop DIR
#
# The cluster lives in DIR/pg (initdb'd fresh), listens on 127.0.0.1 only,
# on a free port, with trust authentication for local test users. It uses
# the system's server binaries (Debian: /usr/lib/postgresql/*/bin); when
# they are missing and we are root, it installs them with apt-get and says
# so. PostgreSQL refuses to run as root, so as root the server runs as an
# unprivileged user: "postgres" when it exists, else a system user
# "claimcheck-pg" created here (idempotently). PG_SETTINGS adds server
# settings for a measurement, e.g. PG_SETTINGS="-c shared_buffers=4GB".
# PG_HOST is the address it listens on (default 127.0.0.1): the partition
# tests run the script inside a network namespace of their own and give
# it the namespace's 10.x address.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

# as_pg_user runs a command as the cluster's owner.
as_pg_user() {
  if [ "$(id -u)" = 0 ]; then
    # From /: the caller's working directory may not be readable by it.
    (cd / && runuser -u "$pguser" -- "$@")
  else
    "$@"
  fi
}

start() {
  local dir=$1
  local bin; bin=$(pg_bindir)
  pguser=$(pg_run_user)
  mkdir -p "$dir/pg"
  chmod 755 "$dir"
  chown "$pguser" "$dir/pg"
  chmod 700 "$dir/pg"
  as_pg_user "$bin/initdb" -D "$dir/pg/data" -U postgres --auth=trust -E UTF8 --no-instructions >"$dir/pg/initdb.log" 2>&1 ||
    { cat "$dir/pg/initdb.log" >&2; return 1; }
  local port tries=0 host=${PG_HOST:-127.0.0.1}
  if [ "$host" != 127.0.0.1 ]; then
    # initdb trusts loopback only; the namespace's subnet is the test's own.
    echo "host all all samenet trust" >>"$dir/pg/data/pg_hba.conf"
  fi
  while :; do
    port=$(free_port)
    # -k: the socket goes into our dir, not /var/run/postgresql (which
    # may not exist or not be writable by this user).
    if as_pg_user "$bin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/server.log" -w -t 60 \
      -o "-h $host -p $port -k $dir/pg -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 ${PG_SETTINGS:-}" \
      start >/dev/null; then
      break
    fi
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then
      cat "$dir/pg/server.log" >&2
      return 1
    fi
  done
  echo "$bin" >"$dir/pg/bindir"
  echo "$pguser" >"$dir/pg/user"
  as_pg_user "$bin/psql" -h "$host" -p "$port" -U postgres -d postgres -q -c "CREATE DATABASE claimcheck_test" >/dev/null
  log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $host:$port (data in $dir/pg/data, run as $pguser)"
  echo "export TEST_DATABASE_URL='postgres://postgres@$host:$port/claimcheck_test?sslmode=disable'"
}

stop() {
  local dir=$1
  [ -f "$dir/pg/bindir" ] || return 0
  local bin; bin=$(cat "$dir/pg/bindir")
  pguser=$(cat "$dir/pg/user")
  # Our own server only: pg_ctl stops the postmaster whose pid file is in
  # our data directory.
  as_pg_user "$bin/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -f "$dir/pg/bindir"
}

case "${1:-}" in
  start) start "${2:?usage: $0 start DIR}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
