package spec

import (
	"sort"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// Format prints s in the spec language with the options in sorted order
// (args, binaries, env, min, symb_name) and binaries sorted by key. Empty
// options are left out. Values are bare words when that is unambiguous and
// quoted otherwise, so Parse(Format(s)) equals s for any s Parse returned.
func Format(s client.JobSpec) string {
	var parts []string
	if len(s.Args) > 0 {
		parts = append(parts, optArgs+"="+formatList(s.Args))
	}
	keys := make([]string, 0, len(s.Binaries))
	for k := range s.Binaries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bins := make([]string, len(keys))
	for i, k := range keys {
		bins[i] = quote(k, true) + "=" + quote(s.Binaries[k], false)
	}
	parts = append(parts, optBinaries+"={"+strings.Join(bins, ",")+"}")
	if len(s.Env) > 0 {
		parts = append(parts, optEnv+"="+formatList(s.Env))
	}
	if s.Min != 0 {
		parts = append(parts, optMin+"="+strconv.Itoa(s.Min))
	}
	if s.Name != "" {
		parts = append(parts, optName+"="+quote(s.Name, false))
	}
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
// quoted string otherwise. Keys are also quoted when they contain '='.
func quote(v string, key bool) string {
	bare := v != ""
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
