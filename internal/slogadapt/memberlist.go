package slogadapt

import (
	"io"
	"log/slog"
	"strings"
)

// Memberlist returns the writer to give hashicorp/memberlist
// (memberlist.Config.LogOutput, or log.New(w, "", 0) as its Logger). Each
// "[LEVEL] memberlist: message" line goes to l as message with
// component=memberlist, at memberlist's level, except that a failure on
// a closed network connection, which memberlist's goroutines hit only
// while it shuts down, is DEBUG.
//
// intercept, when not nil, sees every line first (with its level mark)
// and returns true when it has logged the line itself, as internal/gossip
// does for gossip refused for want of the right key.
func Memberlist(l *slog.Logger, intercept func(line string) bool) io.Writer {
	lw := &lineWriter{log: l, component: "memberlist", level: memberlistLevel}
	if intercept == nil {
		return lw
	}
	return &interceptWriter{next: lw, intercept: intercept}
}

// memberlistLevel is Memberlist's Leveler.
func memberlistLevel(level slog.Level, msg string, _ []any) slog.Level {
	if level > slog.LevelDebug && strings.Contains(msg, "use of closed network connection") {
		return slog.LevelDebug
	}
	return level
}

// interceptWriter offers each line to intercept before next logs it.
type interceptWriter struct {
	next      io.Writer
	intercept func(line string) bool
}

func (w *interceptWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.TrimSpace(line) == "" || w.intercept(strings.TrimSpace(line)) {
			continue
		}
		if _, err := w.next.Write([]byte(line)); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
