#!/usr/bin/env bash
# Starts the platform's own processes (sandboxes and services) on top of the local
# infrastructure, each with a pid file in .local/run so `make down` stops it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mkdir -p .local/run .local/log
set -a; source deploy/local/platform.env; set +a
py="$root/.venv/bin/python"

# name, module, readiness probe
processes=(
  "card-gateway|sandboxes.card_gateway|http://127.0.0.1:${CARD_GATEWAY_PORT}/_sandbox/faults"
  "booking|services.booking|grpc://${BOOKING_GRPC_ADDRESS}"
  "payment|services.payment|grpc://${PAYMENT_GRPC_ADDRESS}"
)

running() { [[ -f ".local/run/$1.pid" ]] && kill -0 "$(cat ".local/run/$1.pid")" 2>/dev/null; }

ready() {
  local probe="$1"
  case "$probe" in
    http://*) "$py" -c "import httpx,sys; sys.exit(httpx.get('$probe', timeout=1).status_code >= 500)" 2>/dev/null ;;
    grpc://*) "$py" - "${probe#grpc://}" <<'PY' 2>/dev/null
import sys, grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
channel = grpc.insecure_channel(sys.argv[1])
reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
sys.exit(reply.status != health_pb2.HealthCheckResponse.SERVING)
PY
    ;;
  esac
}

start() {
  local name="$1" module="$2" probe="$3"
  if running "$name"; then echo "$name: already running"; return; fi
  nohup "$py" -m "$module" >>".local/log/$name.log" 2>&1 &
  echo $! >".local/run/$name.pid"
  for _ in $(seq 1 120); do
    if ready "$probe"; then echo "$name: ready ($probe)"; return; fi
    if ! running "$name"; then
      echo "$name: exited; last lines of .local/log/$name.log:" >&2
      tail -n 30 ".local/log/$name.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "$name: not ready after 60 s; see .local/log/$name.log" >&2
  exit 1
}

# Schemas come from each service's migrations, applied as the database's owner; the
# services themselves run as a role that cannot create tables.
migrate() {
  "$py" -m servicekit.migrate upgrade booking --url "$BOOKING_MIGRATION_DATABASE_URL"
  "$py" -m servicekit.migrate upgrade payment --url "$PAYMENT_MIGRATION_DATABASE_URL"
  echo "schemas: booking and payment at their head revisions"
}

case "${1:-up}" in
  up)
    migrate
    for entry in "${processes[@]}"; do IFS='|' read -r name module probe <<<"$entry"; start "$name" "$module" "$probe"; done
    cat <<EOF_INFO

LIFT & FIT Private Space runs locally:
  booking service (gRPC)      ${BOOKING_GRPC_ADDRESS}
  payment service (gRPC)      ${PAYMENT_GRPC_ADDRESS}
  payment notifications       http://${PAYMENT_NOTIFICATION_RECEIVER_ADDRESS}/v1/payments/notifications
  sandbox card gateway        http://127.0.0.1:${CARD_GATEWAY_PORT}  (hosted payment pages, /_sandbox fault controls)
  PostgreSQL                  postgresql://liftfit:liftfit@127.0.0.1:15432/{booking,payment,access,notify}
  Kafka                       ${KAFKA_BOOTSTRAP}
Logs in .local/log/, pid files in .local/run/. Stop everything with: make down
EOF_INFO
    ;;
  *) echo "usage: $0 up" >&2; exit 2 ;;
esac
