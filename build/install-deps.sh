#!/usr/bin/env bash
# Installs the Debian packages moe needs to build and test on a fresh machine, skipping what is
# already there. Used by `make deps` (and so by `make run`, `make test`) and by .ci/run.
set -euo pipefail

packages=(
  build-essential pkg-config
  libevent-dev        # moe-host: one event loop per worker
  libhttp-parser-dev  # moe-host: HTTP/1.1 parsing on both sides
  nlohmann-json3-dev  # moe-host: reads the bootstrap compiled by moectl
  libclang-rt-14-dev  # sanitizer runtimes for the ASan/LSan build of moe-host
  redis-server        # limit-count tests run against a real Redis
  chromium            # cors: a headless browser does a real cross-origin fetch through moe-host
  curl
  binutils            # readelf: build/build_test.go checks the glibc versions out/libgolang.so needs
  valgrind            # make bench (cmd/moebench): instructions per request under callgrind; its smoke test in make test
  wrk                 # make bench: requests/s, latency and host CPU under load
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
