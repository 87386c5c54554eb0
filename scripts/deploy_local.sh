#!/usr/bin/env bash
# make deploy-local: the platform's images run as pods on a single-node Kubernetes on this
# machine, from the `local` overlay, and a customer's card journey passes against them.
#
#   up      etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a containerd of
#           its own and a kubelet (host-network pods only); PostgreSQL and Kafka (infra.sh),
#           Jaeger and the three sandboxes (platform.sh providers); the images imported into
#           containerd; the overlay applied; the migration Jobs complete; the Deployments
#           Ready by their own probes; a card journey; a pod deleted and replaced; a second
#           journey. Each step is named as it starts, and the first that fails ends the run
#           with a non-zero status naming it.
#   down    stops what `up` started (cluster, platform) and removes the cluster's state; the
#           built binaries and the images stay.
#   cluster only the cluster and the images in it (no platform, no overlay): for its debugging.
#   status  what of the cluster runs.
#
# Everything lives under .local/kube (state, logs, pid files, kubeconfig). The ports are
# fixed (KUBE_* below) so an operator's kubectl finds the cluster again:
#   .local/k8s/<version>/kubectl --kubeconfig .local/kube/kubeconfig get pods -n liftfit
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

K8S_VERSION="${K8S_VERSION:-v1.33.13}"
ETCD_VERSION="${ETCD_VERSION:-v3.5.21}"
bin=".local/k8s/$K8S_VERSION"
etcd_bin=".local/k8s/etcd-$ETCD_VERSION/etcd"
pause_bin=".local/k8s/pause"
KUBE_APISERVER_PORT="${KUBE_APISERVER_PORT:-16443}"
KUBE_ETCD_PORT="${KUBE_ETCD_PORT:-12379}"
KUBE_ETCD_PEER_PORT="${KUBE_ETCD_PEER_PORT:-12380}"
KUBELET_PORT="${KUBELET_PORT:-10250}"
KUBELET_HEALTHZ_PORT="${KUBELET_HEALTHZ_PORT:-10248}"
NODE="${KUBE_NODE_NAME:-liftfit-local}"
NAMESPACE=liftfit
PAUSE_IMAGE="localhost/liftfit/pause:local"
PROCESSES=(booking payment access notify gateway)
# Bounds of the waits, in seconds: a busy 2-core machine starts a Python process in ~10 s.
READY_WITHIN_S="${DEPLOY_READY_WITHIN_S:-300}"
JOBS_WITHIN_S="${DEPLOY_JOBS_WITHIN_S:-300}"

state="$root/.local/kube"
pki="$state/pki"
run="$state/run"
logs="$state/log"
kubeconfig="$state/kubeconfig"
socket="$state/containerd/containerd.sock"
py="$root/.venv/bin/python"

