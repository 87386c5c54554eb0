#!/usr/bin/env bash
# Starts the platform's own processes (sandboxes, services and Prometheus scraping them) on
# top of the local infrastructure, each with a pid file in .local/run so `make down` stops it.
#
# Run it again at any time: a process that is alive is left alone, one that died (killed,
# crashed, or a zombie nobody reaped) is started again and its stale pid file replaced.
# The last lines say which processes were (re)started and every address.
# `platform.sh status` says which processes run, with their pids and addresses.
# `platform.sh providers` starts only Jaeger and the three sandboxes: what make deploy-local's
# pods point at.
#
# Settings come from deploy/local/platform.env; a setting already in the environment wins
# (e.g. after `eval "$(deploy/local/infra.sh env)"`, or other ports for a second checkout).
# PLATFORM_STATE_DIR (default .local) holds the pid files (run/) and logs (log/): a second
# platform on the same machine (the test of this script) keeps its own.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
state_dir="${PLATFORM_STATE_DIR:-.local}"
run_dir="$state_dir/run"
log_dir="$state_dir/log"
mkdir -p "$run_dir" "$log_dir"
while IFS= read -r line || [[ -n "$line" ]]; do
  [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
  [[ -v "${BASH_REMATCH[1]}" ]] || export "${BASH_REMATCH[1]}=${BASH_REMATCH[2]}"
done <deploy/local/platform.env
# The gateway reads traces for the operators' console from this run's Jaeger, whatever its port.
export GATEWAY_TRACES_URL="${GATEWAY_TRACES_URL:-http://127.0.0.1:${JAEGER_QUERY_PORT}}"
# Each sandbox keeps its records (charges, access codes and the door log, mails) in a folder
# of the state folder, so one that was killed comes back knowing them, as a real provider
# would; set one empty to keep that sandbox's records in memory only.
sandbox_state="$(cd "$state_dir" && pwd)/sandboxes"
export CARD_GATEWAY_STATE_DIR="${CARD_GATEWAY_STATE_DIR-$sandbox_state/card-gateway}"
export LOCK_PROVIDER_STATE_DIR="${LOCK_PROVIDER_STATE_DIR-$sandbox_state/lock-provider}"
export MAIL_SANDBOX_STATE_DIR="${MAIL_SANDBOX_STATE_DIR-$sandbox_state/mail}"
# Notify asks this run's mail sandbox about an `unknown` mail; set it empty for plain SMTP.
export MAIL_LOOKUP_URL="${MAIL_LOOKUP_URL-http://127.0.0.1:${MAIL_SANDBOX_HTTP_PORT}/v1/lookup}"
py="$root/.venv/bin/python"
READY_TIMEOUT_S=60
# Mutual TLS between the parts (servicekit.mtls): a local authority and a key pair per
# principal under .local/tls (servicekit.certificates), each process pointed at its own.
tls_root="${LIFTFIT_TLS_ROOT:-$root/.local/tls}"
tls_principals=(booking payment access notify gateway operator-tools)
for principal in booking payment access notify gateway; do
  var="${principal^^}_TLS_DIR"
  [[ -v "$var" ]] || export "$var=$tls_root/$principal"
done
# This script's own health checks call as the operators' tools.
export PROBE_TLS_DIR="${PROBE_TLS_DIR:-$tls_root/operator-tools}"
issue_certificates() { "$py" -m servicekit.certificates "$tls_root" "${tls_principals[@]}"; }
prometheus_bin="$(command -v prometheus || echo /usr/bin/prometheus)"

# name, module (or a program's absolute path, see launch), readiness probe. Jaeger comes
# first, so every service's first spans have somewhere to go.
processes=(
  "jaeger|$root/.local/bin/jaeger|http://127.0.0.1:${JAEGER_HEALTH_PORT}/status"
  "card-gateway|sandboxes.card_gateway|http://127.0.0.1:${CARD_GATEWAY_PORT}/healthz"
  "lock-provider|sandboxes.lock_provider|http://127.0.0.1:${LOCK_PROVIDER_PORT}/healthz"
  "mail-sandbox|sandboxes.mail|http://127.0.0.1:${MAIL_SANDBOX_HTTP_PORT}/healthz"
  "booking|services.booking|grpc://${BOOKING_GRPC_ADDRESS}"
  "payment|services.payment|grpc://${PAYMENT_GRPC_ADDRESS}"
  "access|services.access|grpc://${ACCESS_GRPC_ADDRESS}"
  "notify|services.notify|grpc://${NOTIFY_GRPC_ADDRESS}"
  "gateway|gateway_bff|http://${GATEWAY_ADDRESS}/healthz"
  "prometheus|${prometheus_bin}|http://${PROMETHEUS_ADDRESS}/-/ready"
)

# The same test as pid_alive in deploy/local/infra.sh: /proc has the process and it is not
# a zombie. `kill -0` succeeds on a zombie, and PID 1 here may never reap one.
pid_alive() {
  local pid="$1" state
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/stat" ]] || return 1
  state="$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$pid/stat" 2>/dev/null || true)"
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

recorded_pid() { if [[ -f "$run_dir/$1.pid" ]]; then tr -dc "0-9" <"$run_dir/$1.pid"; fi; }

# Alive and still our program: a pid number may have been given to another process since.
# A Python module runs as `python -m <module>`, a program as `<its path> <arguments>`.
running() {
  local pid="$1" module="$2" cmdline
  pid_alive "$pid" || return 1
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
  [[ "$cmdline" == *" -m $module "* || "$cmdline" == "$module "* ]]
}

why_not_running() {
  local pid="$1"
  if [[ -z "$pid" ]]; then
    echo "no pid file"
  elif [[ ! -r "/proc/$pid/stat" ]]; then
    echo "pid $pid is gone"
  elif ! pid_alive "$pid"; then
    echo "pid $pid is a zombie"
  else
    echo "pid $pid is another program now"
  fi
}

# One probe process per start, polling until ready, until the process exits or until the
# time-out (exit codes 0, 3 and 4): a fresh interpreter per poll cost as much CPU as the
# starting service itself, on a machine where CPU is what a start waits for.
wait_ready() {
  local probe="$1" pid="$2"
  "$py" - "$probe" "$pid" "$READY_TIMEOUT_S" <<'PY'
import sys, time

probe, pid, timeout_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])


