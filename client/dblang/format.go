package dblang

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Format prints db in the database language: keys, then mtypes, machines,
// queues, admin_ids and allow_root_jobs, each kind in db's slice order and
// separated by a blank line, one declaration per line. A machine's mtype comes first in
// its list, then its keys in order, then its attributes and mounts sorted;
// numbers are printed in the fewest digits that read back exactly (8.0
// prints as 8). Key comments are kept; other comments are not. For any
// Database Parse returned, Parse(Format(db)) is Equal to db. Format of nil
// is empty.
func Format(db *Database) []byte {
	var b bytes.Buffer
	if db == nil {
		return nil
	}
	section := func(n int) {
		if n > 0 && b.Len() > 0 {
			b.WriteByte('\n')
		}
	}
	section(len(db.Keys))
	for _, k := range db.Keys {
		b.WriteString(declKey + " " + k.Name)
		if k.Comment != "" {
			b.WriteString(" /* " + strings.ReplaceAll(k.Comment, "*/", "* /") + " */")
		}
		b.WriteByte('\n')
	}
	section(len(db.MTypes))
	for _, t := range db.MTypes {
		b.WriteString(declMType + " " + t.Name + " = " + formatBody("", t.Keys, t.Attrs, t.Mounts, t.Owner) + "\n")
	}
	section(len(db.Machines))
	for _, m := range db.Machines {
		b.WriteString(declMachine + " " + m.Name + " = ")
		if m.MType != "" && len(m.Keys) == 0 && len(m.Attrs) == 0 && len(m.Mounts) == 0 && len(m.Owner) == 0 {
			b.WriteString(m.MType + "\n")
			continue
		}
		b.WriteString(formatBody(m.MType, m.Keys, m.Attrs, m.Mounts, m.Owner) + "\n")
	}
	section(len(db.Queues))
	for _, q := range db.Queues {
		var items []string
		for _, p := range []struct {
			name string
			n    int64
		}{
			{qMaxSize, q.MaxSize}, {qMaxActive, q.MaxActive}, {qMaxRun, q.MaxRunSeconds},
			{qMaxMem, q.MaxMemMB}, {qPriority, int64(q.Priority)}, {qKillGrace, q.KillGraceSeconds},
			{qMaxUserA, q.MaxUserActive}, {qMaxUserQ, q.MaxUserQueued},
		} {
			switch {
			case p.n == 0:
			case p.name == qMaxRun:
				items = append(items, p.name+"="+formatRunLimit(p.n))
			case p.name == qKillGrace:
				items = append(items, p.name+"="+formatGrace(p.n))
			default:
				items = append(items, p.name+"="+strconv.FormatInt(p.n, 10))
			}
		}
		if q.Policy != "" && q.Policy != PolicyBackfill {
			items = append(items, qPolicy+"="+q.Policy)
		}
		if q.Interactive {
			items = append(items, qInteract+"="+ownerYes)
		}
		if q.Preempt != "" {
			items = append(items, qPreempt+"="+q.Preempt)
		}
		items = append(items, formatOwner(q.Owner, QueueOwnerSettings)...)
		if q.Prime != nil {
			items = append(items, formatPrime(q.Prime))
		}
		b.WriteString(declQueue + " " + q.Name + " = {" + strings.Join(items, ", ") + "}\n")
	}
	section(len(db.Licenses))
	for _, l := range db.Licenses {
		b.WriteString(declLicense + " " + l.Name + " = " + strconv.Itoa(l.Count) + "\n")
	}
	section(len(db.Admins))
	for _, a := range db.Admins {
		b.WriteString(declAdmin + " " + formatWord(a) + "\n")
	}
	if db.AllowRootJobs {
		section(1)
		b.WriteString(declRoot + "\n")
	}
	formatShares(&b, db, section)
	return b.Bytes()
}

// formatBody prints {MTYPE, KEY..., ATTR=N..., mounts={...}, OWNER=...}.
func formatBody(mtype string, keys []string, attrs map[string]float64, mounts []string, owner map[string]string) string {
	var items []string
	if mtype != "" {
		items = append(items, mtype)
	}
	items = append(items, keys...)
	items = append(items, formatAttrs(attrs)...)
	if len(mounts) > 0 {
		items = append(items, "mounts="+formatMounts(mounts))
	}
	items = append(items, formatOwner(owner, MachineOwnerSettings)...)
	return "{" + strings.Join(items, ", ") + "}"
}

// formatAttrs prints attributes as NAME=NUMBER, sorted by name.
func formatAttrs(attrs map[string]float64) []string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + "=" + FormatNumber(attrs[n])
	}
	return out
}

// formatMounts prints {PATH, ...}, sorted, quoting paths that need it.
func formatMounts(mounts []string) string {
	s := append([]string(nil), mounts...)
	sort.Strings(s)
	for i, m := range s {
		if !isPath(m) {
			s[i] = quoteString(m)
		}
	}
	return "{" + strings.Join(s, ", ") + "}"
}

// formatWord prints s bare when it lexes as one word, quoted otherwise.
func formatWord(s string) string {
	if isWord(s) {
		return s
	}
	return quoteString(s)
}

// FormatNumber prints f the way Format does: the fewest digits that read
// back as exactly f, in plain decimal between 1e-4 and 1e21 and with an
// exponent outside it (8.0 prints as 8, 0.5 as 0.5, 1e25 as 1e+25).
func FormatNumber(f float64) string {
	if a := math.Abs(f); a == 0 || a >= 1e-4 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
