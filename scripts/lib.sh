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
