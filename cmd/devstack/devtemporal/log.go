package devtemporal

import (
	"context"
	"log/slog"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts a *slog.Logger to the Temporal server's logger
// interface. level is a floor below which records are dropped before any
// tag is rendered: the server logs thousands of info lines, and Stop raises
// the floor above everything to keep shutdown chatter out of the caller's
// logs.
type serverLogger struct {
	log   *slog.Logger
	level *slog.LevelVar
}

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

func (l serverLogger) Debug(msg string, tags ...tag.Tag) { l.emit(slog.LevelDebug, msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)  { l.emit(slog.LevelInfo, msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)  { l.emit(slog.LevelWarn, msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }

// DPanic only panics in zap's development mode; in production it logs.
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }

// Panic and Fatal must not return: the server's code after them assumes
// the process is gone (after a failed listen, Fatal is followed by use of a
// nil listener). Panicking instead of exiting lets Start recover when the
// call happens on its goroutine and keeps the process alive for `memocart
// dev`'s own shutdown otherwise.
func (l serverLogger) Panic(msg string, tags ...tag.Tag) {
	l.emit(slog.LevelError, msg, tags)
	panic("temporal server: " + msg)
}

func (l serverLogger) Fatal(msg string, tags ...tag.Tag) {
	l.emit(slog.LevelError, msg, tags)
	panic("temporal server: " + msg)
}

// With keeps the server's per-component tags without rendering them until
// a record is actually written.
func (l serverLogger) With(tags ...tag.Tag) log.Logger {
	args := make([]any, len(tags))
	for i, t := range tags {
		args[i] = slog.Any(t.Key(), lazyTag{t})
	}
	return serverLogger{log: l.log.With(args...), level: l.level}
}

func (l serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if level < l.level.Level() || !l.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, len(tags))
	for i, t := range tags {
		attrs[i] = slog.Any(t.Key(), lazyTag{t})
	}
	l.log.LogAttrs(ctx, level, msg, attrs...)
}

// lazyTag renders a tag's value only when a handler asks for it; rendering
// zap fields goes through an encoder and is not free.
type lazyTag struct{ t tag.Tag }

func (v lazyTag) LogValue() slog.Value { return slog.AnyValue(v.t.Value()) }
