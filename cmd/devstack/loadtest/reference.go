package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/memocart/memocart/models/sqlstore"
)

// ReferenceKey is what the reference server knows of an API key: whose
// orders it may read.
type ReferenceKey struct {
	AccountID string
	Mode      string
}

// Reference is the reads' reference (issue 24): the least a Go service
// does to answer GET /v1/orders/{id} from Postgres. net/http and a
// pgxpool; the Bearer key looked up in a map in memory; the service's
// own order read (sqlstore.PostgresOrderByIDSQL: the order row with its
// steps, items and payments, one query) answered as JSON. No middleware,
// log line, metric, rate limit or domain mapping: what the service does
// beyond this is what GET's ratio to it measures.
type Reference struct {
	// URL is the server's base URL, http://127.0.0.1:port.
	URL  string
	pool *pgxpool.Pool
	srv  *http.Server
	keys map[string]ReferenceKey
	done chan error
}

// StartReference starts the reference server on a free port of 127.0.0.1,
// reading the database dbURL with as many connections as the service
// keeps (sqlstore.PostgresMaxConns, all opened up front, as the service
// keeps them idle), for the keys given by their secret.
func StartReference(ctx context.Context, dbURL string, keys map[string]ReferenceKey) (*Reference, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("reference server: %w", err)
	}
	cfg.MaxConns = sqlstore.PostgresMaxConns
	cfg.MinConns = sqlstore.PostgresMaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("reference server: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("reference server: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		pool.Close()
		return nil, err
	}
	r := &Reference{URL: "http://" + ln.Addr().String(), pool: pool, keys: keys, done: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/orders/{id}", r.getOrder)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { r.done <- r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the server and closes its pool.
func (r *Reference) Close(ctx context.Context) error {
	err := r.srv.Shutdown(ctx)
	if serr := <-r.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	r.pool.Close()
	return err
}

// referenceOrderSQL is the service's read of an order by id.
var referenceOrderSQL = sqlstore.PostgresOrderByIDSQL()

func (r *Reference) getOrder(w http.ResponseWriter, req *http.Request) {
	token, bearer := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	key, known := r.keys[token]
	if !bearer || !known {
		writeReferenceError(w, http.StatusUnauthorized, "invalid_api_key")
		return
	}
	rows, err := r.pool.Query(req.Context(), referenceOrderSQL, req.PathValue("id"))
	if err != nil {
		writeReferenceError(w, http.StatusInternalServerError, "internal_error")
		return
	}
	defer rows.Close()
	if !rows.Next() {
		if rows.Err() != nil {
			writeReferenceError(w, http.StatusInternalServerError, "internal_error")
			return
		}
		writeReferenceError(w, http.StatusNotFound, "order_not_found")
		return
	}
	body, owner, err := referenceOrderJSON(rows)
	if err != nil {
		writeReferenceError(w, http.StatusInternalServerError, "internal_error")
		return
	}
	if owner != key {
		// Another account's or mode's order does not exist for this key.
		writeReferenceError(w, http.StatusNotFound, "order_not_found")
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(body)
}

// referenceOrderJSON renders the current row as {"order":{column: value,
// ...}}, each column under its own name and the aggregates (the columns
// named *_json) as the JSON Postgres built, and returns whose order it is.
func referenceOrderJSON(rows pgx.Rows) ([]byte, ReferenceKey, error) {
	fields := rows.FieldDescriptions()
	dest := make([]any, len(fields))
	for i, f := range fields {
		if strings.HasSuffix(f.Name, "_json") {
			dest[i] = new(json.RawMessage)
		} else {
			dest[i] = new(any)
		}
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, ReferenceKey{}, err
	}
	var owner ReferenceKey
	var b bytes.Buffer
	b.WriteString(`{"order":{`)
	for i, f := range fields {
		var v any = dest[i]
		if p, ok := v.(*any); ok {
			v = *p
			switch f.Name {
			case "account_id":
				owner.AccountID, _ = v.(string)
			case "mode":
				owner.Mode, _ = v.(string)
			}
		}
		js, err := json.Marshal(v)
		if err != nil {
			return nil, owner, fmt.Errorf("column %s: %w", f.Name, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + f.Name + `":`)
		b.Write(js)
	}
	b.WriteString("}}\n")
	return b.Bytes(), owner, nil
}

func writeReferenceError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"error":{"code":%q}}`+"\n", code)
}
