# Used by scripts/check failover, after scripts/lib/postgres.sh's attestd_start_postgres (the
# primary): a synchronous streaming standby of it in another temporary directory, on another free
# loopback port, removed by attestd_stop_standby.
#
# attestd_start_standby sets:
#   STANDBY_DIR   the standby's directory (data, socket, log)
#   STANDBY_PORT  its TCP port on 127.0.0.1
#   STANDBY_NAME  its application_name, which the primary's synchronous_standby_names names
# and leaves the primary with synchronous_commit=on and that one synchronous standby, so that a
# commit is acknowledged only once the standby has flushed it. The standby itself is made with
# synchronous_standby_names empty: promoted, it has no standby of its own to wait for.

STANDBY_NAME=attestd_standby

attestd_start_standby() {
    local password
    password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
    STANDBY_DIR=$(mktemp -d -t attestd-standby.XXXXXX)
    chmod 755 "$STANDBY_DIR"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$STANDBY_DIR"
    STANDBY_PORT=$(attestd_free_port)
    # The replication role, allowed over loopback with a password (initdb's default pg_hba.conf
    # has such a line for every role; the explicit one is what a production pg_hba.conf needs).
    attestd_psql_admin postgres "CREATE ROLE replicator REPLICATION LOGIN PASSWORD '$password'"
    attestd_as_pg_owner sh -c "echo 'host replication replicator 127.0.0.1/32 scram-sha-256' >>'$PG_DIR/data/pg_hba.conf'"
    attestd_psql_admin postgres "SELECT pg_reload_conf()" >/dev/null
    [ "$(attestd_psql_admin postgres "SHOW wal_level")" = replica ] || attestd_psql_admin postgres "SHOW wal_level" >&2
    # A copy of the primary that connects back to it as STANDBY_NAME (-R writes standby.signal and
    # primary_conninfo; the line appended after it names the standby).
    attestd_as_pg_owner env PGPASSWORD="$password" "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PG_PORT" -U replicator \
        -D "$STANDBY_DIR/data" -R -X stream --checkpoint=fast >"$STANDBY_DIR/basebackup.log" 2>&1 ||
        { cat "$STANDBY_DIR/basebackup.log" >&2; return 1; }
    attestd_as_pg_owner sh -c "cat >>'$STANDBY_DIR/data/postgresql.auto.conf'" <<EOF
primary_conninfo = 'host=127.0.0.1 port=$PG_PORT user=replicator password=$password application_name=$STANDBY_NAME'
synchronous_standby_names = ''
EOF
    STANDBY_OPTIONS="-c listen_addresses=127.0.0.1 -c port=$STANDBY_PORT -c unix_socket_directories=$STANDBY_DIR -c max_connections=200"
    attestd_as_pg_owner "$PG_BIN/pg_ctl" -D "$STANDBY_DIR/data" -l "$STANDBY_DIR/server.log" -w -t 60 -o "$STANDBY_OPTIONS" start \
        >/dev/null || { cat "$STANDBY_DIR/server.log" >&2; return 1; }
    # Only now is the primary made to wait for it: with no standby connected, every commit would wait.
    attestd_psql_admin postgres "ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 ($STANDBY_NAME)'" \
        "ALTER SYSTEM SET synchronous_commit = on" "SELECT pg_reload_conf()" >/dev/null
    export STANDBY_DIR STANDBY_PORT STANDBY_NAME
    echo "standby of 127.0.0.1:$PG_PORT on 127.0.0.1:$STANDBY_PORT ($STANDBY_DIR)" >&2
}

# Promotes the standby and waits until it accepts writes.
attestd_promote_standby() {
    attestd_as_pg_owner "$PG_BIN/pg_ctl" -D "$STANDBY_DIR/data" -w -t 30 promote >/dev/null
}

attestd_stop_standby() {
    [ -n "${STANDBY_DIR:-}" ] && [ -d "$STANDBY_DIR" ] || return 0
    attestd_as_pg_owner "$PG_BIN/pg_ctl" -D "$STANDBY_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$STANDBY_DIR"
    STANDBY_DIR=
}
