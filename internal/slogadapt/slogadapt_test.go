package slogadapt_test

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/netmgr/netmgr/internal/slogadapt"
)

// record is one line of a JSON slog handler's output.
type record map[string]any

// jsonLogger returns a logger at level writing JSON into a buffer, and a
// function that decodes what it wrote.
func jsonLogger(t *testing.T, level slog.Level) (*slog.Logger, func() []record) {
	t.Helper()
	var b bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: level}))
	return l, func() []record {
		var out []record
		for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			if line == "" {
				continue
			}
			var r record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("decode %q: %v", line, err)
			}
			out = append(out, r)
		}
		return out
	}
}

func TestParseLine(t *testing.T) {
	tests := []struct {
		name, line string
		level      slog.Level
		msg        string
	}{
		{"warn", "[WARN] memberlist: Refuting a suspect message (from: a)", slog.LevelWarn, "Refuting a suspect message (from: a)"},
		{"err", "[ERR] memberlist: Failed to send gossip to 1.2.3.4:5", slog.LevelError, "Failed to send gossip to 1.2.3.4:5"},
		{"debug with date", "2026/11/25 00:37:49 [DEBUG] memberlist: Stream connection from=127.0.0.1:51486\n", slog.LevelDebug, "Stream connection from=127.0.0.1:51486"},
		{"no level", "memberlist: something", slog.LevelInfo, "something"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			level, msg := slogadapt.ParseLine(tt.line, "memberlist")
			if level != tt.level || msg != tt.msg {
				t.Errorf("ParseLine(%q) = %v, %q; want %v, %q", tt.line, level, msg, tt.level, tt.msg)
			}
		})
	}
}

func TestRaftLevels(t *testing.T) {
	tests := []struct {
		name  string
		log   func(l hclog.Logger)
		level string // "" when nothing should be logged at INFO
	}{
		{"first election is news", func(l hclog.Logger) {
			l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
		}, "INFO"},
		{"a lost leader is a warning", func(l hclog.Logger) {
			l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "127.0.0.1:1", "last-leader-id", "s1")
		}, "WARN"},
		{"raft's info is detail", func(l hclog.Logger) {
			l.Info("entering follower state", "follower", "x")
		}, ""},
		{"errors stay errors", func(l hclog.Logger) {
			l.Error("failed to appendEntries to", "peer", "s2")
		}, "ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, records := jsonLogger(t, slog.LevelInfo)
			tt.log(slogadapt.Raft(l))
			recs := records()
			if tt.level == "" {
				if len(recs) != 0 {
					t.Errorf("logged %v, want nothing at INFO", recs)
				}
				return
			}
			if len(recs) != 1 || recs[0]["level"] != tt.level || recs[0]["component"] != "raft" {
				t.Errorf("logged %v, want one %s record with component=raft", recs, tt.level)
			}
		})
	}
}

func TestHCLogWithAndNamed(t *testing.T) {
	l, records := jsonLogger(t, slog.LevelDebug)
	h := slogadapt.HCLog(l, "raft", nil).Named("net").With("peer", "s2")
	h.Debug("dialing", "addr", "127.0.0.1:1", "servers", hclog.Fmt("%+v", []string{"s1", "s2"}))
	recs := records()
	if len(recs) != 1 {
		t.Fatalf("logged %v, want one record", recs)
	}
	r := recs[0]
	if r["component"] != "raft.net" || r["peer"] != "s2" || r["addr"] != "127.0.0.1:1" || r["servers"] != "[s1 s2]" || r["level"] != "DEBUG" {
		t.Errorf("logged %v, want component=raft.net peer=s2 addr=127.0.0.1:1 servers=[s1 s2] at DEBUG", r)
	}
	if !h.IsDebug() || h.IsTrace() {
		t.Errorf("IsDebug() = %v, IsTrace() = %v; want true, false for a debug logger", h.IsDebug(), h.IsTrace())
	}
}

func TestMemberlist(t *testing.T) {
	l, records := jsonLogger(t, slog.LevelInfo)
	var intercepted []string
	ml := log.New(slogadapt.Memberlist(l, func(line string) bool {
		if strings.Contains(line, "No installed keys could decrypt") {
			intercepted = append(intercepted, line)
			return true
		}
		return false
	}), "", 0)
	ml.Printf("[DEBUG] memberlist: Stream connection from=127.0.0.1:1")
	ml.Printf("[WARN] memberlist: Was able to connect to s2 over TCP but UDP probes failed")
	ml.Printf("[ERR] memberlist: Failed to send gossip to 127.0.0.1:2: write udp: use of closed network connection")
	ml.Printf("[ERR] memberlist: failed to receive: No installed keys could decrypt the message from=127.0.0.1:3")
	recs := records()
	if len(recs) != 1 || recs[0]["level"] != "WARN" || recs[0]["component"] != "memberlist" ||
		recs[0]["msg"] != "Was able to connect to s2 over TCP but UDP probes failed" {
		t.Errorf("logged %v, want only the WARN line, without its prefix (debug hidden, shutdown noise demoted)", recs)
	}
	if len(intercepted) != 1 {
		t.Errorf("intercepted %q, want the key refusal", intercepted)
	}
}
