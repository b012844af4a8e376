package spec

import (
	"sort"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// Format prints s in the spec language, options in a fixed order: what to
// run (binaries, min, symb_name, args, env), what a machine must have
// (keys, comparisons in their order, mounts, machines), how instances are
// placed and limited (unique, max_per_machine, load, memory, the resources
// of resources.go, time, signal, queue), restarts, then
// mail, mail_type, cron, after, afterok, afternotok, copy_in and copy_out. Binaries are sorted by key;
// other lists keep their order. Empty options are left out. Values are bare
// words when that is unambiguous and quoted otherwise, so Parse(Format(s))
// equals s for any s Parse returned.
func Format(s client.JobSpec) string {
	keys := make([]string, 0, len(s.Binaries))
	for k := range s.Binaries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bins := make([]string, len(keys))
	for i, k := range keys {
		bins[i] = quote(k, true) + "=" + quote(s.Binaries[k], false)
	}
	parts := []string{optBinaries + "={" + strings.Join(bins, ",") + "}"}
	add := func(opt, val string) { parts = append(parts, opt+"="+val) }
	addList := func(opt string, vals []string) {
		if len(vals) > 0 {
			add(opt, formatList(vals))
		}
	}
	addWord := func(opt, val string) {
		if val != "" {
			add(opt, quote(val, false))
		}
	}
	addInt := func(opt string, n int64) {
		if n != 0 {
			add(opt, strconv.FormatInt(n, 10))
		}
	}

	addInt(optMin, int64(s.Min))
	addWord(optName, s.Name)
	addList(optArgs, s.Args)
	addList(optEnv, s.Env)

	addList(optKeys, s.Keys)
	for _, r := range s.Requirements {
		parts = append(parts, FormatRequirement(r))
	}
	addList(optMounts, s.Mounts)
	addList(optMachines, s.Machines)

	if s.Unique {
		parts = append(parts, optUnique)
	}
	if s.Gang {
		parts = append(parts, optGang)
	}
	addInt(optMaxPerMachine, int64(s.MaxPerMachine))
	if s.Load != 0 {
		add(optLoad, formatNumber(s.Load))
	}
	addInt(optMemory, s.MemoryMB)
	formatResources(s, add, func(opt string) { parts = append(parts, opt) })
	if s.TimeLimitS > 0 {
		add(optTime, FormatTimeLimit(s.TimeLimitS))
	}
	if s.WarnSignal != "" {
		add(optSignal, FormatSignal(s.WarnSignal, s.WarnLeadS))
	}
	addWord(optQueue, s.Queue)
	addWord(optRestart, s.Restart)
	addInt(optMaxRestarts, int64(s.MaxRestarts))

	switch s.Mail {
	case "":
	case MailOwner:
		parts = append(parts, optMail)
	default:
		addWord(optMail, s.Mail)
	}
	addRefs := func(opt string, refs []string) {
		switch len(refs) {
		case 0:
		case 1:
			addWord(opt, refs[0])
		default:
			addList(opt, refs)
		}
	}
	addRefs(optMailType, s.MailType)
	addWord(optCron, s.Cron)
	addWord(optCatchup, s.Catchup)
	addWord(optOverlap, s.Overlap)
	addRefs(optAfter, s.After)
	addRefs(optAfterOK, s.AfterOK)
	addRefs(optAfterNotOK, s.AfterNotOK)
	addList(optCopyIn, s.CopyIn)
	addList(optCopyOut, s.CopyOut)
	formatCheckpoint(s, add)
	return strings.Join(parts, ",")
}

func formatList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = quote(v, false)
	}
	return "{" + strings.Join(q, ",") + "}"
}

// quote returns v as a bare word when it is non-empty printable ASCII
// without spaces or the characters that end or open a token, and as a
// quoted string otherwise. Keys are also quoted when they contain '=', and
// values when they start with it: opt==x reads as a comparison.
func quote(v string, key bool) string {
	bare := v != "" && v[0] != '='

	for i := 0; bare && i < len(v); i++ {
		switch c := v[i]; {
		case c <= ' ' || c >= 0x7f:
			bare = false
		case c == ',' || c == '{' || c == '}' || c == '"' || c == '\\':
			bare = false
		case c == '=' && key:
			bare = false
		}
	}
	if bare {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
	return b.String()
}
