package spec

import (
	"fmt"

	"github.com/netmgr/netmgr/client"
)

// optionDef says how one option of the language is read.
type optionDef struct {
	// bare, when set, is what the option means written alone, without
	// "=value" (unique, mail).
	bare func(*client.JobSpec)
	// value reads the value after '=' and stores it in the spec.
	value func(p *parser, s *client.JobSpec, opt string) error
}

// options is every option of the language. It is filled by init because
// reading values refers back to it (comparisons must not name an option).
var options map[string]optionDef

func init() {
	options = map[string]optionDef{
		optBinaries: {value: func(p *parser, s *client.JobSpec, _ string) error { return p.binaries(s) }},
		optMin:      {value: scalarOption(parseMin, func(s *client.JobSpec, n int) { s.Min = n })},
		optName:     {value: scalarOption(checked(checkName), func(s *client.JobSpec, v string) { s.Name = v })},
		optArgs:     {value: listValue(func(s *client.JobSpec, v []string) { s.Args = v })},
		optEnv:      {value: listValue(func(s *client.JobSpec, v []string) { s.Env = v })},

		optKeys:     {value: listValue(func(s *client.JobSpec, v []string) { s.Keys = v })},
		optMounts:   {value: listValue(func(s *client.JobSpec, v []string) { s.Mounts = v })},
		optMachines: {value: listValue(func(s *client.JobSpec, v []string) { s.Machines = v })},

		optUnique: {
			bare:  func(s *client.JobSpec) { s.Unique = true },
			value: scalarOption(parseBool, func(s *client.JobSpec, b bool) { s.Unique = b }),
		},
		optGang: {
			bare:  func(s *client.JobSpec) { s.Gang = true },
			value: scalarOption(parseBool, func(s *client.JobSpec, b bool) { s.Gang = b }),
		},
		optMaxPerMachine: {value: scalarOption(parseMin, func(s *client.JobSpec, n int) { s.MaxPerMachine = n })},
		optLoad:          {value: scalarOption(parsePositiveNumber, func(s *client.JobSpec, f float64) { s.Load = f })},
		optMemory:        {value: scalarOption(parsePositiveInt64, func(s *client.JobSpec, n int64) { s.MemoryMB = n })},
		optTime:          {value: scalarOption(errMessage(ParseTimeLimit), func(s *client.JobSpec, n int64) { s.TimeLimitS = n })},
		optSignal: {value: scalarOption(parseWarning, func(s *client.JobSpec, w warning) {
			s.WarnSignal, s.WarnLeadS = w.name, w.lead
		})},
		optQueue:       {value: scalarOption(checked(checkQueue), func(s *client.JobSpec, v string) { s.Queue = v })},
		optRestart:     {value: scalarOption(checked(checkRestart), func(s *client.JobSpec, v string) { s.Restart = v })},
		optMaxRestarts: {value: scalarOption(parseMin, func(s *client.JobSpec, n int) { s.MaxRestarts = n })},

		optMail: {
			bare:  func(s *client.JobSpec) { s.Mail = MailOwner },
			value: scalarOption(checked(checkMail), func(s *client.JobSpec, v string) { s.Mail = v }),
		},
		optMailType:   {value: wordOrList(checkMailType, "mail type", func(s *client.JobSpec, v []string) { s.MailType = v })},
		optCron:       {value: scalarOption(checked(checkCron), func(s *client.JobSpec, v string) { s.Cron = v })},
		optCatchup:    {value: scalarOption(checked(checkCatchup), func(s *client.JobSpec, v string) { s.Catchup = v })},
		optOverlap:    {value: scalarOption(checked(checkOverlap), func(s *client.JobSpec, v string) { s.Overlap = v })},
		optAfter:      {value: jobRefs(func(s *client.JobSpec, v []string) { s.After = v })},
		optAfterOK:    {value: jobRefs(func(s *client.JobSpec, v []string) { s.AfterOK = v })},
		optAfterNotOK: {value: jobRefs(func(s *client.JobSpec, v []string) { s.AfterNotOK = v })},
		optCopyIn:     {value: listValue(func(s *client.JobSpec, v []string) { s.CopyIn = v })},
		optCopyOut:    {value: listValue(func(s *client.JobSpec, v []string) { s.CopyOut = v })},
	}
}

