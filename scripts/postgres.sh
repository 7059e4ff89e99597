#!/usr/bin/env bash
# PostgreSQL for the batch queue's tests, benches and demos: Debian's server, one cluster that
# listens on loopback only, with a role `cua` that logs in by password.
#
#   scripts/postgres.sh up      install when missing, create the cluster on first start, start, wait
#   scripts/postgres.sh down    stop it (its data stays)
#   scripts/postgres.sh reset   stop it, delete its data, and start a fresh cluster
#   scripts/postgres.sh url     print the URL of the `cua` role (its password included)
#   scripts/postgres.sh status  exit 1 unless it accepts connections
#
# A throwaway cluster: state lives under $CUA_POSTGRES_STATE (default target/postgres, gone with
# `make clean`; `scripts/postgres.sh reset` starts afresh): the data directory
# (owned by the `postgres` user, which the server runs as), its socket directory, the log, and
# `url`, readable by its owner only. The server never listens beyond 127.0.0.1, and the `cua`
# role's password is random: another local user can reach the port but not log in.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
state="${CUA_POSTGRES_STATE:-$root/target/postgres}"
port="${CUA_POSTGRES_PORT:-55432}"
data="$state/data"
run="$state/run"
url_file="$state/url"

say() { echo "postgres: $*"; }
die() { echo "postgres: $*" >&2; exit 1; }

server_bin() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

# The server refuses to run as root: as root, it runs as Debian's `postgres` user.
as_server() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

install() {
  if ! server_bin >/dev/null; then
    [ "$(id -u)" = 0 ] || die "PostgreSQL is not installed; as root: apt-get install -y postgresql"
    say "installing PostgreSQL (Debian)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >/dev/null \
      || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >/dev/null; } \
      || die "cannot install PostgreSQL with apt-get"
    # Debian's package starts its own cluster on 5432; ours is separate and that one is not used.
  fi
  server_bin >/dev/null || die "PostgreSQL's server binaries are not under /usr/lib/postgresql/*/bin"
}

running() {
  "$(server_bin)/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null
}

create_cluster() {
  local bin owner password
  bin=$(server_bin)
  owner=$([ "$(id -u)" = 0 ] && echo postgres || id -un)
  mkdir -p "$state"
  chmod 0755 "$state"
  mkdir -p "$data" "$run"
  chown "$owner" "$data" "$run"
  chmod 0700 "$data"
  say "creating the cluster in $data"
  as_server "$bin/initdb" -D "$data" -U postgres --auth-local=peer --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  cat >"$data/pg_hba.conf" <<HBA
# Loopback only: the superuser through its own socket, the cua role by password.
local all postgres peer
host  all cua      127.0.0.1/32 scram-sha-256
HBA
  cat >>"$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$run'
max_connections = 200
fsync = on
CONF
  start_server
  password=$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
  # On stdin, not in psql's arguments, which every local user can read in /proc.
  echo "CREATE ROLE cua LOGIN CREATEDB PASSWORD '$password'" \
    | as_server "$bin/psql" -q -h "$run" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -f - >/dev/null
  (umask 077; echo "postgres://cua:$password@127.0.0.1:$port/postgres" >"$url_file")
}

start_server() {
  local bin
  bin=$(server_bin)
  touch "$state/postgres.log"
  [ "$(id -u)" = 0 ] && chown postgres "$state/postgres.log"
  as_server "$bin/pg_ctl" -D "$data" -l "$state/postgres.log" -w -t 60 start >/dev/null \
    || die "the server did not start; its log: $state/postgres.log"
}

case "${1:-}" in
  up)
    install
    if [ ! -f "$data/PG_VERSION" ] || [ ! -f "$url_file" ]; then
      [ -e "$data" ] && [ ! -f "$url_file" ] && rm -rf "$data"
      create_cluster
    elif ! running; then
      start_server
    fi
    for _ in $(seq 1 60); do running && break; sleep 0.5; done
    running || die "the server does not accept connections on 127.0.0.1:$port; its log: $state/postgres.log"
    say "ready on 127.0.0.1:$port (URL in $url_file)"
    ;;
  down)
    if [ -f "$data/PG_VERSION" ] && running; then
      as_server "$(server_bin)/pg_ctl" -D "$data" -m fast -w stop >/dev/null
      say "stopped"
    fi
    ;;
  reset)
    "$0" down
    rm -rf "$data" "$run" "$url_file"
    exec "$0" up
    ;;
  url)
    [ -f "$url_file" ] || die "no cluster yet: run scripts/postgres.sh up"
    cat "$url_file"
    ;;
  status)
    running && say "up on 127.0.0.1:$port" || { say "down"; exit 1; }
    ;;
  *)
    echo "usage: scripts/postgres.sh up|down|reset|url|status" >&2
    exit 2
    ;;
esac
