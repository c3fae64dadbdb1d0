// Package sqlstore is Memocart's data layer: GORM over Postgres in
// production and over SQLite (pure Go, no cgo) for the embedded default.
// It holds the row structs and their mapping to domain types, the queries
// and transactions, the embedded versioned SQL migrations, and the
// translation of driver errors into model error codes.
//
// It may import models and GORM. Callers see only domain types.
package sqlstore

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/memocart/memocart/models"
)

// Dialect names.
const (
	DialectPostgres = "postgres"
	DialectSQLite   = "sqlite"
)

// Store is the database. It is safe for concurrent use.
type Store struct {
	db      *gorm.DB
	dialect string

	// Webhooks: how event bodies are written (SetEventRenderer) and the
	// key endpoint secrets are sealed with (SetSecretKey; nil: none).
	events  EventRenderer
	secrets cipher.AEAD

	// entered is told each order status a committed write entered
	// (SetStatusObserver; nil: nobody).
	entered func(models.OrderStatus)
}

// Open connects to the database named by dsn: a postgres:// or
// postgresql:// URL, or a SQLite file given as sqlite://PATH, file:PATH or
// a plain path. It does not migrate; call Migrate.
func Open(ctx context.Context, dsn string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Each attempt to open gets its own config: gorm.Open keeps the pool
	// it opened in the config and closes it when the open fails, so a
	// retry with the same config would find a closed pool.
	config := func() *gorm.Config {
		return &gorm.Config{
			Logger:                 newGormLogger(log),
			TranslateError:         true,
			SkipDefaultTransaction: true, // every multi-row write here opens its own transaction
			NowFunc:                func() time.Time { return time.Now().UTC() },
		}
	}
	var (
		dialector gorm.Dialector
		dialect   string
	)
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		dialector, dialect = postgres.Open(withConnectTimeout(dsn)), DialectPostgres
	default:
		path, err := sqlitePath(dsn)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("creating database directory: %w", err)
		}
		dialector, dialect = sqliteDialector{dsn: sqliteDSN(path)}, DialectSQLite
	}
	db, err := openRetryingBusy(ctx, dialector, dialect, config)
	if err != nil {
		return nil, fmt.Errorf("opening %s database: %w", dialect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	if dialect == DialectSQLite {
		// One writer at a time is SQLite's rule; busy_timeout makes the
		// others wait instead of failing, also across processes (memocart
		// keys while memocart dev runs).
		sqlDB.SetMaxOpenConns(4)
	} else {
		// Keep every connection the pool may open: with fewer idle slots
		// than open ones, a burst above the idle count closes connections
		// it needs again a moment later, and each new one costs Postgres
		// a backend start and a cold catalog cache for its first plans
		// (measured: ten new sessions a second under 16 concurrent GETs,
		// two thirds of Postgres's time per GET in planning; see
		// the history of docs/benchmarks.md). Idle ones still close after a while.
		sqlDB.SetMaxOpenConns(PostgresMaxConns)
		sqlDB.SetMaxIdleConns(PostgresMaxConns)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pingCtx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("connecting to %s database: %w", dialect, err)
	}
	return &Store{db: db, dialect: dialect}, nil
}

// openRetryingBusy opens the database. Switching a new SQLite file to WAL
// takes an exclusive lock and, when another process is doing the same,
// answers SQLITE_BUSY at once without waiting busy_timeout: the open is
// retried briefly (processes starting together: dev and `memocart keys`,
// replicas migrating), each attempt with a config of its own.
func openRetryingBusy(ctx context.Context, dialector gorm.Dialector, dialect string, config func() *gorm.Config) (*gorm.DB, error) {
	db, err := gorm.Open(dialector, config())
	for attempt := 1; err != nil && dialect == DialectSQLite && sqliteBusy(err) && attempt < 20; attempt++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt) * 25 * time.Millisecond):
		}
		db, err = gorm.Open(dialector, config())
	}
	return db, err
}

// PostgresMaxConns is the most connections a process keeps to Postgres.
const PostgresMaxConns = 20

// PostgresConnectTimeout bounds opening a Postgres connection unless the
// URL says otherwise (connect_timeout, in seconds): a server that accepts
// TCP but never answers (hung, overloaded) must not hold a request beyond
// its own deadline, or a background job forever.
const PostgresConnectTimeout = 5 * time.Second

// withConnectTimeout adds connect_timeout to a postgres:// URL that has
// none.
func withConnectTimeout(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Query().Has("connect_timeout") {
		return dsn // a malformed URL is reported by the driver as it is
	}
	q := u.Query()
	q.Set("connect_timeout", fmt.Sprint(int(PostgresConnectTimeout.Seconds())))
	u.RawQuery = q.Encode()
	return u.String()
}

