# Production image of memocart: the service module's one binary (api,
# worker, migrate and the operator commands). The developer tools are the
# separate module cmd/devstack and are not built here.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/memocart ./cmd/memocart

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/memocart /usr/local/bin/memocart
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/memocart"]
CMD ["api"]
