package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
)

// renderPrime is a queue's PRIME cell in netstatus -q: "-" without a
// window, else whether it is open and the next change, in now's zone,
// then what the change sets: "open until 18:00 (then priority 5,
// maxuser_active 2)", "closed until Mon 08:00 (then priority 20)".
func renderPrime(p *client.QueuePrime, now time.Time) string {
	if p == nil {
		return "-"
	}
	state := "closed"
	if p.Open {
		state = "open"
	}
	if p.Next.IsZero() {
		return state
	}
	out := state + " until " + formatNext(p.Next, now)
	then := p.Outside
	if p.NextOpen {
		then = p.Inside
	}
	from := p.Inside
	if p.NextOpen {
		from = p.Outside
	}
	if d := valuesChanged(from, then); d != "" {
		out += " (then " + d + ")"
	}
	return out
}

// formatNext prints a change's time: formatWhen's, with the weekday when
// it is not today and within a week.
func formatNext(t, now time.Time) string {
	t = t.In(now.Location())
	if s := formatWhen(t, now); strings.Contains(s, " ") && t.Sub(now) < 6*24*time.Hour && t.After(now) {
		return t.Format("Mon 15:04")
	}
	return formatWhen(t, now)
}

// valuesChanged lists the values that differ from a to b, as b has them:
// "priority 5, maxactive 10, no maxuser_active".
func valuesChanged(a, b client.QueueValues) string {
	var parts []string
	if a.Priority != b.Priority {
		parts = append(parts, "priority "+strconv.Itoa(b.Priority))
	}
	for _, v := range []struct {
		name string
		a, b int64
		f    func(int64) string
	}{
		{"maxsize", a.MaxSize, b.MaxSize, formatLimit}, {"maxactive", a.MaxActive, b.MaxActive, formatLimit},
		{"maxrun", a.MaxRunSeconds, b.MaxRunSeconds, formatRunLimit}, {"maxmem", a.MaxMemMB, b.MaxMemMB, formatMemLimit},
		{"maxuser_active", a.MaxUserActive, b.MaxUserActive, formatLimit}, {"maxuser_queued", a.MaxUserQueued, b.MaxUserQueued, formatLimit},
	} {
		switch {
		case v.a == v.b:
		case v.b <= 0:
			parts = append(parts, "no "+v.name)
		default:
			parts = append(parts, v.name+" "+v.f(v.b))
		}
	}
	return strings.Join(parts, ", ")
}
