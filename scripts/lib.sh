# Helpers shared by the service scripts (sourced, not run).

log() { echo "[$(basename "$0")] $*" >&2; }

# build_base_server REV WORK builds the server at commit REV, from a
# detached worktree WORK/base, into WORK/claimcheck-base: the baseline a
# side-by-side benchmark runs beside this tree's server.
# remove_base_worktree WORK removes that worktree again (for a cleanup
# trap; nothing there: nothing to do).
build_base_server() {
  log "building the server at $1"
  git worktree add --detach "$2/base" "$1" >/dev/null 2>&1
  (cd "$2/base" && GOWORK=off go build -o "$2/claimcheck-base" ./cmd/claimcheck)
}

remove_base_worktree() {
  git worktree remove --force "$1/base" >/dev/null 2>&1 || true
}

# free_port prints a TCP port nothing listens on at 127.0.0.1. Another
# process may take it before we bind; the callers retry on a failed start.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"; return 0
    fi
  done
}

# serve_url LOG prints the URL a `claimcheck serve --listen 127.0.0.1:0`
# started in the background reports in its log LOG, waiting up to 10 s;
# it prints the log and fails when none comes.
serve_url() {
  local u
  for _ in $(seq 1 100); do
    u=$(grep -o 'url=http://[0-9.:]*' "$1" | head -1 | cut -d= -f2 || true)
    [ -n "$u" ] && { echo "$u"; return 0; }
    sleep 0.1
  done
  cat "$1" >&2
  return 1
}

# stop_recorded PIDFILE ends the server whose pid a start recorded in
# PIDFILE (only that one): TERM, up to 10 s for it to exit, then KILL;
# the file is removed. Nothing recorded: nothing to do.
stop_recorded() {
  [ -f "$1" ] || return 0
  local pid; pid=$(cat "$1")
  if kill "$pid" 2>/dev/null; then
    local i
    for i in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1 # waiting for our own server to exit
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

# pg_find_bindir prints the directory of the PostgreSQL server binaries
# (Debian: /usr/lib/postgresql/*/bin, newest first; else the PATH);
# pg_bindir installs the postgresql package with apt-get when they are
# missing and we are root.
pg_find_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
      echo "$d"; return 0
    fi
  done
  if command -v initdb >/dev/null && command -v postgres >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"; return 0
  fi
  return 1
}

pg_bindir() {
  if pg_find_bindir; then return 0; fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "PostgreSQL server binaries not found (initdb, pg_ctl, postgres); install the postgresql package"
    return 1
  fi
  log "PostgreSQL server binaries not found: installing the postgresql package with apt-get"
  # The package's post-install may create and start a default cluster on
  # port 5432; we never use it (our own cluster runs on a free port).
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
  pg_find_bindir
}

# pg_run_user prints the user PostgreSQL (and Patroni) run as: this one,
# or as root (PostgreSQL refuses to run as root) "postgres" when it
# exists, else a system user "claimcheck-pg" created here (idempotently).
pg_run_user() {
  if [ "$(id -u)" != 0 ]; then id -un; return 0; fi
  if getent passwd postgres >/dev/null; then echo postgres; return 0; fi
  local u=claimcheck-pg
  if ! getent passwd "$u" >/dev/null; then
    log "creating system user $u to run PostgreSQL (it refuses to run as root)"
    useradd --system --no-create-home --shell /usr/sbin/nologin "$u" 2>/dev/null ||
      getent passwd "$u" >/dev/null
  fi
  echo "$u"
}