def alive() -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def http_check():
    import httpx

    def check() -> bool:
        try:
            return httpx.get(probe, timeout=1).status_code < 500
        except httpx.HTTPError:
            return False

    return check


def grpc_check():
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    # Reconnect soon after a refused connection; gRPC's default waits a second and more.
    options = [
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 250),
    ]
    import os
    from pathlib import Path

    folder = Path(os.environ["PROBE_TLS_DIR"])
    credentials = grpc.ssl_channel_credentials(
        *(
            (folder / name).read_bytes()
            for name in ("ca.crt", "tls.key", "tls.crt")
        )
    )
    target = probe.removeprefix("grpc://")
    channel = grpc.secure_channel(target, credentials, options=options)
    stub = health_pb2_grpc.HealthStub(channel)

    def check() -> bool:
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
        except grpc.RpcError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    return check


check = http_check() if probe.startswith("http") else grpc_check()
deadline = time.monotonic() + timeout_s
while time.monotonic() < deadline:
    if not alive():
        sys.exit(3)
    if check():
        sys.exit(0)
    time.sleep(0.1)
sys.exit(4)
PY
}

# The repository's bytecode, written once here: with PYTHONDONTWRITEBYTECODE set nothing
# else writes it, and every start compiled its ~70 modules of this repository again: 8% of
# the ~2.4 billion instructions a start costs, nearly all of them imports, which is what a
# restart waits for on a busy machine.
compile_bytecode() { "$py" -m compileall -q servicekit services gateway_bff sandboxes build/gen >/dev/null; }

# Prometheus scrapes every process of this run (its ports) and evaluates the alert rules
# of deploy/prometheus/rules/ (none there is no error); its data stays in the state folder.
prometheus_dir="$(cd "$state_dir" && pwd)/prometheus"
write_prometheus_config() {
  mkdir -p "$prometheus_dir/data"
  local interval="${PROMETHEUS_SCRAPE_INTERVAL:-2s}"
  cat >"$prometheus_dir/prometheus.yml" <<EOF_PROMETHEUS
# Written by scripts/platform.sh for this run's ports; rewritten at every start.
global:
  scrape_interval: ${interval}
  scrape_timeout: ${interval}
  evaluation_interval: ${interval}
rule_files:
  - '${root}/deploy/prometheus/rules/*.yml'
scrape_configs:
  - {job_name: booking, static_configs: [{targets: ['${BOOKING_METRICS_ADDRESS}']}]}
  - {job_name: payment, static_configs: [{targets: ['${PAYMENT_METRICS_ADDRESS}']}]}
  - {job_name: access, static_configs: [{targets: ['${ACCESS_METRICS_ADDRESS}']}]}
  - {job_name: notify, static_configs: [{targets: ['${NOTIFY_METRICS_ADDRESS}']}]}
  - {job_name: gateway, static_configs: [{targets: ['${GATEWAY_ADDRESS}']}]}
EOF_PROMETHEUS
}