// scalarOption reads a single value with parse, which returns the value or
// a message, and stores it with set.
func scalarOption[T any](parse func(string) (T, string), set func(*client.JobSpec, T)) func(*parser, *client.JobSpec, string) error {
	return func(p *parser, s *client.JobSpec, opt string) error {
		v, err := p.single(opt)
		if err != nil {
			return err
		}
		x, msg := parse(v.val)
		if msg != "" {
			return p.errAt(v.pos, opt, "%s", msg)
		}
		set(s, x)
		return nil
	}
}

// listValue reads a {...} list checked as listOptions says and stores it
// with set.
func listValue(set func(*client.JobSpec, []string)) func(*parser, *client.JobSpec, string) error {
	return func(p *parser, s *client.JobSpec, opt string) error {
		vals, err := p.checkedList(opt)
		if err != nil {
			return err
		}
		set(s, vals)
		return nil
	}
}

// jobRefs reads the jobs a dependency option names: one job (after=12)
// or a {...} list of them (after={build,12}), and stores them with set.
func jobRefs(set func(*client.JobSpec, []string)) func(*parser, *client.JobSpec, string) error {
	return func(p *parser, s *client.JobSpec, opt string) error {
		var items []scalar
		if !p.eof() && p.src[p.pos] == '{' {
			var err error
			if items, err = p.list(opt); err != nil {
				return err
			}
			if len(items) == 0 {
				return p.errAt(p.pos-1, opt, "the list names no job")
			}
		} else {
			v, err := p.scalar(opt, false)
			if err != nil {
				return err
			}
			items = []scalar{v}
		}
		var refs []string
		seen := map[string]bool{}
		for _, it := range items {
			if msg := checkJobRef(it.val); msg != "" {
				return p.errAt(it.pos, opt, "%s", msg)
			}
			if seen[it.val] {
				return p.errAt(it.pos, opt, "job %s given twice", it.val)
			}
			seen[it.val] = true
			refs = append(refs, it.val)
		}
		set(s, refs)
		return nil
	}
}

// wordOrList reads one word (mail_type=end) or a {...} list of them
// (mail_type={begin,end}), each checked by check, none given twice, and
// stores them with set; what names one item in messages.
func wordOrList(check func(string) string, what string, set func(*client.JobSpec, []string)) func(*parser, *client.JobSpec, string) error {
	return func(p *parser, s *client.JobSpec, opt string) error {
		var items []scalar
		if !p.eof() && p.src[p.pos] == '{' {
			var err error
			if items, err = p.list(opt); err != nil {
				return err
			}
			if len(items) == 0 {
				return p.errAt(p.pos-1, opt, "the list names no %s", what)
			}
		} else {
			v, err := p.scalar(opt, false)
			if err != nil {
				return err
			}
			items = []scalar{v}
		}
		var vals []string
		seen := map[string]bool{}
		for _, it := range items {
			if msg := check(it.val); msg != "" {
				return p.errAt(it.pos, opt, "%s", msg)
			}
			if seen[it.val] {
				return p.errAt(it.pos, opt, "%s %s given twice", what, it.val)
			}
			seen[it.val] = true
			vals = append(vals, it.val)
		}
		set(s, vals)
		return nil
	}
}

// checked turns a check function into a parse function for strings.
func checked(check func(string) string) func(string) (string, string) {
	return func(v string) (string, string) { return v, check(v) }
}

// errMessage adapts a parser that returns an error to scalarOption's,
// which returns a message.
func errMessage[T any](parse func(string) (T, error)) func(string) (T, string) {
	return func(v string) (T, string) {
		x, err := parse(v)
		if err != nil {
			return x, err.Error()
		}
		return x, ""
	}
}

// warning is a parsed signal=SIG@LEAD.
type warning struct {
	name string
	lead int64
}

func parseWarning(v string) (warning, string) {
	name, lead, err := ParseSignal(v)
	if err != nil {
		return warning{}, err.Error()
	}
	return warning{name, lead}, ""
}

func parseBool(v string) (bool, string) {
	switch v {
	case "true":
		return true, ""
	case "false":
		return false, ""
	}
	return false, fmt.Sprintf("%q is not true or false", v)
}

func checkQueue(s string) string { return checkWord(s, "queue name") }

// nearestOption returns the option name closest to name, for a "did you
// mean" hint: within one edit for names of up to four letters and two
// otherwise. It returns "" when there is none.
func nearestOption(name string) string {
	limit := 2
	if len(name) <= 4 {
		limit = 1
	}
	best, bestDist := "", limit+1
	for opt := range options {
		d := editDistance(name, opt)
		if d < bestDist || d == bestDist && opt < best {
			best, bestDist = opt, d
		}
	}
	if bestDist > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
