# syntax=docker/dockerfile:1
# The hub is pure Go (SQLite is modernc.org/sqlite), so the image is one
# static binary on distroless: no shell, no curl, no libc. Build and run:
#
#   docker build --build-arg VERSION=$(git describe --always) \
#                --build-arg REVISION=$(git rev-parse HEAD) -t xiaozhi-hub .
#   docker run -p 8000:8000 -v xiaozhi-data:/data xiaozhi-hub
#
# or `docker compose up -d` (compose.yaml). For several architectures at once
# (the builder cross-compiles on the build machine's own platform: no
# emulation; multi-platform images go to a registry with --push):
#
#   docker buildx build --platform linux/amd64,linux/arm64,linux/arm/v7 \
#     --build-arg VERSION=$(git describe --always) -t REGISTRY/xiaozhi-hub --push .

FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces mochi-mqtt/server with this copy (its PATCHES.md).
COPY third_party/ third_party/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=
# Set by BuildKit from --platform (linux/arm/v7: linux, arm, v7; without
# --platform, the build machine's platform).
ARG TARGETOS TARGETARCH TARGETVARIANT
# -buildvcs=false: the build context has no .git; VERSION and REVISION say
# what was built, and `xiaozhi-hub version` prints them. GOARM comes from
# arm's variant (v6, v7); other architectures' variants are not GOARM.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    if [ "$TARGETARCH" = arm ]; then export GOARM="${TARGETVARIANT#v}"; fi \
 && CGO_ENABLED=0 GOOS=${TARGETOS:-$(go env GOOS)} GOARCH=${TARGETARCH:-$(go env GOARCH)} \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/xiaozhi-hub/hub/server.Version=${VERSION} -X main.buildRevision=${REVISION}" \
      -o /out/xiaozhi-hub ./cmd/xiaozhi-hub \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/xiaozhi-hub /usr/local/bin/xiaozhi-hub
# A new named volume takes this directory's owner: the nonroot user (65532).
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV XZ_HUB_LISTEN=:8000 \
    XZ_HUB_DATA_DIR=/data
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["/usr/local/bin/xiaozhi-hub", "healthcheck", "--timeout", "4s"]
ENTRYPOINT ["/usr/local/bin/xiaozhi-hub"]
CMD ["serve"]