program_args() {
  case "$1" in
    jaeger) printf '%s\n' --config "file:$root/deploy/local/jaeger.yaml" ;;
    prometheus)
      printf '%s\n' "--config.file=$prometheus_dir/prometheus.yml" \
        "--storage.tsdb.path=$prometheus_dir/data" "--storage.tsdb.retention.time=1d" \
        "--web.listen-address=${PROMETHEUS_ADDRESS}"
      ;;
  esac
}

# A Python module runs in the repository's interpreter; a program (an absolute path) with
# the arguments program_args gives it.
launch() {
  local name="$1" module="$2" args
  if [[ "$module" == /* ]]; then
    if [[ ! -x "$module" ]]; then
      echo "$name: $module is missing; make up installs or builds it" >&2
      exit 1
    fi
    mapfile -t args < <(program_args "$name")
    nohup "$module" "${args[@]}" </dev/null >>"$log_dir/$name.log" 2>&1 &
  else
    local user="" password=""
    case "$name" in
      # Each service and the gateway is its own principal at the broker; a sandbox is none.
      booking | payment | access | notify | gateway)
        user="$name" password="$(printenv "${name^^}_KAFKA_PASSWORD" || true)" ;;
    esac
    KAFKA_USERNAME="$user" KAFKA_PASSWORD="$password" \
      nohup "$py" -m "$module" </dev/null >>"$log_dir/$name.log" 2>&1 &
  fi
}

started=()

start() {
  local name="$1" module="$2" probe="$3" pid t0 outcome=0
  pid="$(recorded_pid "$name")"
  if running "$pid" "$module"; then
    echo "$name: already running (pid $pid)"
    [[ "$name" != prometheus ]] || kill -HUP "$pid" # reads the rewritten configuration
    return
  fi
  [[ -f "$run_dir/$name.pid" ]] && echo "$name: not running ($(why_not_running "$pid")): starting it again"
  t0="$(date +%s%3N)"
  launch "$name" "$module"
  pid=$!
  echo "$pid" >"$run_dir/$name.pid"
  started+=("$name")
  wait_ready "$probe" "$pid" || outcome=$?
  case "$outcome" in
    0) echo "$name: started (pid $pid), ready in $(($(date +%s%3N) - t0)) ms ($probe)" ;;
    3)
      echo "$name: exited; last lines of $log_dir/$name.log:" >&2
      tail -n 30 "$log_dir/$name.log" >&2
      exit 1
      ;;
    *)
      echo "$name: not ready after ${READY_TIMEOUT_S} s; see $log_dir/$name.log" >&2
      exit 1
      ;;
  esac
}

# Schemas come from each service's migrations, applied as the database's owner; the
# services themselves run as a role that cannot create tables.
migrate() {
  local service upper runtime_url runtime_role
  for service in booking payment access notify gateway; do
    upper="${service^^}"
    runtime_url="$(printenv "${upper}_DATABASE_URL")"
    # The role the service connects as is the one its migrations grant rows to.
    runtime_role="${runtime_url#*://}" runtime_role="${runtime_role%%:*}"
    "$py" -m servicekit.migrate upgrade "$service" \
      --url "$(printenv "${upper}_MIGRATION_DATABASE_URL")" --runtime-role "$runtime_role"
  done
  echo "schemas: booking, payment, access, notify and gateway at their head revisions"
}

# A first visit finds something to book: on an empty catalogue, a demo studio, plans and an
# organisation, made through the operators' API (gateway_bff.demo). DEMO_DATA=0 turns it off.
demo_data() {
  if [[ "${DEMO_DATA:-1}" == 0 ]]; then
    echo "demo data: off (DEMO_DATA=0)"
    return
  fi
  # Demo data is a convenience: without it the platform still runs, so make up goes on.
  "$py" -m gateway_bff.demo "http://${GATEWAY_ADDRESS}" "${GATEWAY_OPERATORS%%,*}" ||
    echo "demo data: not created (the reason is above); make up again to retry" >&2
}

case "${1:-up}" in
  up)
    compile_bytecode
    issue_certificates
    migrate
    write_prometheus_config
    for entry in "${processes[@]}"; do IFS='|' read -r name module probe <<<"$entry"; start "$name" "$module" "$probe"; done
    if ((${#started[@]})); then
      echo "(re)started: ${started[*]}"
    else
      echo "(re)started: nothing, every process was running"
    fi
    demo_data
    pg_url="${BOOKING_DATABASE_URL/+psycopg/}"
    cat <<EOF_INFO

LIFT & FIT Private Space runs locally:
  customer pages (Czech)      http://${GATEWAY_ADDRESS}/web/cs/
  customer pages (English)    http://${GATEWAY_ADDRESS}/web/en/  (sign in as demo to book)
  operators' console          http://${GATEWAY_ADDRESS}/web/en/console/  (sign in as ${GATEWAY_OPERATORS%%,*})
  API reference               http://${GATEWAY_ADDRESS}/docs  (OpenAPI at /openapi.json)
  gateway (public HTTP API)   http://${GATEWAY_ADDRESS}  (X-Dev-User: ${GATEWAY_OPERATORS%%,*} is an operator)
  Jaeger UI (traces)          http://127.0.0.1:${JAEGER_QUERY_PORT}/
  Prometheus                  http://${PROMETHEUS_ADDRESS}  (every process scraped every ${PROMETHEUS_SCRAPE_INTERVAL:-2s}; targets at /classic/targets, alerts at /classic/alerts)
  metrics (/metrics)          booking ${BOOKING_METRICS_ADDRESS}, payment ${PAYMENT_METRICS_ADDRESS}, access ${ACCESS_METRICS_ADDRESS}, notify ${NOTIFY_METRICS_ADDRESS}, gateway ${GATEWAY_ADDRESS}
  booking service (gRPC)      ${BOOKING_GRPC_ADDRESS}
  payment service (gRPC)      ${PAYMENT_GRPC_ADDRESS}
  access service (gRPC)       ${ACCESS_GRPC_ADDRESS}
  notify service (gRPC)       ${NOTIFY_GRPC_ADDRESS}
  payment notifications       http://${GATEWAY_ADDRESS}/v1/payments/notifications
  Jaeger query API            http://127.0.0.1:${JAEGER_QUERY_PORT}/api/traces/<trace id on a booking's timeline>  (OTLP in at ${OTEL_EXPORTER_OTLP_ENDPOINT})
  sandbox card gateway        http://127.0.0.1:${CARD_GATEWAY_PORT}  (hosted payment pages; /_sandbox controls need CARD_GATEWAY_CONTROL_TOKEN as a bearer token)
  sandbox lock provider       http://127.0.0.1:${LOCK_PROVIDER_PORT}  (access codes, the door at /_sandbox/door; other /_sandbox controls need LOCK_PROVIDER_CONTROL_TOKEN)
  mail sandbox (read mails)   http://127.0.0.1:${MAIL_SANDBOX_HTTP_PORT}/messages  (SMTP on ${MAIL_SMTP_HOST}:${MAIL_SMTP_PORT}, lookup at /v1/lookup; /_sandbox controls need MAIL_SANDBOX_CONTROL_TOKEN)
  PostgreSQL                  ${pg_url%/*}/{booking,payment,access,notify,gateway}
  Kafka                       ${KAFKA_BOOTSTRAP}
Logs in $log_dir/, pid files in $run_dir/. Stop everything with: make down
EOF_INFO
    ;;
  providers)
    # What make deploy-local's pods point at: Jaeger and the three sandboxes, no services.
    for entry in "${processes[@]:0:4}"; do IFS='|' read -r name module probe <<<"$entry"; start "$name" "$module" "$probe"; done
    ;;
  status)
    for entry in "${processes[@]}"; do
      IFS='|' read -r name module probe <<<"$entry"
      pid="$(recorded_pid "$name")"
      if running "$pid" "$module"; then
        printf '  %-14s running (pid %s)  %s\n' "$name" "$pid" "$probe"
      else
        printf '  %-14s not running (%s)\n' "$name" "$(why_not_running "$pid")"
      fi
    done
    echo "customer pages at http://${GATEWAY_ADDRESS}/web/, the API reference at http://${GATEWAY_ADDRESS}/docs"
    ;;
  *) echo "usage: $0 up|status|providers" >&2; exit 2 ;;
esac
