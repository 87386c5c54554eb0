#!/usr/bin/env bash
# make images: one image per process from the one Containerfile, tagged liftfit/<process>:dev.
# The base is BASE (default: the public Python 3.11 image); when that cannot be had (no
# registry reachable), it is built first from Debian's packages with mmdebstrap. The
# dependencies come from a wheelhouse the host's pip fills, so the build needs no network.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/deploy/images"
export CONTAINERS_CONF="$here/containers.conf"
export CONTAINERS_STORAGE_CONF="$here/storage.conf"
export CONTAINERS_REGISTRIES_CONF="$here/registries.conf"
cd "$root"

public_base="python:3.11-slim-bookworm"  # a short name: the builder's registries.conf says where from
debian_base="localhost/liftfit/python-base:3.11-bookworm"
tag="${IMAGE_TAG:-dev}"
processes=(booking:services.booking payment:services.payment access:services.access
  notify:services.notify gateway:gateway_bff)

base_image() {
  if [[ -n "${BASE:-}" ]]; then echo "$BASE"; return; fi
  # A base already here is used again: no registry is asked twice.
  if podman image exists "$public_base"; then echo "$public_base"; return; fi
  if podman image exists "$debian_base"; then echo "$debian_base"; return; fi
  if timeout 60 podman pull --policy=always -q "$public_base" >/dev/null 2>&1; then
    echo "$public_base"; return
  fi
  echo "no registry reachable: building $debian_base with mmdebstrap" >&2
  build_debian_base
  echo "$debian_base"
}

# Debian's python3 in a minimal root filesystem; grpcio needs libstdc++6. podman import sets
# PATH, which pods started from a manifest would otherwise lack.
build_debian_base() {
  local rootfs="$root/.local/images/rootfs.tar"
  mkdir -p "$(dirname "$rootfs")"
  mmdebstrap --quiet --variant=essential \
    --include=python3,python3-venv,ca-certificates,libstdc++6 bookworm "$rootfs" >&2
  podman import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
    --change 'CMD ["python3"]' "$rootfs" "$debian_base" >&2
  rm -f "$rootfs"
}

# The image the tag named before this build, once the tag names another: every build of a
# changed tree would otherwise leave a 700 MB image without a name behind (make test builds
# them each run; a developer's disk filled up). One still in use by a container stays.
forget_replaced() {
  local replaced="$1" tag="$2"
  [[ -n "$replaced" ]] || return 0
  [[ "$(podman image inspect --format '{{.Id}}' "$tag")" != "$replaced" ]] || return 0
  podman rmi "$replaced" >/dev/null 2>&1 || true
}

# The wheels of requirements.lock for this platform, built or fetched by the host's pip.
mkdir -p .local/wheelhouse
.venv/bin/pip wheel -q -r requirements.lock -w .local/wheelhouse

base="$(base_image)"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
source="$(git config --get remote.origin.url 2>/dev/null || echo liftfit)"
for entry in "${processes[@]}"; do
  name="${entry%%:*}" module="${entry#*:}"
  replaced="$(podman image inspect --format '{{.Id}}' "localhost/liftfit/$name:$tag" 2>/dev/null || true)"
  podman build --quiet --network=none --layers -f Containerfile \
    --build-arg BASE="$base" --build-arg PROCESS="$module" \
    --build-arg REVISION="$revision" --build-arg SOURCE="$source" \
    -t "localhost/liftfit/$name:$tag" . >/dev/null
  forget_replaced "$replaced" "localhost/liftfit/$name:$tag"
  size="$(podman image inspect --format '{{.Size}}' "localhost/liftfit/$name:$tag")"
  echo "liftfit/$name:$tag ($module) on $base: $((size / 1000000)) MB"
done