step() { echo "== deploy-local: $*"; current_step="$*"; }
fail() { echo "deploy-local FAILED at step: ${current_step:-?}: $*" >&2; exit 1; }
kubectl() { "$root/$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

pid_alive() {
  local pid="$1" status
  [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
  status="$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f1)"
  [[ "$status" != Z && "$status" != X ]]
}
recorded_pid() { [[ -f "$run/$1.pid" ]] && tr -dc 0-9 <"$run/$1.pid" || true; }

# Starts `name` unless its recorded pid is alive; then waits until `probe` (a command)
# succeeds, failing with the tail of its log when it exits or is not ready in time.
start() {
  local name="$1" probe="$2" pid
  shift 2
  pid="$(recorded_pid "$name")"
  if pid_alive "$pid"; then
    echo "$name: already running (pid $pid)"
    return
  fi
  nohup "$@" </dev/null >>"$logs/$name.log" 2>&1 &
  pid=$!
  echo "$pid" >"$run/$name.pid"
  for ((i = 0; i < 240; i++)); do
    if eval "$probe" >/dev/null 2>&1; then
      echo "$name: started (pid $pid)"
      return
    fi
    pid_alive "$pid" || { tail -n 30 "$logs/$name.log" >&2; fail "$name exited"; }
    sleep 0.5
  done
  tail -n 30 "$logs/$name.log" >&2
  fail "$name not ready in 120 s ($logs/$name.log)"
}

# Whether `command...` succeeds within `seconds`, asking every half second.
within() {
  local seconds="$1" i
  shift
  for ((i = 0; i < seconds * 2; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  "$@" >/dev/null 2>&1
}

# --- credentials: a CA, the API server's serving certificate, one token -----------------
credentials() {
  [[ -f "$pki/tokens.csv" ]] && return
  mkdir -p "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=liftfit-local-ca" -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' \
    >"$pki/san.ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 30 -extfile "$pki/san.ext" -out "$pki/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  # One administrator token for kubectl and the node's own parts: a cluster of one machine
  # that only loopback reaches. A real cluster gives each part its own identity.
  echo "$(openssl rand -hex 24),admin,admin,\"system:masters\"" >"$pki/tokens.csv"
  cat >"$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: liftfit-local
  cluster: {server: "https://127.0.0.1:$KUBE_APISERVER_PORT", certificate-authority: "$pki/ca.crt"}
users:
- name: admin
  user: {token: "$(cut -d, -f1 "$pki/tokens.csv")"}
contexts:
- name: liftfit-local
  context: {cluster: liftfit-local, user: admin, namespace: $NAMESPACE}
current-context: liftfit-local
EOF
}

control_plane() {
  start etcd "curl -sf http://127.0.0.1:$KUBE_ETCD_PORT/health" \
    "$etcd_bin" --data-dir="$state/etcd" --unsafe-no-fsync \
    --listen-client-urls="http://127.0.0.1:$KUBE_ETCD_PORT" \
    --advertise-client-urls="http://127.0.0.1:$KUBE_ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$KUBE_ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$KUBE_ETCD_PEER_PORT" \
    --initial-cluster="default=http://127.0.0.1:$KUBE_ETCD_PEER_PORT"
  start kube-apiserver "kubectl get --raw=/readyz" \
    "$bin/kube-apiserver" --etcd-servers="http://127.0.0.1:$KUBE_ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$KUBE_APISERVER_PORT" \
    --cert-dir="$state/apiserver-certs" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" --token-auth-file="$pki/tokens.csv" \
    --authorization-mode=Node,RBAC \
    --service-account-key-file="$pki/sa.key" --service-account-signing-key-file="$pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-cluster-ip-range=10.96.0.0/16
  start kube-controller-manager "curl -skf https://127.0.0.1:10257/healthz" \
    "$bin/kube-controller-manager" --kubeconfig="$kubeconfig" --leader-elect=false \
    --bind-address=127.0.0.1 --service-account-private-key-file="$pki/sa.key" \
    --root-ca-file="$pki/ca.crt" --use-service-account-credentials=false \
    --authentication-kubeconfig="$kubeconfig" --authorization-kubeconfig="$kubeconfig"
  start kube-scheduler "curl -skf https://127.0.0.1:10259/healthz" \
    "$bin/kube-scheduler" --kubeconfig="$kubeconfig" --leader-elect=false \
    --bind-address=127.0.0.1 \
    --authentication-kubeconfig="$kubeconfig" --authorization-kubeconfig="$kubeconfig"
}

# --- the node: containerd (its own, configured from deploy/local/kube) and a kubelet --
node() {
  mkdir -p "$state/containerd" "$state/cni" "$state/kubelet"
  sed -e "s|@STATE@|$state|g" -e "s|@PAUSE@|$PAUSE_IMAGE|g" \
    deploy/local/kube/containerd.toml >"$state/containerd/config.toml"
  cp deploy/local/kube/loopback.conflist "$state/cni/"
  start containerd "ctr --address $socket version" \
    containerd --config "$state/containerd/config.toml"
  sed -e "s|@STATE@|$state|g" -e "s|@PKI@|$pki|g" -e "s|@PORT@|$KUBELET_PORT|g" \
    -e "s|@HEALTHZ@|$KUBELET_HEALTHZ_PORT|g" \
    deploy/local/kube/kubelet.yaml >"$state/kubelet/config.yaml"
  start kubelet "curl -sf http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz" \
    "$bin/kubelet" --config="$state/kubelet/config.yaml" --kubeconfig="$kubeconfig" \
    --root-dir="$state/kubelet/root" --hostname-override="$NODE" --node-ip=127.0.0.1
  # The kubelet answers its healthz before it has registered the Node, and `kubectl wait`
  # fails at once on a name that does not exist yet: wait for the object first.
  within 120 kubectl get "node/$NODE" || true
  kubectl wait --for=condition=Ready "node/$NODE" --timeout=120s >/dev/null ||
    fail "node $NODE not Ready: $(kubectl describe node "$NODE" | sed -n '/Conditions/,/Addresses/p')"
  echo "node $NODE: Ready"
}

# --- images: make images' builds, and the pause image the sandboxes need -----------------
podman_() {
  CONTAINERS_CONF=deploy/images/containers.conf CONTAINERS_STORAGE_CONF=deploy/images/storage.conf \
    CONTAINERS_REGISTRIES_CONF=deploy/images/registries.conf podman "$@"
}

pause_image() {
  if [[ ! -x "$pause_bin" || deploy/k8s/tools/pause/pause.go -nt "$pause_bin" ]]; then
    (cd deploy/k8s/tools/pause && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' \
      -o "$root/$pause_bin" pause.go)
  fi
  local folder
  folder="$(mktemp -d)"
  cp "$pause_bin" "$folder/pause"
  tar -C "$folder" -cf "$folder/pause.tar" pause
  podman_ import --quiet --change 'ENTRYPOINT ["/pause"]' "$folder/pause.tar" "$PAUSE_IMAGE" \
    >/dev/null
  rm -rf "$folder"
}

import_images() {
  local archive="$state/images.tar" names=("$PAUSE_IMAGE")
  for name in "${PROCESSES[@]}"; do names+=("localhost/liftfit/$name:dev"); done
  podman_ save --quiet --multi-image-archive -o "$archive" "${names[@]}" ||
    fail "podman save of ${names[*]}"
  ctr --address "$socket" -n k8s.io images import --no-unpack=false "$archive" >/dev/null ||
    fail "ctr images import"
  rm -f "$archive"
  echo "images in containerd: $(ctr --address "$socket" -n k8s.io images ls -q | grep -c liftfit)"
}

# --- the overlay, with the Secrets `make up` takes from platform.env ---------------------
secrets() {
  local env=deploy/local/platform.env
  value() { grep -E "^$1=" "$env" | tail -n1 | cut -d= -f2-; }
  kubectl apply -f deploy/k8s/local/namespace.yaml >/dev/null
  secret() {
    local name="$1" args=()
    shift
    for key in "$@"; do args+=("--from-literal=$key=$(value "$key")"); done
    kubectl -n "$NAMESPACE" create secret generic "$name" "${args[@]}" --dry-run=client -o yaml |
      kubectl apply -f - >/dev/null
  }
  for service in BOOKING PAYMENT ACCESS NOTIFY GATEWAY; do
    local lower="${service,,}"
    kubectl -n "$NAMESPACE" create secret generic "liftfit-$lower-migrations" \
      "--from-literal=MIGRATION_DATABASE_URL=$(value "${service}_MIGRATION_DATABASE_URL")" \
      --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  done
  secret liftfit-booking BOOKING_DATABASE_URL BOOKING_IDEMPOTENCY_SECRET
  secret liftfit-payment PAYMENT_DATABASE_URL PAYMENT_IDEMPOTENCY_SECRET PAYMENT_WEBHOOK_SECRETS \
    CARD_GATEWAY_API_KEY
  secret liftfit-access ACCESS_DATABASE_URL ACCESS_IDEMPOTENCY_SECRET ACCESS_PIN_KEYS \
    LOCK_PROVIDER_API_KEY ACCESS_SPACE_DEVICES
  secret liftfit-notify NOTIFY_DATABASE_URL NOTIFY_IDEMPOTENCY_SECRET
  secret liftfit-gateway GATEWAY_DATABASE_URL
  # Each process's key pair for mutual TLS, as cert-manager would keep it (tls.crt, tls.key,
  # ca.crt), from make up's local authority (servicekit.certificates).
  "$root/.venv/bin/python" -m servicekit.certificates "$root/.local/tls" "${PROCESSES[@]}"
  for service in "${PROCESSES[@]}"; do
    kubectl -n "$NAMESPACE" create secret generic "$service-tls" \
      "--from-file=$root/.local/tls/$service/tls.crt" "--from-file=$root/.local/tls/$service/tls.key" \
      "--from-file=$root/.local/tls/$service/ca.crt" --dry-run=client -o yaml |
      kubectl apply -f - >/dev/null
  done
  # Each process's broker password, where Strimzi's user operator would keep it: in a Secret
  # named after the KafkaUser, under `password`.
  for service in "${PROCESSES[@]}"; do
    kubectl -n "$NAMESPACE" create secret generic "$service" \
      "--from-literal=password=$(value "${service^^}_KAFKA_PASSWORD")" --dry-run=client -o yaml |
      kubectl apply -f - >/dev/null
  done
}

apply() {
  kubectl kustomize deploy/k8s/local | kubectl apply -f - >/dev/null || fail "kubectl apply"
  echo "applied deploy/k8s/local"
}

wait_jobs() {
  local job
  for job in $(kubectl -n "$NAMESPACE" get jobs -o name); do
    kubectl -n "$NAMESPACE" wait --for=condition=Complete "$job" --timeout="${JOBS_WITHIN_S}s" \
      >/dev/null || fail "$job did not complete in ${JOBS_WITHIN_S} s: $(job_story "$job")"
    echo "$job: Complete"
  done
}

# What a Job that did not complete went through: its pods' states and events, and the tail
# of its container's log (whether it waited for an image, a database or a lock, or failed).
job_story() {
  local job="$1" selector="job-name=${1#job.batch/}"
  kubectl -n "$NAMESPACE" get pods -o wide 2>&1
  kubectl -n "$NAMESPACE" describe pods -l "$selector" 2>&1 | sed -n '/^Status:/p;/^Events:/,$p'
  local pod
  for pod in $(kubectl -n "$NAMESPACE" get pods -l "$selector" -o name 2>/dev/null); do
    container_logs "${pod#pod/}"
  done
  bash deploy/local/infra.sh psql postgres -At -c "SELECT 'pg:', pid, usename, datname, state,
    wait_event_type, wait_event, left(query, 80) FROM pg_stat_activity
    WHERE datname IS NOT NULL AND pid <> pg_backend_pid()" 2>&1 || true
}

wait_deployments() {
  local deployment
  for deployment in $(kubectl -n "$NAMESPACE" get deployments -o name); do
    kubectl -n "$NAMESPACE" rollout status "$deployment" --timeout="${READY_WITHIN_S}s" \
      >/dev/null || fail "$deployment not Ready: $(pods_story)"
    echo "$deployment: Ready"
  done
}

# Every pod that is not Ready: its states and events, and the tail of its container's log
# and of the one before it when it restarted (why a process exits, not only that it did).
pods_story() {
  kubectl -n "$NAMESPACE" get pods -o wide 2>&1
  local pod
  for pod in $(kubectl -n "$NAMESPACE" get pods --no-headers 2>/dev/null |
    awk '$3 != "Completed" { split($2, n, "/"); if (n[1] != n[2]) print $1 }'); do
    echo "--- $pod"
    kubectl -n "$NAMESPACE" describe pod "$pod" 2>&1 | sed -n '/^Status:/p;/Last State:/,/Exit Code/p;/^Events:/,$p'
    container_logs "$pod"
  done
}

# The tails of a pod's last two container logs, read where the kubelet writes them (the node
# reports no address, so `kubectl logs` cannot reach it).
container_logs() {
  local file
  for file in $(ls -t "$state/kubelet/pod-logs/${NAMESPACE}_$1_"*/*/*.log 2>/dev/null | head -n 2); do
    echo "--- ${file#"$root/"}"
    tail -n 60 "$file" | cut -c 1-400
  done
}

journey() {
  "$py" -m tests.k8s.card_journey "$@" || fail "card journey ($*)"
}

# A pod deleted is replaced by its Deployment: a new pod, Ready by its probe.
replace_pod() {
  local old
  old="$(kubectl -n "$NAMESPACE" get pods -l app=booking -o jsonpath='{.items[0].metadata.name}')"
  kubectl -n "$NAMESPACE" delete pod "$old" --wait=true >/dev/null
  kubectl -n "$NAMESPACE" rollout status deployment/booking --timeout="${READY_WITHIN_S}s" \
    >/dev/null || fail "booking's pod not replaced: $(kubectl -n "$NAMESPACE" get pods)"
  local new
  new="$(kubectl -n "$NAMESPACE" get pods -l app=booking -o jsonpath='{.items[0].metadata.name}')"
  [[ "$new" != "$old" ]] || fail "booking's pod $old is still the one running"
  kubectl -n "$NAMESPACE" wait --for=condition=Ready "pod/$new" --timeout="${READY_WITHIN_S}s" \
    >/dev/null || fail "pod $new not Ready"
  # The gateway answers for booking again: its /readyz asks every service over the channels
  # customers' calls take, so its channel to booking has reconnected (with its TLS handshake)
  # before the next journey, as a load balancer waits on readiness before sending traffic.
  within "$READY_WITHIN_S" curl -sf -o /dev/null http://127.0.0.1:18080/readyz ||
    fail "the gateway is not ready after booking's pod was replaced"
  echo "pod $old deleted; $new Ready in its place; the gateway ready"
}

# The pods bind the ports make up's services use: both at once cannot work.
platform_not_running() {
  local name
  for name in "${PROCESSES[@]}"; do
    [[ -f ".local/run/$name.pid" ]] && pid_alive "$(tr -dc 0-9 <".local/run/$name.pid")" &&
      fail "make up's $name runs (.local/run/$name.pid): make down first"
  done
  return 0
}

up() {
  local t0=$SECONDS
  mkdir -p "$run" "$logs"
  for binary in "$bin/kube-apiserver" "$bin/kube-controller-manager" "$bin/kube-scheduler" \
    "$bin/kubelet" "$bin/kubectl" "$etcd_bin"; do
    [[ -x "$binary" ]] || fail "$binary is missing (make deploy-local builds it)"
  done
  step "ports free of make up's services"; platform_not_running
  step "PostgreSQL and Kafka"; bash deploy/local/infra.sh up >"$logs/infra.log" 2>&1 ||
    { tail -n 20 "$logs/infra.log" >&2; fail "infra.sh up"; }
  step "Jaeger and the sandboxes"; bash scripts/platform.sh providers
  step "control plane"; credentials; control_plane
  step "node"; node
  step "images"; pause_image; import_images
  step "overlay"; secrets; apply
  step "migration Jobs"; wait_jobs
  step "Deployments"; wait_deployments
  step "first card journey"; journey first
  step "pod replaced"; replace_pod
  step "second card journey"; journey second
  cat <<EOF
== deploy-local: done in $((SECONDS - t0)) s. The platform runs as pods:
  kubectl     $bin/kubectl --kubeconfig .local/kube/kubeconfig get pods
  gateway     http://127.0.0.1:18080  (customer pages at /web/en/, the console at /web/en/console/)
  sandboxes   card http://127.0.0.1:18081, lock http://127.0.0.1:18082, mail http://127.0.0.1:18083/messages
  logs        .local/kube/log/ (cluster), the containers' logs in .local/kube/kubelet/pod-logs
Stop everything with: make deploy-local-down
EOF
}

down() {
  local name pid
  if [[ -f "$kubeconfig" ]] && pid_alive "$(recorded_pid kube-apiserver)"; then
    # The pods first, while the kubelet still runs to stop their containers.
    kubectl delete namespace "$NAMESPACE" --wait=true --timeout=120s >/dev/null 2>&1 || true
  fi
  for name in kubelet kube-scheduler kube-controller-manager kube-apiserver etcd containerd; do
    pid="$(recorded_pid "$name")"
    pid_alive "$pid" || continue
    kill "$pid"
    for ((i = 0; i < 60 && $(pid_alive "$pid" && echo 1 || echo 0); i++)); do sleep 0.5; done
    pid_alive "$pid" && kill -9 "$pid"
    echo "$name: stopped"
  done
  # Containers left behind (their shims outlive containerd), then the mounts under the state.
  pkill -f "containerd-shim-runc-v2 -namespace k8s.io -address $socket" 2>/dev/null || true
  grep -o " $state[^ ]*" /proc/mounts | sort -r | while read -r mount; do
    umount -l "$mount" 2>/dev/null || true
  done
  rm -rf "$state"
  bash deploy/local/infra.sh down >/dev/null
  echo "deploy-local: down"
}

status() {
  local name pid
  for name in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet; do
    pid="$(recorded_pid "$name")"
    if pid_alive "$pid"; then echo "$name: running (pid $pid)"; else echo "$name: not running"; fi
  done
  [[ -f "$kubeconfig" ]] && kubectl -n "$NAMESPACE" get pods -o wide 2>/dev/null || true
}

cluster() {
  mkdir -p "$run" "$logs"
  step "control plane"; credentials; control_plane
  step "node"; node
  step "images"; pause_image; import_images
}

case "${1:-up}" in
  up) up ;;
  cluster) cluster ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
