#!/usr/bin/env bash
# Generates the Python code of every contract in protos/ into build/gen (git-ignored).
# Generation happens at install time; nothing generated is committed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
out="$root/build/gen"
rm -rf "$out" && mkdir -p "$out"
mapfile -t files < <(cd "$root/protos" && find . -name '*.proto' | sed 's|^\./||' | sort)
(cd "$root/protos" && "$python" -m grpc_tools.protoc -I . \
  --python_out="$out" --grpc_python_out="$out" \
  --mypy_out="$out" --mypy_grpc_out="$out" \
  --plugin=protoc-gen-mypy="$(dirname "$python")/protoc-gen-mypy" \
  --plugin=protoc-gen-mypy_grpc="$(dirname "$python")/protoc-gen-mypy_grpc" \
  "${files[@]}")
# Regular packages, so every tool resolves them the same way.
find "$out" -type d -exec touch {}/__init__.py \;
rm -f "$out/__init__.py"
echo "generated ${#files[@]} protos into build/gen"
