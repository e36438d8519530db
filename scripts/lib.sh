# Helpers shared by the service scripts (sourced, not run).

log() { echo "[$(basename "$0")] $*" >&2; }

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
