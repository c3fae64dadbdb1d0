package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"gorm.io/gorm"
)

// TestGormLoggerBuildsSQLOnlyWhenLogging: the SQL text of a query is built
// only for a record that will be written, and never holds values.
func TestGormLoggerBuildsSQLOnlyWhenLogging(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	built := 0
	fc := func() (string, int64) { built++; return "SELECT * FROM orders WHERE id = $1", 1 }
	l := func(level slog.Level) gormLogger {
		buf.Reset()
		return gormLogger{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})), slow: slowQuery}
	}

	l(slog.LevelInfo).Trace(ctx, time.Now(), fc, nil)
	l(slog.LevelInfo).Trace(ctx, time.Now(), fc, gorm.ErrRecordNotFound)
	l(slog.LevelInfo).Trace(ctx, time.Now(), fc, errors.New("boom")) // debug record, info handler
	assert.Equal(t, 0, built, "no record, no SQL text")
	assert.Empty(t, buf.String())

	lg := l(slog.LevelDebug)
	lg.Trace(ctx, time.Now(), fc, errors.New("boom"))
	assert.Equal(t, 1, built)
	assert.Contains(t, buf.String(), "SELECT * FROM orders WHERE id = $1")
	assert.Contains(t, buf.String(), "boom")

	lg = l(slog.LevelWarn)
	lg.Trace(ctx, time.Now().Add(-time.Second), fc, nil)
	assert.Equal(t, 2, built, "a slow query is logged")
	assert.Contains(t, buf.String(), "level=WARN")

	sql, vars := lg.ParamsFilter(ctx, "SELECT 1 WHERE email = $1", "ada@example.com")
	assert.Equal(t, "SELECT 1 WHERE email = $1", sql)
	assert.Nil(t, vars, "values never reach the log")
}