// Dialect returns DialectPostgres or DialectSQLite.
func (s *Store) Dialect() string { return s.dialect }

// Close closes the connection pool.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Ping checks the database answers, for readiness probes.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// sqliteBusy reports SQLite's "database is locked". The driver's error
// carries the code only in its text at this point (the dialector wraps it).
func sqliteBusy(err error) bool {
	return strings.Contains(err.Error(), "SQLITE_BUSY")
}

func sqlitePath(dsn string) (string, error) {
	path := dsn
	for _, p := range []string{"sqlite://", "sqlite:", "file:"} {
		if rest, ok := strings.CutPrefix(path, p); ok {
			path = rest
			break
		}
	}
	path, _, _ = strings.Cut(path, "?")
	if path == "" || path == ":memory:" {
		return "", errors.New("sqlite database needs a file path (in-memory databases are per connection)")
	}
	return path, nil
}

// SQLiteBusyTimeout is how long a SQLite write waits for another
// connection's or process's write lock before failing with SQLITE_BUSY
// (which the API answers 503). The wait cannot be cut short by a request's
// deadline (SQLite's busy handler ignores interrupts), so it is also the
// bound on such a request; it stays below the API's request timeout.
const SQLiteBusyTimeout = 5 * time.Second

func sqliteDSN(path string) string {
	q := url.Values{}
	for _, p := range []string{fmt.Sprintf("busy_timeout(%d)", SQLiteBusyTimeout.Milliseconds()), "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	// BEGIN IMMEDIATE takes the write lock up front, so two transactions
	// never deadlock upgrading read locks; the loser waits busy_timeout.
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	return "file:" + path + "?" + q.Encode()
}

// newID returns a fresh random identifier with the given prefix.
func newID(prefix string) string {
	id, err := models.NewID(prefix, rand.Reader)
	if err != nil {
		// crypto/rand does not fail on supported platforms; if it does the
		// process cannot mint keys or ids safely at all.
		panic(err)
	}
	return id
}

// gormLogger is GORM's logger here. It does nothing for a query nobody
// will read about: GORM's own loggers build the full SQL text of every
// query before deciding whether to log it, which cost a measurable share of
// every read (the history of docs/benchmarks.md). The store returns every error to its
// caller, which logs it once at the boundary, so errors go to debug; a slow
// query goes to warn, as SQL with placeholders: values hold e-mails and
// addresses and are never logged.
type gormLogger struct {
	log  *slog.Logger
	slow time.Duration
}

// slowQuery is the duration above which a query is logged at warn.
const slowQuery = 500 * time.Millisecond

func newGormLogger(log *slog.Logger) logger.Interface {
	return gormLogger{log: log, slow: slowQuery}
}

// LogMode is GORM's level switch; the slog handler's level rules instead.
func (l gormLogger) LogMode(logger.LogLevel) logger.Interface { return l }

func (l gormLogger) Info(ctx context.Context, msg string, args ...any) {
	l.log.InfoContext(ctx, fmt.Sprintf(msg, args...))
}

func (l gormLogger) Warn(ctx context.Context, msg string, args ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(msg, args...))
}

func (l gormLogger) Error(ctx context.Context, msg string, args ...any) {
	l.log.ErrorContext(ctx, fmt.Sprintf(msg, args...))
}

// Trace is called after every query; fc builds its SQL text, only when a
// record will be written.
func (l gormLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	var level slog.Level
	switch {
	case err != nil && !errors.Is(err, gorm.ErrRecordNotFound):
		level = slog.LevelDebug
	case l.slow > 0 && time.Since(begin) > l.slow:
		level = slog.LevelWarn
	default:
		return
	}
	if !l.log.Enabled(ctx, level) {
		return
	}
	sql, rows := fc()
	attrs := []slog.Attr{slog.String("sql", sql), slog.Duration("duration", time.Since(begin)), slog.Int64("rows", rows)}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	l.log.LogAttrs(ctx, level, "SQL query", attrs...)
}

// ParamsFilter keeps values out of the SQL text GORM gives Trace.
func (gormLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

// utc normalises a time read from either database.
func utc(t time.Time) time.Time { return t.UTC() }

// forUpdate locks the rows q reads until tx ends, on Postgres. SQLite
// needs no lock clause: its transactions begin IMMEDIATE, one writer at a
// time.
func (s *Store) forUpdate(tx *gorm.DB) *gorm.DB {
	if s.dialect == DialectPostgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
}

// take reads the one row q selects: notFound when there is none, any other
// failure as an error reading what.
func take[R any](q *gorm.DB, notFound error, what string) (R, error) {
	var row R
	err := q.Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, notFound
	}
	if err != nil {
		return row, fmt.Errorf("reading %s: %w", what, err)
	}
	return row, nil
}
