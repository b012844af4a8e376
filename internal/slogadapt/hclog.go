package slogadapt

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level of hclog's Trace, below Debug.
const LevelTrace = slog.LevelDebug - 4

// Leveler decides the level a library's message is logged at, given the
// level the library chose, its message and its key/value arguments.
type Leveler func(level slog.Level, msg string, args []any) slog.Level

// hclogLogger is an hclog.Logger that logs to a slog.Logger.
type hclogLogger struct {
	log     *slog.Logger
	name    string
	implied []any
	level   Leveler
}

var _ hclog.Logger = (*hclogLogger)(nil)

// HCLog returns an hclog.Logger named name that logs to l with the
// attribute component=name, at the levels level decides (nil keeps the
// library's).
func HCLog(l *slog.Logger, name string, level Leveler) hclog.Logger {
	if level == nil {
		level = func(lv slog.Level, _ string, _ []any) slog.Level { return lv }
	}
	return &hclogLogger{log: l, name: name, level: level}
}

// slogLevel maps an hclog level to slog's.
func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Log logs msg with args (key/value pairs) at the level h's Leveler picks.
func (h *hclogLogger) Log(level hclog.Level, msg string, args ...any) {
	lv := h.level(slogLevel(level), msg, args)
	ctx := context.Background()
	if !h.log.Enabled(ctx, lv) {
		return
	}
	attrs := append([]any{"component", h.name}, h.implied...)
	h.log.Log(ctx, lv, msg, append(attrs, formatArgs(args)...)...)
}

// formatArgs renders the values hclog formats itself (hclog.Fmt) into
// strings, leaving the others to slog.
func formatArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if f, ok := a.(hclog.Format); ok && len(f) > 0 {
			if format, ok := f[0].(string); ok {
				a = fmt.Sprintf(format, f[1:]...)
			}
		}
		out[i] = a
	}
	return out
}

// Trace logs at hclog's Trace level.
func (h *hclogLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }

// Debug logs at hclog's Debug level.
func (h *hclogLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }

// Info logs at hclog's Info level.
func (h *hclogLogger) Info(msg string, args ...any) { h.Log(hclog.Info, msg, args...) }

// Warn logs at hclog's Warn level.
func (h *hclogLogger) Warn(msg string, args ...any) { h.Log(hclog.Warn, msg, args...) }

// Error logs at hclog's Error level.
func (h *hclogLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogLogger) enabled(l slog.Level) bool { return h.log.Enabled(context.Background(), l) }

// IsTrace reports whether the slog logger takes trace lines.
func (h *hclogLogger) IsTrace() bool { return h.enabled(LevelTrace) }

// IsDebug reports whether the slog logger takes debug lines.
func (h *hclogLogger) IsDebug() bool { return h.enabled(slog.LevelDebug) }

// IsInfo reports whether the slog logger takes info lines.
func (h *hclogLogger) IsInfo() bool { return h.enabled(slog.LevelInfo) }

// IsWarn reports whether the slog logger takes warnings.
func (h *hclogLogger) IsWarn() bool { return h.enabled(slog.LevelWarn) }

// IsError reports whether the slog logger takes errors.
func (h *hclogLogger) IsError() bool { return h.enabled(slog.LevelError) }

// ImpliedArgs returns the arguments With added.
func (h *hclogLogger) ImpliedArgs() []any { return append([]any(nil), h.implied...) }

// With returns a logger that adds args to every line.
func (h *hclogLogger) With(args ...any) hclog.Logger {
	cp := *h
	cp.implied = append(append([]any(nil), h.implied...), args...)
	return &cp
}

// Name returns the logger's name, its component attribute.
func (h *hclogLogger) Name() string { return h.name }

// Named returns a logger named "h's name.name".
func (h *hclogLogger) Named(name string) hclog.Logger {
	cp := *h
	if cp.name != "" {
		name = cp.name + "." + name
	}
	cp.name = name
	return &cp
}

// ResetNamed returns a logger named name.
func (h *hclogLogger) ResetNamed(name string) hclog.Logger {
	cp := *h
	cp.name = name
	return &cp
}

// SetLevel does nothing: the slog logger's handler decides.
func (h *hclogLogger) SetLevel(hclog.Level) {}

// GetLevel returns the lowest hclog level the slog logger takes.
func (h *hclogLogger) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.enabled(slogLevel(l)) {
			return l
		}
	}
	return hclog.Off
}

// StandardLogger returns a *log.Logger whose "[LEVEL] ..." lines go to
// h's slog logger.
func (h *hclogLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer whose "[LEVEL] ..." lines go to h's slog
// logger.
func (h *hclogLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &lineWriter{log: h.log, component: h.name, level: h.level}
}
