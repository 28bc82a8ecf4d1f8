# syntax=docker/dockerfile:1
#
# Builds libgolang.so (every moe plugin in one c-shared library) for Envoy v1.39.
#
# Why ubuntu:22.04 and not golang:1.26 as the build OS: a cgo .so is linked against the build
# machine's glibc and records the newest glibc symbol versions it uses; dlopen fails ("version
# `GLIBC_2.xx' not found") in an older glibc. envoyproxy/envoy:contrib-v1.39.x is built FROM
# ubuntu:22.04 (Envoy v1.39.0 distribution/docker/Dockerfile-envoy: BUILD_OS=ubuntu,
# BUILD_TAG=22.04), i.e. glibc 2.35, while the golang:1.26 images are Debian (bookworm: 2.36,
# trixie: 2.41). So the compile runs on ubuntu:22.04 itself (glibc equal to Envoy's, never newer),
# with the Go toolchain copied out of the official image (Go's release toolchain runs on any
# linux/amd64 or arm64). The guard at the end fails the build if the .so needs a newer glibc than
# ENVOY_GLIBC. When the pinned Envoy moves to another minor, re-check its Dockerfile-envoy.
#
#   docker build -f build/Dockerfile.builder -t moe/builder:v1.39 .                  # builder image (/out/libgolang.so)
#   docker build -f build/Dockerfile.builder --target export --output type=local,dest=out .   # just out/libgolang.so
#
# Not built in this project's CI (its machines have no Docker engine); see build/README.md.

ARG GO_VERSION=1.26.8
ARG BUILD_OS_IMAGE=ubuntu:22.04

FROM golang:${GO_VERSION} AS go

FROM ${BUILD_OS_IMAGE} AS builder
# glibc of the Envoy image; the .so may require at most this version.
ARG ENVOY_GLIBC=2.35
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       gcc libc6-dev binutils ca-certificates git \
    && rm -rf /var/lib/apt/lists/*
COPY --from=go /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:/root/go/bin:${PATH} \
    CGO_ENABLED=1 \
    GOTOOLCHAIN=local \
    GOFLAGS=-buildvcs=false
WORKDIR /src
# Modules first, so a source change does not re-download them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/root/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    mkdir -p /out \
    && ldflags="$(sed -n 's/^CSHARED_LDFLAGS := //p' build/cshared.mk)" \
    && go build -buildmode=c-shared -trimpath -ldflags="${ldflags}" -o /out/libgolang.so ./cgo/libgolang \
    && need=$(objdump -T /out/libgolang.so | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -Vu | tail -n 1) \
    && echo "libgolang.so needs glibc >= ${need}; Envoy image has ${ENVOY_GLIBC}" \
    && [ "$(printf '%s\n%s\n' "${need}" "${ENVOY_GLIBC}" | sort -V | tail -n 1)" = "${ENVOY_GLIBC}" ]

# `--target export --output ...` writes just the library to the host.
FROM scratch AS export
COPY --from=builder /out/libgolang.so /libgolang.so

# Default target: the builder image, used as a stage by Dockerfile.envoy and Dockerfile.istio-init.
FROM builder
