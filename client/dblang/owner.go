package dblang

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Owner-policy settings (see netmgr stub --help, "Owner policy"): a
// machine, an mtype and a stub's init file may give all of them, a queue
// only how its jobs are treated once suspended (QueueOwnerSettings).
const (
	OwnerSleepOnLogin  = "sleep_on_login" // a duration
	OwnerSleepOnInput  = "sleep_on_input" // a duration
	OwnerSleepOnLoad   = "sleep_on_load"  // a number
	OwnerLoadMonitor   = "load_monitor"   // a program's path
	OwnerAvailable     = "available"      // a {"window", ...} list
	OwnerVacateAfter   = "vacate_after"   // a duration
	OwnerKeepSuspended = "keep_suspended" // yes or no
	OwnerSuspend       = "suspend"        // yes or no; a queue's only
	ownerWindowSep     = "; "             // joins the windows of available
	ownerYes, ownerNo  = "yes", "no"
)

// MachineOwnerSettings are the settings a machine, an mtype or an init
// file may give, in the order Format prints them.
var MachineOwnerSettings = []string{OwnerSleepOnLogin, OwnerSleepOnInput, OwnerSleepOnLoad, OwnerLoadMonitor,
	OwnerAvailable, OwnerVacateAfter, OwnerKeepSuspended}

// QueueOwnerSettings are the settings an add_q may give: suspend=no
// vacates a job of the queue at once when the owner returns.
var QueueOwnerSettings = []string{OwnerVacateAfter, OwnerKeepSuspended, OwnerSuspend}

// isOwnerSetting reports whether name is one of allowed.
func isOwnerSetting(name string, allowed []string) bool { return slices.Contains(allowed, name) }

// ownerValue checks one owner setting and returns its value in the
// canonical text the Owner maps hold: a duration as nq_maxrun writes it
// (whole minutes, or seconds with an s), a number as Go prints it, yes or
// no, a program's path, and windows joined by "; ". msg says what is
// wrong, "" when nothing is.
func ownerValue(it item, where string) (string, string) {
	name, v := it.name.text, it.val
	what := name + " in " + where
	switch name {
	case OwnerSleepOnLogin, OwnerSleepOnInput, OwnerVacateAfter:
		secs, msg := parseRunLimit(v, what)
		if msg != "" {
			return "", strings.Replace(msg, "bad run limit", "bad duration", 1)
		}
		return formatRunLimit(secs), ""
	case OwnerSleepOnLoad:
		f, msg := parseFloat(v, what)
		if msg == "" && f < 0 {
			msg = what + " is negative; write a load such as 0.3"
		}
		return strconv.FormatFloat(f, 'g', -1, 64), msg
	case OwnerLoadMonitor:
		if v.kind == vList || v.text == "" {
			return "", what + " wants a program's path, found " + v.describe()
		}
		return v.text, ""
	case OwnerKeepSuspended, OwnerSuspend:
		switch strings.ToLower(v.text) {
		case ownerYes, "true":
			return ownerYes, ""
		case ownerNo, "false":
			return ownerNo, ""
		}
		return "", what + " wants yes or no, found " + v.describe()
	case OwnerAvailable:
		if v.kind != vList {
			return "", what + ` wants a {"Mon-Fri 18:00-08:00", "Sat-Sun"} list, found ` + v.describe()
		}
		var ws []string
		for _, w := range v.items {
			if w.assign || w.name.kind == vList || strings.TrimSpace(w.name.text) == "" || strings.Contains(w.name.text, ";") {
				return "", what + ` holds windows in double quotes, such as "Mon-Fri 18:00-08:00", found ` + describeItem(w)
			}
			ws = append(ws, strings.TrimSpace(w.name.text))
		}
		if len(ws) == 0 {
			return "", what + " lists no window; leave it out to lend the machine at all times"
		}
		return strings.Join(ws, ownerWindowSep), ""
	}
	return "", "unknown owner setting " + name + " in " + where
}

// OwnerDuration reads a duration setting's canonical value.
func OwnerDuration(value string) (time.Duration, bool) {
	secs, msg := parseRunLimit(value2(value), "")
	return time.Duration(secs) * time.Second, msg == ""
}

// OwnerWindows reads the canonical value of available.
func OwnerWindows(value string) []string {
	var out []string
	for w := range strings.SplitSeq(value, ";") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// OwnerYes reads a yes-or-no setting's canonical value.
func OwnerYes(value string) bool { return value == ownerYes }

// value2 is a word value holding s, to reuse the parsers on stored text.
func value2(s string) value { return value{kind: vWord, text: s} }

// formatOwner prints owner settings as NAME=VALUE items in the order of
// names: a list for available, a quoted string where the bare text would
// not lex back as one word.
func formatOwner(settings map[string]string, names []string) []string {
	var out []string
	for _, n := range names {
		v, ok := settings[n]
		if !ok {
			continue
		}
		switch n {
		case OwnerAvailable:
			var ws []string
			for _, w := range OwnerWindows(v) {
				ws = append(ws, quoteString(w))
			}
			out = append(out, n+"={"+strings.Join(ws, ", ")+"}")
		case OwnerLoadMonitor:
			if isPath(v) {
				out = append(out, n+"="+v)
			} else {
				out = append(out, n+"="+quoteString(v))
			}
		default:
			out = append(out, n+"="+v)
		}
	}
	return out
}

// ResolveOwner merges the owner settings of the layers given, later ones
// overriding earlier ones, into a new map; nil when none has any.
func ResolveOwner(layers ...map[string]string) map[string]string {
	var out map[string]string
	for _, l := range layers {
		for k, v := range l {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
