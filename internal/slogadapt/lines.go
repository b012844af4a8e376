package slogadapt

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"sync"
)

// levelPrefixes are the level marks that start the lines of Go's standard
// logger as memberlist and hclog's standard writer use it.
var levelPrefixes = []struct {
	prefix string
	level  slog.Level
}{
	{"[TRACE]", LevelTrace},
	{"[DEBUG]", slog.LevelDebug},
	{"[INFO]", slog.LevelInfo},
	{"[WARN]", slog.LevelWarn},
	{"[ERR]", slog.LevelError},
	{"[ERROR]", slog.LevelError},
}

// stdDate matches the date and time Go's standard logger puts first with
// its default flags ("2026/11/25 00:37:49 "); compiled at its first use,
// to keep it out of every command's start-up.
var stdDate = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d+)? `)
})

// ParseLine splits a "[LEVEL] component: message" line, with or without
// the standard logger's date, into its level (INFO when it has none) and
// message, without the date or the component's prefix.
func ParseLine(line, component string) (slog.Level, string) {
	line = stdDate().ReplaceAllString(strings.TrimSpace(line), "")
	level := slog.LevelInfo
	for _, p := range levelPrefixes {
		if rest, ok := strings.CutPrefix(line, p.prefix); ok {
			level, line = p.level, strings.TrimSpace(rest)
			break
		}
	}
	if component != "" {
		line = strings.TrimPrefix(line, component+": ")
	}
	return level, line
}

// lineWriter logs each line written to it (one per Write, as Go's
// standard logger writes them) at the level its prefix names, then as its
// Leveler decides.
type lineWriter struct {
	log       *slog.Logger
	component string
	level     Leveler
}

func (w *lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		lv, msg := ParseLine(line, w.component)
		if w.level != nil {
			lv = w.level(lv, msg, nil)
		}
		w.log.Log(context.Background(), lv, msg, "component", w.component)
	}
	return len(p), nil
}
