#!/usr/bin/env bash
# Builds moe's images with the versions of build/versions.env (`make image`): the builder
# (libgolang.so on the Envoy image's OS), Envoy's contrib image with the library, and the
# Istio init image that copies the library into istio-proxy. Needs Docker with BuildKit; not
# run in this project's CI (no Docker engine there), see build/README.md.
#
#   bash build/images.sh            # all three
#   bash build/images.sh builder    # one of: builder envoy istio-init
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=versions.env
. build/versions.env

build() {
  case "$1" in
    builder)
      docker build -f build/Dockerfile.builder \
        --build-arg GO_VERSION="${GO_VERSION}" --build-arg BUILD_OS_IMAGE="${BUILD_OS_IMAGE}" \
        --build-arg ENVOY_GLIBC="${GLIBC}" -t "${BUILDER_IMAGE}" . ;;
    envoy)
      docker build -f build/Dockerfile.envoy \
        --build-arg BUILDER_IMAGE="${BUILDER_IMAGE}" --build-arg ENVOY_IMAGE="${ENVOY_IMAGE}" \
        -t "${ENVOY_MOE_IMAGE}" . ;;
    istio-init)
      docker build -f build/Dockerfile.istio-init \
        --build-arg BUILDER_IMAGE="${BUILDER_IMAGE}" -t "${ISTIO_INIT_IMAGE}" . ;;
    *) echo "images.sh: unknown image $1 (builder, envoy, istio-init)" >&2; exit 2 ;;
  esac
}

if [ $# -eq 0 ]; then
  set -- builder envoy istio-init
fi
for image in "$@"; do
  build "$image"
done
