# Production image of memocart: the api and worker subcommands, built with
# -tags prod so the embedded Temporal dev server is not linked in.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -tags prod -trimpath -ldflags="-s -w" -o /out/memocart ./cmd/memocart

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/memocart /usr/local/bin/memocart
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/memocart"]
CMD ["api"]
