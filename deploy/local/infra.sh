#!/usr/bin/env bash
# Local infrastructure without Docker: a private PostgreSQL cluster and a single-node
# Apache Kafka broker (KRaft), both listening on 127.0.0.1 only. Everything this script
# creates lives under <repo>/.local/ (git-ignored).
#
# Usage: deploy/local/infra.sh COMMAND
#   up           start PostgreSQL and Kafka, create roles/databases/topics (idempotent)
#   down         stop services whose pid files are in .local/run/, Kafka, PostgreSQL
#   status       show what runs and where
#   env          print `export` lines for the endpoints
#   psql [DB] [ARGS...]   open psql as liftfit (default database: postgres)
#   pg-up        only PostgreSQL (+ role and databases)
#   kafka-up     only Kafka (+ topics)
#   kafka-stop   SIGTERM the broker and wait until it is gone (SIGKILL after 30 s)
#   kafka-kill   SIGKILL the broker (a crash: no controlled shutdown) and wait until it is gone
#   kafka-start  start the broker and wait until it serves metadata requests
#   pg-stop      stop PostgreSQL (fast: sessions are cut) and wait until it is down
#   pg-start     start PostgreSQL and wait until it accepts connections
#
# Environment: PG_PORT (15432), KAFKA_PORT (19092), KAFKA_CONTROLLER_PORT (19093),
#   INFRA_PYTHON (interpreter with aiokafka for topic creation; default .venv/bin/python),
#   KAFKA_START_TIMEOUT (60), KAFKA_STOP_TIMEOUT (30), SERVICE_STOP_TIMEOUT (15).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$SCRIPT_DIR/../.." && pwd)"
LOCAL="$REPO/.local"
LOG_DIR="$LOCAL/log"
RUN_DIR="$LOCAL/run"

PG_PORT="${PG_PORT:-15432}"
set_pg_root() {
  PG_ROOT="$1"
  PG_DATA="$PG_ROOT/data"
  PG_SOCK="$PG_ROOT/run"
}
# .local/pg is a link when the cluster had to live elsewhere (see relocate_pg_if_unreachable).
if [[ -L "$LOCAL/pg" ]]; then
  set_pg_root "$(readlink -f "$LOCAL/pg")"
  PG_LOG="$PG_ROOT/postgres.log"
else
  set_pg_root "$LOCAL/pg"
  PG_LOG="$LOG_DIR/postgres.log"
fi
PG_USER=liftfit
PG_PASSWORD=liftfit
PG_DATABASES=(booking payment access notify gateway)

KAFKA_PORT="${KAFKA_PORT:-19092}"
# The local broker's administrator (a super user), for topics, users and ACLs; never a service.
KAFKA_ADMIN_USER=admin
KAFKA_ADMIN_PASSWORD="${KAFKA_ADMIN_PASSWORD:-liftfit-local-kafka-admin}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
KAFKA_HOME="$LOCAL/kafka"
KAFKA_LIBS="$KAFKA_HOME/libs"
KAFKA_DATA="$KAFKA_HOME/data"
KAFKA_CONFIG="$KAFKA_HOME/server.properties"
KAFKA_CLUSTER_ID_FILE="$KAFKA_HOME/cluster.id"
KAFKA_PID_FILE="$RUN_DIR/kafka.pid"
KAFKA_OUT="$LOG_DIR/kafka.out"
KAFKA_BASE_CONFIG="$SCRIPT_DIR/kafka/server.properties"
KAFKA_LOG4J="$SCRIPT_DIR/kafka/log4j.properties"
KAFKA_POM="$SCRIPT_DIR/pom.xml"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-60}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
SERVICE_STOP_TIMEOUT="${SERVICE_STOP_TIMEOUT:-15}"
TOPICS_FILE="$SCRIPT_DIR/topics.txt"

log() { printf '[infra] %s\n' "$*" >&2; }
die() { printf '[infra] ERROR: %s\n' "$*" >&2; exit 1; }
now_ms() { date +%s%3N; }

is_root() { [[ "$(id -u)" -eq 0 ]]; }

