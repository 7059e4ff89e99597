#!/usr/bin/env bash
# The conformance apps: WordPress (with MariaDB) and Redmine (with SQLite), both from Debian's
# packages, each started on loopback with its own seeded data.
#
#   conformance/apps.sh up      install what is missing, seed on first start, start, wait healthy
#   conformance/apps.sh down    stop both (their data stays)
#   conformance/apps.sh reset   stop, delete the data, and start from a fresh seed
#   conformance/apps.sh status  print what runs where; exit 1 when either is down
#
# State lives under target/conformance/ (MariaDB's data directory and socket, the logs, the pid
# files) and /var/lib/redmine/cua-conformance (Debian's Redmine reads its instances from there).
# The ports and credentials are in conformance/apps.env, which the tests read as well.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=apps.env
source "$here/apps.env"

state="${CUA_CONFORMANCE_STATE:-$root/target/conformance}"
db_dir="$state/mariadb"
db_socket="$state/mariadb.sock"
redmine_instance=$REDMINE_INSTANCE
redmine_dir="/var/lib/redmine/$redmine_instance"
wp_config=/etc/wordpress/config-127.0.0.1.php
wordpress_url="http://127.0.0.1:$WORDPRESS_PORT/"
redmine_url="http://127.0.0.1:$REDMINE_PORT/"

say() { echo "conformance: $*"; }
die() { echo "conformance: $*" >&2; exit 1; }

install_packages() {
  local missing=()
  command -v mariadbd >/dev/null || missing+=(mariadb-server)
  command -v php >/dev/null || missing+=(php-cli)
  php -m 2>/dev/null | grep -qx mysqli || missing+=(php-mysql)
  [ -f /usr/share/wordpress/wp-load.php ] || missing+=(wordpress)
  [ -d /usr/share/wordpress/wp-content/themes/twentytwentyone ] \
    || [ -d /var/lib/wordpress/wp-content/themes/twentytwentyone ] \
    || missing+=(wordpress-theme-twentytwentyone)
  [ -f /usr/share/redmine/config.ru ] || missing+=(redmine redmine-sqlite)
  command -v rackup >/dev/null || missing+=(ruby-rack)
  ruby -e 'require "webrick"' 2>/dev/null || missing+=(ruby-webrick)
  command -v sqlite3 >/dev/null || missing+=(sqlite3)
  command -v curl >/dev/null || missing+=(curl)
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} (Debian)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || die "apt-get install ${missing[*]} failed: install them by hand and run again"
  fi
}

# A pid file names a live process of ours: after a reboot it may name someone else's.
alive() {
  [ -f "$1" ] || return 1
  local pid; pid=$(cat "$1")
  kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qE 'mariadbd|php|rackup|ruby'
}

# A server of ours is not running, so nothing may answer on its port: an answer would come
# from someone else's process, and the tests would drive that instead.
port_free() { # port, name
  if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$1/"; then
    die "port $1 for $2 is taken by another process: stop it (ss -ltnp 'sport = :$1') or change conformance/apps.env"
  fi
}

wait_for() { # url, name, log
  for _ in $(seq 1 120); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ]; then return 0; fi
    sleep 0.5
  done
  tail -20 "$3" >&2 || true
  die "$2 did not answer 200 at $1 within 60 s (its log is $3)"
}

