# Coffer in a container: a static binary (CGO_ENABLED=0: SQLite is
# modernc.org/sqlite, pure Go) on a distroless base, run as a non-root
# user. Build from the repository root:
#
#   docker build -t coffer .
#
# deploy/compose.yaml runs three such nodes on PostgreSQL and MinIO; see
# docs/operations.md. test/deploy checks that the paths this
# file copies exist and that compose.yaml agrees with it, and builds the
# image when a Docker engine answers (test/deploy).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
# No VCS stamping: the build context has no .git (.dockerignore).
# VERSION: the release version `coffer version` reports (scripts/release.sh
# stamps its binaries the same way); empty: the module version, "(devel)".
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -X github.com/coffer-storage/coffer/internal/buildinfo.Version=${VERSION}" -o /out/coffer ./cmd/coffer \
 && mkdir -p /out/data && chmod 700 /out/data

# distroless/static: CA certificates and time zones, no shell; the
# nonroot user is 65532:65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/coffer /usr/local/bin/coffer
# The data folder, owned by the user: a named volume mounted here starts
# with this owner and mode.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV COFFER_DATA=/data
VOLUME ["/data"]
EXPOSE 8080 9000
# No shell or curl in the image: the binary asks itself (GET /readyz on
# 127.0.0.1 at --listen's port, from COFFER_LISTEN, else 8080).
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/coffer", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/coffer"]
CMD ["serve", "--listen", "0.0.0.0:8080", "--s3-listen", "0.0.0.0:9000"]
