# syntax=docker/dockerfile:1
# gpudx as a static binary in a distroless image that runs as non-root.
#   docker build -t gpudx --build-arg VERSION=$(git describe --always) .

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO_ENABLED=0: a static binary (SQLite is modernc's pure-Go port), so the
# image needs no libc.
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/gpudx/gpudx/internal/cli.Version=${VERSION}" \
      -o /out/gpudx ./cmd/gpudx

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gpudx /usr/local/bin/gpudx
# 65532:65532, distroless's nonroot user.
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/gpudx"]
CMD ["--help"]