mariadb_up() {
  if alive "$state/mariadb.pid"; then return 0; fi
  if [ ! -d "$db_dir/mysql" ]; then
    say "initialising MariaDB in $db_dir"
    mkdir -p "$db_dir"
    mariadb-install-db --no-defaults --datadir="$db_dir" --user=root \
      --auth-root-authentication-method=socket --skip-test-db >"$state/mariadb-install.log" 2>&1 \
      || { tail -20 "$state/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
  fi
  mariadbd --no-defaults --datadir="$db_dir" --socket="$db_socket" --skip-networking \
    --user=root --pid-file="$state/mariadb.pid" --log-error="$state/mariadb.log" \
    </dev/null >>"$state/mariadb.log" 2>&1 &
  for _ in $(seq 1 120); do
    mariadb --no-defaults --socket="$db_socket" -uroot -e 'SELECT 1' >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  tail -20 "$state/mariadb.log" >&2 || true
  die "MariaDB did not accept connections on $db_socket within 60 s"
}

wordpress_up() {
  if alive "$state/wordpress.pid"; then wait_for "${wordpress_url}wp-login.php" WordPress "$state/wordpress.log"; return 0; fi
  mariadb_up
  mariadb --no-defaults --socket="$db_socket" -uroot -e "
    CREATE DATABASE IF NOT EXISTS cua_wordpress CHARACTER SET utf8mb4;
    CREATE USER IF NOT EXISTS 'cua_wordpress'@'localhost' IDENTIFIED BY 'conformance-db';
    GRANT ALL ON cua_wordpress.* TO 'cua_wordpress'@'localhost';"
  # Debian's wp-config.php picks /etc/wordpress/config-<host>.php by the request's host.
  local keys
  keys=$(for k in AUTH_KEY SECURE_AUTH_KEY LOGGED_IN_KEY NONCE_KEY AUTH_SALT SECURE_AUTH_SALT LOGGED_IN_SALT NONCE_SALT; do
    echo "define('$k', '$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')');"; done)
  # The whole DB_HOST line must match: another checkout's socket path can contain this one.
  [ -f "$wp_config" ] && grep -qxF "define('DB_HOST', 'localhost:$db_socket');" "$wp_config" ||
    cat >"$wp_config" <<EOF
<?php
// Written by cua's conformance/apps.sh: the seeded WordPress the conformance suite drives.
define('DB_NAME', 'cua_wordpress');
define('DB_USER', 'cua_wordpress');
define('DB_PASSWORD', 'conformance-db');
define('DB_HOST', 'localhost:$db_socket');
define('WP_HOME', 'http://127.0.0.1:$WORDPRESS_PORT');
define('WP_SITEURL', 'http://127.0.0.1:$WORDPRESS_PORT');
define('WP_CONTENT_DIR', '/var/lib/wordpress/wp-content');
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('WP_DEBUG', false);
$keys
\$table_prefix = 'wp_';
EOF
  # It holds the database password and the cookie keys.
  chmod 600 "$wp_config"
  php "$here/wordpress/seed.php" "$WORDPRESS_PORT" "$WORDPRESS_ADMIN_USER" "$WORDPRESS_ADMIN_PASSWORD" \
    >"$state/wordpress-seed.log" 2>&1 || { tail -20 "$state/wordpress-seed.log" >&2; die "seeding WordPress failed"; }
  port_free "$WORDPRESS_PORT" WordPress
  # Its own process group (setsid): the server forks workers, and stop() ends them all.
  PHP_CLI_SERVER_WORKERS=4 setsid php -S "127.0.0.1:$WORDPRESS_PORT" -t /usr/share/wordpress \
    "$here/wordpress/router.php" </dev/null >"$state/wordpress.log" 2>&1 &
  echo $! >"$state/wordpress.pid"
  wait_for "${wordpress_url}wp-login.php" WordPress "$state/wordpress.log"
}

redmine_env() {
  export REDMINE_INSTANCE=$redmine_instance RAILS_ENV=production REDMINE_LANG=en
}

redmine_up() {
  if alive "$state/redmine.pid"; then wait_for "${redmine_url}login" Redmine "$state/redmine.log"; return 0; fi
  redmine_env
  if [ ! -f "$redmine_dir/db/redmine.sqlite3" ]; then
    say "creating the Redmine instance $redmine_dir"
    mkdir -p "$redmine_dir"/{config,db,tmp,log,files,public}
    # A busy timeout: the tests read the database while Redmine writes it.
    printf 'production:\n  adapter: sqlite3\n  database: %s/db/redmine.sqlite3\n  encoding: utf8\n  timeout: 5000\n' \
      "$redmine_dir" >"$redmine_dir/config/database.yml"
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$redmine_dir/config/secret_key.txt"
    (cd /usr/share/redmine && bundle exec rake db:migrate && bundle exec rake redmine:load_default_data \
      && bundle exec rails runner "$here/redmine/seed.rb" "$REDMINE_ADMIN_USER" "$REDMINE_ADMIN_PASSWORD") \
      >"$state/redmine-seed.log" 2>&1 \
      || { tail -20 "$state/redmine-seed.log" >&2; rm -f "$redmine_dir/db/redmine.sqlite3"; die "seeding Redmine failed"; }
  fi
  port_free "$REDMINE_PORT" Redmine
  # Bundler hides gems the Gemfile does not name; WEBrick is loaded before it runs.
  (cd /usr/share/redmine && RUBYOPT=-rwebrick exec setsid rackup -s webrick -o 127.0.0.1 -p "$REDMINE_PORT" \
    -E production config.ru) </dev/null >"$state/redmine.log" 2>&1 &
  echo $! >"$state/redmine.pid"
  wait_for "${redmine_url}login" Redmine "$state/redmine.log"
}

stop() { # pid file, name
  if alive "$1"; then
    local pid; pid=$(cat "$1")
    # The whole process group where the server leads one (its workers), else the process.
    kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
    say "stopped $2"
  fi
  rm -f "$1"
}

down() {
  stop "$state/wordpress.pid" WordPress
  stop "$state/redmine.pid" Redmine
  stop "$state/mariadb.pid" MariaDB
}

status() {
  local code=0
  if alive "$state/wordpress.pid"; then echo "wordpress $wordpress_url (pid $(cat "$state/wordpress.pid"))"; else echo "wordpress down"; code=1; fi
  if alive "$state/redmine.pid"; then echo "redmine $redmine_url (pid $(cat "$state/redmine.pid"))"; else echo "redmine down"; code=1; fi
  return $code
}

# Private: MariaDB's socket lives here, and its password is no secret (conformance/apps.env).
mkdir -p "$state"
chmod 700 "$state"
case "${1:-}" in
  up) install_packages; wordpress_up; redmine_up; status ;;
  down) down ;;
  reset)
    down
    rm -rf "$db_dir" "$redmine_dir"
    rm -f "$wp_config"
    install_packages; wordpress_up; redmine_up; status ;;
  status) status ;;
  *) die "usage: conformance/apps.sh up|down|reset|status" ;;
esac
