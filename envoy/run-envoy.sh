#!/usr/bin/env bash
# Runs a real Envoy (contrib image, same minor version as the Go SDK moe is built against) with
# one of the bootstrap files in this directory and out/libgolang.so mounted at the path the
# bootstrap names. Needs Docker with a running engine, or an `envoy` contrib binary on PATH.
# NOT run in this project's CI: its machines have neither (moe-host runs the same files there).
#
#   envoy/run-envoy.sh [envoy/envoy.yaml]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-envoy/envoy.yaml}
version=$(cat envoy/ENVOY_VERSION)            # v1.39.0
image="envoyproxy/envoy:contrib-${version%.*}-latest"

# The bootstraps name the library as out/libgolang.so relative to the repo root; in the
# container the repo is mounted at /moe and Envoy runs from there.
if command -v envoy >/dev/null 2>&1; then
  exec envoy -c "$config" --concurrency 2 -l info
fi
exec docker run --rm --network host -v "$PWD:/moe" -w /moe "$image" \
  envoy -c "/moe/$config" --concurrency 2 -l info
