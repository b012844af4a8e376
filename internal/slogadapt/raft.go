package slogadapt

import (
	"fmt"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// Raft returns the hclog.Logger to give hashicorp/raft (raft.Config.Logger
// and its transports): its lines go to l with component=raft, at these
// levels:
//
//   - "heartbeat timeout reached, starting election" is INFO when there
//     was no leader before (a group's first election), WARN when there
//     was one (it went quiet);
//   - raft's other INFO lines are DEBUG: the server logs the milestones
//     (bootstrap, leadership won and lost) itself;
//   - every other line keeps raft's level.
func Raft(l *slog.Logger) hclog.Logger { return HCLog(l, "raft", raftLevel) }

// raftLevel is Raft's Leveler.
func raftLevel(level slog.Level, msg string, args []any) slog.Level {
	switch {
	case msg == "heartbeat timeout reached, starting election":
		if arg(args, "last-leader-id") == "" && arg(args, "last-leader-addr") == "" {
			return slog.LevelInfo
		}
		return slog.LevelWarn
	case level == slog.LevelInfo:
		return slog.LevelDebug
	}
	return level
}

// arg returns the value of key among hclog's key/value args as a string,
// "" when it is absent.
func arg(args []any, key string) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == key {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}