# Run a command as the postgres OS user (PostgreSQL refuses to run as root).
as_pg() {
  if is_root; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

apt_install() {
  is_root || die "missing $*: install it (apt-get install -y $*) or run this script as root"
  log "installing $* with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  apt-get install -y -q --no-install-recommends "$@" >&2
}

# A process is alive if /proc has it and it is not a zombie (PID 1 here may not reap).
pid_alive() {
  local pid="$1" state
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/stat" ]] || return 1
  state="$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$pid/stat" 2>/dev/null || true)"
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

read_pid() { if [[ -f "$1" ]]; then tr -dc '0-9' <"$1"; fi; }

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# Send SIGTERM, wait up to $2 seconds, then SIGKILL and wait until the process is gone.
terminate_pid() {
  local pid="$1" timeout_s="$2" name="$3" deadline
  pid_alive "$pid" || return 0
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(($(date +%s) + timeout_s))
  while pid_alive "$pid"; do
    if (($(date +%s) >= deadline)); then
      log "$name (pid $pid) ignored SIGTERM for ${timeout_s}s: sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do pid_alive "$pid" || return 0; sleep 0.1; done
      die "$name (pid $pid) survived SIGKILL"
    fi
    sleep 0.2
  done
}

prepare_dirs() {
  mkdir -p "$LOCAL" "$LOG_DIR" "$RUN_DIR" "$KAFKA_HOME"
  chmod 755 "$LOCAL" "$LOG_DIR" "$RUN_DIR"
}

# Serialise mutating commands (several test processes may call `up` at once).
take_lock() {
  prepare_dirs
  exec 9>"$LOCAL/infra.lock"
  flock -w 600 9 || die "timed out waiting for the lock $LOCAL/infra.lock"
}

############################################################################ PostgreSQL

pg_bin_dir() {
  local version dir
  if [[ -f "$PG_DATA/PG_VERSION" ]]; then
    version="$(cat "$PG_DATA/PG_VERSION")"
    if [[ -x "/usr/lib/postgresql/$version/bin/pg_ctl" ]]; then
      echo "/usr/lib/postgresql/$version/bin"
      return
    fi
    die "$PG_DATA was created by PostgreSQL $version, whose binaries are missing (apt-get install postgresql-$version, or delete $PG_ROOT)"
  fi
  # shellcheck disable=SC2012  # version directories are plain numbers
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  [[ -n "$dir" && -x "$dir/pg_ctl" ]] || return 1
  echo "$dir"
}

ensure_postgres_installed() {
  if ! compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null; then
    apt_install postgresql
  fi
  PG_BIN="$(pg_bin_dir)" || die "PostgreSQL binaries not found under /usr/lib/postgresql/*/bin"
}

pg_running() { [[ -f "$PG_DATA/PG_VERSION" ]] && as_pg "$PG_BIN/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1; }

pg_write_config() {
  local conf="$PG_DATA/liftfit.conf" tmp
  tmp="$(mktemp)"
  cat >"$tmp" <<EOF
# Generated by deploy/local/infra.sh on every start; edit that script instead.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_SOCK'
max_connections = 300
shared_buffers = 128MB
work_mem = 4MB
maintenance_work_mem = 64MB
max_wal_size = 1GB
# Durability stays on: this is a real database.
fsync = on
synchronous_commit = on
full_page_writes = on
timezone = 'UTC'
log_timezone = 'UTC'
log_min_messages = warning
log_line_prefix = '%m [%p] %q%u@%d '
EOF
  if ! cmp -s "$tmp" "$conf" 2>/dev/null; then
    install -o "$(stat -c %U "$PG_DATA")" -m 600 "$tmp" "$conf"
  fi
  rm -f "$tmp"
  if ! grep -q "^include_if_exists = 'liftfit.conf'" "$PG_DATA/postgresql.conf"; then
    printf "\ninclude_if_exists = 'liftfit.conf'\n" | as_pg tee -a "$PG_DATA/postgresql.conf" >/dev/null
  fi
  pg_write_hba
}

# Who may log in how. Over TCP every role needs its password (SCRAM); the cluster's own
# superuser, postgres, has none, so it cannot log in there at all. The Unix socket is for
# this script (and the cluster's OS user): its folder is 0700, so no other OS user reaches it.
pg_write_hba() {
  local hba="$PG_DATA/pg_hba.conf" tmp
  tmp="$(mktemp)"
  cat >"$tmp" <<EOF
# Generated by deploy/local/infra.sh on every start; edit that script instead.
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 trust
host    all       all   127.0.0.1/32  scram-sha-256
EOF
  if ! cmp -s "$tmp" "$hba" 2>/dev/null; then
    install -o "$(stat -c %U "$PG_DATA")" -m 600 "$tmp" "$hba"
    ! pg_running || as_pg "$PG_BIN/pg_ctl" reload -D "$PG_DATA" -s >/dev/null
  fi
  rm -f "$tmp"
}

pg_init() {
  local tmp="$PG_ROOT/data.initdb"
  log "initialising PostgreSQL cluster in $PG_DATA"
  rm -rf "$tmp"
  as_pg "$PG_BIN/initdb" -D "$tmp" -U postgres --auth=trust -E UTF8 --locale=C >"$LOG_DIR/initdb.log" 2>&1 ||
    { tail -n 30 "$LOG_DIR/initdb.log" >&2; die "initdb failed (full output: $LOG_DIR/initdb.log)"; }
  rm -rf "$PG_DATA"
  mv "$tmp" "$PG_DATA"
}

pg_psql_admin() {
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres "$@"
}

# PostgreSQL runs as the postgres OS user, which must traverse every parent directory of
# its data. A clone under a private directory (mktemp -d, a 0700 home) is not reachable,
# so the cluster then lives in a directory of its own under /var/tmp, named after the
# repository's path, and .local/pg links to it.
relocate_pg_if_unreachable() {
  is_root && [[ ! -L "$LOCAL/pg" ]] || return 0
  as_pg test -x "$LOCAL" 2>/dev/null && return 0
  local elsewhere
  elsewhere="/var/tmp/liftfit-pg-$(printf '%s' "$REPO" | sha1sum | cut -c1-12)"
  [[ ! -e "$LOCAL/pg" ]] || rmdir "$LOCAL/pg" 2>/dev/null ||
    die "$LOCAL/pg holds data the postgres OS user cannot reach; make the repository's parents traversable (o+x) or remove it"
  mkdir -p "$elsewhere"
  chmod 755 "$elsewhere"
  ln -s "$elsewhere" "$LOCAL/pg"
  set_pg_root "$elsewhere"
  PG_LOG="$PG_ROOT/postgres.log"
  log "the postgres OS user cannot reach $LOCAL; the cluster lives in $elsewhere (linked from .local/pg)"
}

pg_up() {
  ensure_postgres_installed
  prepare_dirs
  relocate_pg_if_unreachable
  mkdir -p "$PG_ROOT" "$PG_SOCK"
  chmod 700 "$PG_SOCK"  # the socket trusts whoever reaches it (pg_write_hba)
  if is_root; then
    chown postgres:postgres "$PG_ROOT" "$PG_SOCK"
    [[ ! -d "$PG_DATA" || "$(stat -c %U "$PG_DATA")" == postgres ]] || chown -R postgres:postgres "$PG_DATA"
    touch "$PG_LOG"
    chown postgres:postgres "$PG_LOG"
  fi
  if ! as_pg test -w "$PG_ROOT" -a -x "$PG_ROOT" 2>/dev/null; then
    die "the postgres OS user cannot reach $PG_ROOT; every parent directory of the repository must be traversable (o+x) by it:
$(namei -l "$PG_ROOT" 2>/dev/null || true)"
  fi
  local sock_path="$PG_SOCK/.s.PGSQL.$PG_PORT"
  ((${#sock_path} <= 100)) || die "socket path $sock_path is too long for a Unix socket; move the repository to a shorter path"

  [[ -f "$PG_DATA/PG_VERSION" ]] || pg_init
  pg_write_config

  pg_start

  pg_psql_admin <<SQL
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$PG_USER') THEN
    CREATE ROLE $PG_USER LOGIN SUPERUSER PASSWORD '$PG_PASSWORD';
  END IF;
END
\$\$;
SQL
  local db
  for db in "${PG_DATABASES[@]}"; do
    pg_service_roles "$db"
    if [[ "$(pg_psql_admin -tA -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]]; then
      log "creating database $db"
      pg_psql_admin -c "CREATE DATABASE \"$db\" OWNER liftfit_${db}_owner"
    fi
    pg_confine "$db"
  done
}

# A role per service (deploy/boundary.yaml): liftfit_<db> runs the service (rows only, granted
# by the migrations), liftfit_<db>_owner owns the database and runs its migrations; neither
# is a superuser. Passwords are the role names: for this machine only.
pg_service_roles() {
  local db="$1" role
  for role in "liftfit_$db" "liftfit_${db}_owner"; do
    pg_psql_admin -q <<SQL
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role') THEN
    CREATE ROLE $role LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '$role';
  END IF;
END
\$\$;
SQL
  done
}

# Only the database's own roles may connect to it. A database made before the roles existed
# (owned by the administrator) is handed to its owner role, with everything in it.
pg_confine() {
  local db="$1" owner="liftfit_${1}_owner"
  if [[ "$(pg_psql_admin -tA -c "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = '$db'")" != "$owner" ]]; then
    log "handing database $db to $owner"
    # Object by object: REASSIGN OWNED would also hand over every other database the
    # administrator owns (the tests' own).
    pg_psql_admin -q -d "$db" <<SQL
DO \$\$
DECLARE item record;
BEGIN
  FOR item IN SELECT format('ALTER TABLE public.%I OWNER TO $owner', tablename) AS sql
      FROM pg_tables WHERE schemaname = 'public' AND tableowner = '$PG_USER'
    UNION ALL SELECT format('ALTER SEQUENCE public.%I OWNER TO $owner', sequencename)
      FROM pg_sequences WHERE schemaname = 'public' AND sequenceowner = '$PG_USER'
    UNION ALL SELECT format('ALTER FUNCTION public.%I(%s) OWNER TO $owner', p.proname,
        pg_get_function_identity_arguments(p.oid))
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) = '$PG_USER'
    UNION ALL SELECT format('ALTER TYPE public.%I OWNER TO $owner', t.typname)
      FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE n.nspname = 'public' AND t.typtype = 'e' AND pg_get_userbyid(t.typowner) = '$PG_USER'
  LOOP
    EXECUTE item.sql;
  END LOOP;
END
\$\$;
SQL
    pg_psql_admin -q -c "ALTER DATABASE \"$db\" OWNER TO $owner"
  fi
  pg_psql_admin -q -c "REVOKE CONNECT, TEMPORARY ON DATABASE \"$db\" FROM PUBLIC" \
    -c "GRANT CONNECT ON DATABASE \"$db\" TO liftfit_$db, $owner"
}

# Start the initialised cluster (if it is not running) and wait until it accepts connections.
pg_start() {
  local i t0
  t0="$(now_ms)"
  if pg_running; then
    log "PostgreSQL already running (127.0.0.1:$PG_PORT)"
  else
    if port_open "$PG_PORT"; then
      die "port 127.0.0.1:$PG_PORT is taken by another process; set PG_PORT or stop it"
    fi
    log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
    # 9>&-: the postmaster must not inherit (and so keep holding) the infra lock.
    if ! as_pg "$PG_BIN/pg_ctl" start -D "$PG_DATA" -l "$PG_LOG" -w -t 60 -s >/dev/null 9>&-; then
      tail -n 30 "$PG_LOG" >&2 || true
      die "PostgreSQL failed to start (log: $PG_LOG)"
    fi
  fi
  for i in $(seq 1 120); do
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
    ((i < 120)) || { tail -n 30 "$PG_LOG" >&2; die "PostgreSQL does not accept connections (log: $PG_LOG)"; }
    sleep 0.25
  done
  log "PostgreSQL accepts connections (127.0.0.1:$PG_PORT) after $(($(now_ms) - t0)) ms"
}

pg_stop() {
  PG_BIN="$(pg_bin_dir 2>/dev/null)" || return 0
  if pg_running; then
    log "stopping PostgreSQL"
    as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DATA" -m fast -w -t 60 -s
  fi
}

# pg-start brings back a cluster that pg-up created; it creates nothing itself.
pg_start_existing() {
  ensure_postgres_installed
  [[ -f "$PG_DATA/PG_VERSION" ]] || die "no PostgreSQL cluster in $PG_DATA: run '$0 pg-up' (or up) first"
  pg_write_config
  pg_start
}

################################################################################# Kafka

ensure_java() {
  command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
}

kafka_jar_present() { compgen -G "$KAFKA_LIBS/kafka_2.13-*.jar" >/dev/null; }

ensure_kafka_libs() {
  local stamp="$KAFKA_LIBS/.pom.sha256" want
  want="$(sha256sum "$KAFKA_POM" | cut -d' ' -f1)"
  if kafka_jar_present && [[ "$(cat "$stamp" 2>/dev/null || true)" == "$want" ]]; then
    return
  fi
  command -v mvn >/dev/null 2>&1 || apt_install maven
  log "fetching the Kafka broker jars with Maven into $KAFKA_LIBS"
  rm -rf "$KAFKA_LIBS.tmp"
  if ! mvn -q -B -Dstyle.color=never -f "$KAFKA_POM" dependency:copy-dependencies \
    -DoutputDirectory="$KAFKA_LIBS.tmp" >"$LOG_DIR/mvn.log" 2>&1; then
    tail -n 40 "$LOG_DIR/mvn.log" >&2
    die "mvn dependency:copy-dependencies failed for $KAFKA_POM (full output: $LOG_DIR/mvn.log)"
  fi
  echo "$want" >"$KAFKA_LIBS.tmp/.pom.sha256"
  rm -rf "$KAFKA_LIBS"
  mv "$KAFKA_LIBS.tmp" "$KAFKA_LIBS"
  kafka_jar_present || die "no kafka_2.13 jar in $KAFKA_LIBS after mvn"
}

kafka_java() { java -cp "$KAFKA_LIBS/*" "$@"; }

# Arguments for --override; also written into the effective config file.
# Every client authenticates (SASL/SCRAM-SHA-512 on the client listener) and is authorised by
# KRaft's StandardAuthorizer from the ACLs deploy/local/kafka_access.py creates; only the
# administrator is a super user. The controller listener authenticates too (PLAIN, one static
# user: SCRAM credentials live in the metadata the controller serves, so it cannot use them).
kafka_overrides() {
  local scram="org.apache.kafka.common.security.scram.ScramLoginModule required"
  local plain="org.apache.kafka.common.security.plain.PlainLoginModule required"
  printf '%s\n' \
    "log.dirs=$KAFKA_DATA" \
    "listeners=CLIENT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT" \
    "advertised.listeners=CLIENT://127.0.0.1:$KAFKA_PORT" \
    "controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT" \
    "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,CLIENT:SASL_PLAINTEXT" \
    "inter.broker.listener.name=CLIENT" \
    "sasl.enabled.mechanisms=SCRAM-SHA-512" \
    "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512" \
    "sasl.mechanism.controller.protocol=PLAIN" \
    "listener.name.client.sasl.enabled.mechanisms=SCRAM-SHA-512" \
    "listener.name.client.scram-sha-512.sasl.jaas.config=$scram username=\"$KAFKA_ADMIN_USER\" password=\"$KAFKA_ADMIN_PASSWORD\";" \
    "listener.name.controller.sasl.enabled.mechanisms=PLAIN" \
    "listener.name.controller.plain.sasl.jaas.config=$plain username=\"$KAFKA_ADMIN_USER\" password=\"$KAFKA_ADMIN_PASSWORD\" user_$KAFKA_ADMIN_USER=\"$KAFKA_ADMIN_PASSWORD\";" \
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer" \
    "super.users=User:$KAFKA_ADMIN_USER" \
    "allow.everyone.if.no.acl.found=false"
}

kafka_write_config() {
  local tmp="$KAFKA_CONFIG.tmp"
  {
    cat "$KAFKA_BASE_CONFIG"
    printf '\n# ---- generated by deploy/local/infra.sh (later keys win) ----\n'
    kafka_overrides
  } >"$tmp"
  mv "$tmp" "$KAFKA_CONFIG"
}

kafka_format() {
  mkdir -p "$KAFKA_DATA"
  # Storage formatted before the broker authenticated has no administrator's credential, and
  # only a super user can add one: the local broker starts again from empty storage.
  if [[ -f "$KAFKA_DATA/meta.properties" && ! -f "$KAFKA_HOME/scram.formatted" ]]; then
    log "Kafka storage in $KAFKA_DATA predates authentication: formatting it again (local data only)"
    rm -rf "$KAFKA_DATA" "$KAFKA_CLUSTER_ID_FILE"
    mkdir -p "$KAFKA_DATA"
  fi
  if [[ -f "$KAFKA_DATA/meta.properties" ]]; then
    if [[ ! -s "$KAFKA_CLUSTER_ID_FILE" ]]; then
      sed -n 's/^cluster\.id=//p' "$KAFKA_DATA/meta.properties" >"$KAFKA_CLUSTER_ID_FILE"
    fi
    return
  fi
  if [[ ! -s "$KAFKA_CLUSTER_ID_FILE" ]]; then
    kafka_java kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1 | tr -d '[:space:]' >"$KAFKA_CLUSTER_ID_FILE.tmp"
    [[ -s "$KAFKA_CLUSTER_ID_FILE.tmp" ]] || die "kafka.tools.StorageTool random-uuid produced no cluster id"
    mv "$KAFKA_CLUSTER_ID_FILE.tmp" "$KAFKA_CLUSTER_ID_FILE"
  fi
  log "formatting Kafka storage in $KAFKA_DATA (cluster id $(cat "$KAFKA_CLUSTER_ID_FILE"))"
  kafka_java -Dlog4j.configuration="file:$KAFKA_LOG4J" -Dkafka.logs.dir="$LOG_DIR" \
    kafka.tools.StorageTool format -t "$(cat "$KAFKA_CLUSTER_ID_FILE")" -c "$KAFKA_CONFIG" --ignore-formatted \
    --add-scram "SCRAM-SHA-512=[name=$KAFKA_ADMIN_USER,password=$KAFKA_ADMIN_PASSWORD]" >&2 ||
    die "kafka.tools.StorageTool format failed"
  touch "$KAFKA_HOME/scram.formatted"
}

kafka_pid() {
  local pid
  pid="$(read_pid "$KAFKA_PID_FILE")"
  if [[ -n "$pid" ]] && pid_alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka'; then
    echo "$pid"
    return 0
  fi
  return 1
}

# Ask the broker for cluster metadata as its administrator (SASL/SCRAM); succeed if it lists a
# broker. kafka-python, not aiokafka: one blocking call in a short-lived interpreter.
kafka_metadata_ok() {
  local py
  py="$(kafka_python)" || return 1
  KAFKA_ADMIN_PASSWORD="$KAFKA_ADMIN_PASSWORD" "$py" - "$KAFKA_PORT" "$KAFKA_ADMIN_USER" <<'PY' 2>/dev/null
import os, sys
from kafka import KafkaAdminClient
admin = KafkaAdminClient(
    bootstrap_servers=f"127.0.0.1:{sys.argv[1]}", security_protocol="SASL_PLAINTEXT",
    sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=sys.argv[2],
    sasl_plain_password=os.environ["KAFKA_ADMIN_PASSWORD"], request_timeout_ms=3000,
)
try:
    sys.exit(0 if admin.describe_cluster()["brokers"] else 1)
finally:
    admin.close()
PY
}

kafka_log_tail() {
  log "---- tail of $KAFKA_OUT ----"
  tail -n 30 "$KAFKA_OUT" >&2 2>/dev/null || true
  log "---- tail of $LOG_DIR/kafka-server.log ----"
  tail -n 30 "$LOG_DIR/kafka-server.log" >&2 2>/dev/null || true
}

kafka_wait_ready() {
  local pid="$1" deadline
  deadline=$(($(date +%s) + KAFKA_START_TIMEOUT))
  while true; do
    if ! pid_alive "$pid"; then
      rm -f "$KAFKA_PID_FILE"
      kafka_log_tail
      die "Kafka (pid $pid) exited during startup"
    fi
    if port_open "$KAFKA_PORT" && kafka_metadata_ok; then
      return 0
    fi
    if (($(date +%s) >= deadline)); then
      kafka_log_tail
      die "Kafka (pid $pid) not ready on 127.0.0.1:$KAFKA_PORT after ${KAFKA_START_TIMEOUT}s"
    fi
    sleep 0.25
  done
}

kafka_start() {
  local pid t0 port
  if pid="$(kafka_pid)"; then
    kafka_wait_ready "$pid"
    log "Kafka already running (pid $pid, 127.0.0.1:$KAFKA_PORT)"
    return
  fi
  rm -f "$KAFKA_PID_FILE"
  [[ -f "$KAFKA_DATA/meta.properties" ]] || die "Kafka storage is not formatted: run '$0 kafka-up' (or up) first"
  for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    port_open "$port" && die "port 127.0.0.1:$port is taken by another process; set KAFKA_PORT/KAFKA_CONTROLLER_PORT or stop it"
  done
  t0="$(now_ms)"
  log "starting Kafka on 127.0.0.1:$KAFKA_PORT (controller $KAFKA_CONTROLLER_PORT)"
  local -a overrides=()
  local kv
  while IFS= read -r kv; do overrides+=(--override "$kv"); done < <(kafka_overrides)
  printf '\n===== %s starting kafka.Kafka =====\n' "$(date -u +%FT%TZ)" >>"$KAFKA_OUT"
  # setsid: own session, so terminal signals aimed at the caller do not reach the broker.
  # The child writes its own pid and then execs the JVM, so the pid file names the JVM.
  # 9>&-: the broker must not inherit (and so keep holding) the infra lock.
  # shellcheck disable=SC2016  # $$ and $@ are expanded by the child shell
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$KAFKA_PID_FILE" \
    java -Xms256m -Xmx768m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
    -Dkafka.logs.dir="$LOG_DIR" -Dlog4j.configuration="file:$KAFKA_LOG4J" \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_CONFIG" "${overrides[@]}" \
    </dev/null >>"$KAFKA_OUT" 2>&1 9>&- &
  for _ in $(seq 1 100); do
    pid="$(read_pid "$KAFKA_PID_FILE")"
    [[ -n "$pid" ]] && break
    sleep 0.05
  done
  [[ -n "$pid" ]] || die "could not launch Kafka (no pid file $KAFKA_PID_FILE)"
  kafka_wait_ready "$pid"
  log "Kafka ready (pid $pid) in $(($(now_ms) - t0)) ms"
}

kafka_stop() {
  local pid
  if pid="$(kafka_pid)"; then
    terminate_pid "$pid" "$KAFKA_STOP_TIMEOUT" "Kafka"
  fi
  rm -f "$KAFKA_PID_FILE"
}

# A crash, not a stop: the broker gets no chance to hand its partitions over or to write
# its producer-state snapshots.
kafka_kill() {
  local pid
  if pid="$(kafka_pid)"; then
    log "killing Kafka (pid $pid)"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do pid_alive "$pid" || break; sleep 0.1; done
    ! pid_alive "$pid" || die "Kafka (pid $pid) survived SIGKILL"
  fi
  rm -f "$KAFKA_PID_FILE"
}

kafka_python() {
  local candidate
  for candidate in "${INFRA_PYTHON:-}" "$REPO/.venv/bin/python" python3; do
    [[ -n "$candidate" ]] || continue
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import aiokafka' >/dev/null 2>&1; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

kafka_topics() {
  local py
  py="$(kafka_python)" ||
    die "no Python with aiokafka to create topics: run 'make install' first (creates .venv), or set INFRA_PYTHON"
  KAFKA_BOOTSTRAP="127.0.0.1:$KAFKA_PORT" KAFKA_USERNAME="$KAFKA_ADMIN_USER" KAFKA_PASSWORD="$KAFKA_ADMIN_PASSWORD" \
    "$py" "$SCRIPT_DIR/create_topics.py" "$TOPICS_FILE" >&2 || die "topic creation failed"
}

# The principals of deploy/boundary.yaml and their ACLs, passwords from platform.env.
kafka_access() {
  local py
  py="$(kafka_python)" || die "no Python with kafka-python: run 'make install' first"
  KAFKA_BOOTSTRAP="127.0.0.1:$KAFKA_PORT" KAFKA_ADMIN_PASSWORD="$KAFKA_ADMIN_PASSWORD" TOPIC_PREFIX= \
    "$py" "$SCRIPT_DIR/kafka_access.py" >&2 || die "the broker's users and ACLs were not created"
}

kafka_up() {
  ensure_java
  prepare_dirs
  ensure_kafka_libs
  kafka_write_config
  kafka_format
  kafka_start
  kafka_topics
  kafka_access
}

############################################################################## Services

stop_other_services() {
  local f pid
  shopt -s nullglob
  for f in "$RUN_DIR"/*.pid; do
    [[ "$f" == "$KAFKA_PID_FILE" ]] && continue
    pid="$(read_pid "$f")"
    if [[ -n "$pid" ]]; then
      terminate_pid "$pid" "$SERVICE_STOP_TIMEOUT" "$(basename "$f" .pid)"
    fi
    rm -f "$f"
  done
  shopt -u nullglob
}

############################################################################## Commands

cmd_up() {
  local t0
  t0="$(now_ms)"
  take_lock
  pg_up
  kafka_up
  log "infrastructure up in $(($(now_ms) - t0)) ms: PostgreSQL 127.0.0.1:$PG_PORT, Kafka 127.0.0.1:$KAFKA_PORT"
}

cmd_down() {
  take_lock
  stop_other_services
  kafka_stop
  pg_stop
  log "infrastructure down"
}

cmd_status() {
  local pid f
  PG_BIN="$(pg_bin_dir 2>/dev/null)" || PG_BIN=""
  if [[ -n "$PG_BIN" ]] && pg_running; then
    pid="$(head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null || true)"
    echo "postgres: running (pid $pid) on 127.0.0.1:$PG_PORT, data $PG_DATA, log $PG_LOG"
  else
    echo "postgres: stopped (data $PG_DATA)"
  fi
  if pid="$(kafka_pid)"; then
    if kafka_metadata_ok; then
      echo "kafka:    running (pid $pid) on 127.0.0.1:$KAFKA_PORT, controller 127.0.0.1:$KAFKA_CONTROLLER_PORT, data $KAFKA_DATA"
    else
      echo "kafka:    starting/unresponsive (pid $pid) on 127.0.0.1:$KAFKA_PORT"
    fi
  else
    echo "kafka:    stopped (data $KAFKA_DATA)"
  fi
  shopt -s nullglob
  for f in "$RUN_DIR"/*.pid; do
    [[ "$f" == "$KAFKA_PID_FILE" ]] && continue
    pid="$(read_pid "$f")"
    if [[ -n "$pid" ]] && pid_alive "$pid"; then
      echo "service:  $(basename "$f" .pid) running (pid $pid)"
    else
      echo "service:  $(basename "$f" .pid) not running (stale pid file $f)"
    fi
  done
  shopt -u nullglob
}

cmd_env() {
  local host="127.0.0.1:$PG_PORT" db upper
  # The administrator is for tools and tests; each service migrates as its database's
  # owner and runs as its own role (pg_service_roles), as platform.env says.
  echo "export LIFTFIT_PG_ADMIN_DSN=postgresql://$PG_USER:$PG_PASSWORD@$host/postgres"
  for db in "${PG_DATABASES[@]}"; do
    upper="$(tr '[:lower:]' '[:upper:]' <<<"$db")"
    echo "export ${upper}_MIGRATION_DATABASE_URL=postgresql+psycopg://liftfit_${db}_owner:liftfit_${db}_owner@$host/$db"
    echo "export ${upper}_DATABASE_URL=postgresql+psycopg://liftfit_${db}:liftfit_${db}@$host/$db"
  done
  echo "export KAFKA_BOOTSTRAP=127.0.0.1:$KAFKA_PORT"
  # The broker's administrator, for tools and tests; the services have principals of their own.
  echo "export KAFKA_USERNAME=$KAFKA_ADMIN_USER"
  echo "export KAFKA_PASSWORD=$KAFKA_ADMIN_PASSWORD"
}

cmd_psql() {
  local db=postgres
  if [[ $# -gt 0 && "$1" != -* ]]; then
    db="$1"
    shift
  fi
  local psql_bin
  psql_bin="$(command -v psql || true)"
  [[ -n "$psql_bin" ]] || psql_bin="$(pg_bin_dir)/psql"
  exec "$psql_bin" "postgresql://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$db" "$@"
}

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }

main() {
  local cmd="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "$cmd" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    env) cmd_env ;;
    psql) cmd_psql "$@" ;;
    pg-up) take_lock; pg_up ;;
    kafka-up) take_lock; kafka_up ;;
    kafka-stop) take_lock; kafka_stop ;;
    kafka-kill) take_lock; kafka_kill ;;
    kafka-start) take_lock; ensure_java; kafka_write_config; kafka_start ;;
    pg-stop) take_lock; pg_stop ;;
    pg-start) take_lock; pg_start_existing ;;
    -h | --help | help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
