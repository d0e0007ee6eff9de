# Shared by scripts/test, scripts/check cluster and scripts/bench-load: a throwaway PostgreSQL
# cluster in a temporary directory, on a free loopback port, removed by attestd_stop_postgres.
#
# attestd_start_postgres sets:
#   PG_DIR   the cluster's directory (data, socket, log)
#   PG_PORT  its TCP port on 127.0.0.1
#   PG_URL   postgresql://attestd:<password>@127.0.0.1:<port>/attestd: a role with a password that
#            owns the database attestd and may create databases (the tests make one each), no superuser
#   PG_ADMIN_URL  the cluster's superuser over the Unix socket (trust), for restarts and checks
# Installs Debian's postgresql when missing (without letting the package start a cluster of its
# own). initdb refuses to run as root, so as root the cluster belongs to the 'postgres' user that
# the package creates.

attestd_postgres_bin() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
    done
    return 1
}

attestd_ensure_postgres() {
    attestd_postgres_bin >/dev/null || attestd_ensure_service_packages postgresql
}

# Runs a command as the cluster's owner.
attestd_as_pg_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

ATTESTD_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

attestd_free_port() {
    python3 "$ATTESTD_LIB_DIR/free_port.py"
}

attestd_start_postgres() {
    attestd_ensure_postgres
    local bin password
    bin=$(attestd_postgres_bin)
    PG_BIN=$bin
    PG_DIR=$(mktemp -d -t attestd-pg.XXXXXX)
    chmod 755 "$PG_DIR"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$PG_DIR"
    PG_PORT=$(attestd_free_port)
    password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
    attestd_as_pg_owner "$bin/initdb" -D "$PG_DIR/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        -E UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log" >&2; return 1; }
    PG_OPTIONS="-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories=$PG_DIR -c max_connections=200"
    attestd_pg_ctl_start || { cat "$PG_DIR/server.log" >&2; return 1; }
    attestd_as_pg_owner "$bin/psql" -q -X -v ON_ERROR_STOP=1 -h "$PG_DIR" -p "$PG_PORT" -U postgres -d postgres \
        -c "CREATE ROLE attestd LOGIN CREATEDB PASSWORD '$password'" \
        -c "CREATE DATABASE attestd OWNER attestd" >/dev/null
    PG_URL="postgresql://attestd:$password@127.0.0.1:$PG_PORT/attestd"
    PG_ADMIN_URL="postgresql://postgres@/postgres?host=$PG_DIR&port=$PG_PORT"
    export PG_BIN PG_DIR PG_PORT PG_URL PG_ADMIN_URL PG_OPTIONS
    echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT ($PG_DIR)" >&2
}

# Runs SQL as the superuser: attestd_psql_admin DB SQL...
attestd_psql_admin() {
    local database=$1
    shift
    local args=()
    local sql
    for sql in "$@"; do args+=(-c "$sql"); done
    attestd_as_pg_owner "$PG_BIN/psql" -q -X -At -v ON_ERROR_STOP=1 -h "$PG_DIR" -p "$PG_PORT" -U postgres -d "$database" "${args[@]}"
}

attestd_pg_ctl_start() {
    attestd_as_pg_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 -o "$PG_OPTIONS" start >/dev/null
}

# Stops the server (fast: sessions are cut, as in a failover) and leaves it down.
attestd_pause_postgres() {
    attestd_as_pg_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null
}

# Stops the server as a crash would (no shutdown checkpoint): the next start runs crash recovery,
# which empties UNLOGGED tables.
attestd_crash_postgres() {
    attestd_as_pg_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null
}

attestd_stop_postgres() {
    [ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR" ] || return 0
    attestd_as_pg_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
    PG_DIR=
}
