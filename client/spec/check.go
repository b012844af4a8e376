package spec

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/netmgr/netmgr/client"
)

// Option names of the job language.
const (
	optBinaries      = "binaries"
	optMin           = "min"
	optName          = "symb_name"
	optArgs          = "args"
	optEnv           = "env"
	optKeys          = "keys"
	optMounts        = "mounts"
	optMachines      = "machines"
	optUnique        = "unique"
	optGang          = "gang"
	optMaxPerMachine = "max_per_machine"
	optLoad          = "load"
	optMemory        = "memory"
	optTime          = "time"
	optSignal        = "signal"
	optQueue         = "queue"
	optRestart       = "restart"
	optMaxRestarts   = "max_restarts"
	optMail          = "mail"
	optMailType      = "mail_type"
	optCron          = "cron"
	optCatchup       = "catchup"
	optOverlap       = "overlap"
	optAfter         = "after"
	optAfterOK       = "afterok"
	optAfterNotOK    = "afternotok"
	optCopyIn        = "copy_in"
	optCopyOut       = "copy_out"
)

// MailOwner is the Mail value of the bare mail option: mail the job's owner.
const MailOwner = "owner"

// MailTypes are the values of mail_type (Slurm's --mail-type names, in
// lower case): mail when the job begins, ends, fails, is requeued, or all
// of them.
var MailTypes = []string{"begin", "end", "fail", "requeue", "all"}

// checkMailType checks one mail_type value.
func checkMailType(s string) string {
	for _, t := range MailTypes {
		if s == t {
			return ""
		}
	}
	return fmt.Sprintf("%q is not a mail type (begin, end, fail, requeue or all)", s)
}

// maxNameLen bounds symb_name; names are shown in tables and used on the
// command line.
const maxNameLen = 64

// Validate checks a spec built by other means than Parse (for example from
// netexec's flags) against the rules Parse enforces. The error names the
// option but no position.
func Validate(s client.JobSpec) error {
	if len(s.Binaries) == 0 {
		return fmt.Errorf("option %s is required", optBinaries)
	}
	keys := make([]string, 0, len(s.Binaries))
	for k := range s.Binaries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msg := checkKey(k); msg != "" {
			return fmt.Errorf("option %s: %s", optBinaries, msg)
		}
		if msg := checkPath(s.Binaries[k]); msg != "" {
			return fmt.Errorf("option %s: key %s: %s", optBinaries, k, msg)
		}
	}
	if s.Min < 0 {
		return fmt.Errorf("option %s: %s", optMin, notPositive(strconv.Itoa(s.Min)))
	}
	if s.Name != "" {
		if msg := checkName(s.Name); msg != "" {
			return fmt.Errorf("option %s: %s", optName, msg)
		}
	}
	lists := []struct {
		opt  string
		vals []string
	}{
		{optArgs, s.Args}, {optEnv, s.Env}, {optKeys, s.Keys}, {optMounts, s.Mounts},
		{optMachines, s.Machines}, {optCopyIn, s.CopyIn}, {optCopyOut, s.CopyOut},
	}
	for _, l := range lists {
		if err := validateList(l.opt, l.vals); err != nil {
			return err
		}
	}
	if err := validateRequirements(s.Requirements); err != nil {
		return err
	}
	for _, d := range []struct {
		opt  string
		refs []string
	}{{optAfter, s.After}, {optAfterOK, s.AfterOK}, {optAfterNotOK, s.AfterNotOK}} {
		if err := validateJobRefs(d.opt, d.refs); err != nil {
			return err
		}
	}
	return validatePlacement(s)
}

// validateJobRefs checks the jobs a dependency option names.
func validateJobRefs(opt string, refs []string) error {
	seen := map[string]bool{}
	for _, r := range refs {
		if msg := checkJobRef(r); msg != "" {
			return fmt.Errorf("option %s: %s", opt, msg)
		}
		if seen[r] {
			return fmt.Errorf("option %s: job %s given twice", opt, r)
		}
		seen[r] = true
	}
	return nil
}

// validateList checks every item of the list option opt.
func validateList(opt string, vals []string) error {
	lo := listOptions[opt]
	seen := map[string]bool{}
	for _, v := range vals {
		if msg := lo.check(v); msg != "" {
			return fmt.Errorf("option %s: %s", opt, msg)
		}
		if lo.item != "" {
			if seen[v] {
				return fmt.Errorf("option %s: %s %s given twice", opt, lo.item, v)
			}
			seen[v] = true
		}
	}
	return nil
}

// validateRequirements checks the comparisons of a spec.
func validateRequirements(reqs []client.Requirement) error {
	seen := map[string]bool{}
	for _, r := range reqs {
		label := r.Attr + r.Op
		if msg := checkAttr(r.Attr); msg != "" {
			return fmt.Errorf("comparison %s%s%s: %s", r.Attr, r.Op, formatNumber(r.Value), msg)
		}
		if !isOp(r.Op) {
			return fmt.Errorf("comparison on %s: %q is not an operator (one of %s)", r.Attr, r.Op, opList)
		}
		if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
			return fmt.Errorf("option %s: %v is not a finite number", label, r.Value)
		}
		if seen[label] {
			return fmt.Errorf("option %s: given twice", label)
		}
		seen[label] = true
	}
	return nil
}

// validatePlacement checks the scalar options after the lists.
func validatePlacement(s client.JobSpec) error {
	switch {
	case s.MaxPerMachine < 0:
		return fmt.Errorf("option %s: %s", optMaxPerMachine, notPositive(strconv.Itoa(s.MaxPerMachine)))
	case s.Unique && s.MaxPerMachine > 1:
		return fmt.Errorf("option %s: %s", optMaxPerMachine, uniqueConflict)
	case s.Load < 0 || math.IsNaN(s.Load) || math.IsInf(s.Load, 0):
		return fmt.Errorf("option %s: %s", optLoad, notPositiveNumber(formatNumber(s.Load)))
	case s.MemoryMB < 0:
		return fmt.Errorf("option %s: %s", optMemory, notPositive(strconv.FormatInt(s.MemoryMB, 10)))
	case s.MaxRestarts < 0:
		return fmt.Errorf("option %s: %s", optMaxRestarts, notPositive(strconv.Itoa(s.MaxRestarts)))
	}
	if err := checkResources(s); err != nil {
		return err
	}
	if err := checkCheckpoint(s); err != nil {
		return err
	}
	if s.Queue != "" {
		if msg := checkWord(s.Queue, "queue name"); msg != "" {
			return fmt.Errorf("option %s: %s", optQueue, msg)
		}
	}
	if s.Restart != "" {
		if msg := checkRestart(s.Restart); msg != "" {
			return fmt.Errorf("option %s: %s", optRestart, msg)
		}
	}
	if s.MaxRestarts > 0 {
		if msg := checkMaxRestarts(s.Restart); msg != "" {
			return fmt.Errorf("option %s: %s", optMaxRestarts, msg)
		}
	}
	if err := validateLimits(s); err != nil {
		return err
	}
	for _, t := range s.MailType {
		if msg := checkMailType(t); msg != "" {
			return fmt.Errorf("option %s: %s", optMailType, msg)
		}
	}
	if len(s.MailType) > 0 && s.Mail == "" {
		return fmt.Errorf("option %s: needs mail or mail=ADDRESS", optMailType)
	}
	checks := []struct {
		opt, val string
		check    func(string) string
	}{
		{optMail, s.Mail, checkMail}, {optCron, s.Cron, checkCron},
		{optCatchup, s.Catchup, checkCatchup}, {optOverlap, s.Overlap, checkOverlap},
	}
	for _, c := range checks {
		if c.val == "" {
			continue
		}
		if msg := c.check(c.val); msg != "" {
			return fmt.Errorf("option %s: %s", c.opt, msg)
		}
	}
	for _, c := range []struct{ opt, val string }{{optCatchup, s.Catchup}, {optOverlap, s.Overlap}} {
		if c.val != "" && s.Cron == "" {
			return fmt.Errorf("option %s: %s", c.opt, needsCron)
		}
	}
	return nil
}

// CheckName reports whether name is acceptable as a symb_name, for callers
// that take a name outside a spec string (netexec --name).
func CheckName(name string) error {
	if msg := checkName(name); msg != "" {
		return fmt.Errorf("option %s: %s", optName, msg)
	}
	return nil
}

// CheckEnv reports whether entry is acceptable as an env entry (NAME=value).
func CheckEnv(entry string) error {
	if msg := checkEnv(entry); msg != "" {
		return fmt.Errorf("option %s: %s", optEnv, msg)
	}
	return nil
}

// listOption describes a {...} list option: how each item is checked and,
// when item is set, what an item is called in the error for a repeat.
type listOption struct {
	check func(string) string
	item  string // "" allows repeats
}

var listOptions = map[string]listOption{
	optArgs:     {check: checkText},
	optEnv:      {check: checkEnv},
	optKeys:     {check: checkKeyName, item: "key"},
	optMounts:   {check: checkMount, item: "mount"},
	optMachines: {check: checkMachine, item: "machine"},
	optCopyIn:   {check: checkCopy, item: "file"},
	optCopyOut:  {check: checkCopy, item: "file"},
}

// uniqueConflict is the message for unique with max_per_machine above 1.
const uniqueConflict = "conflicts with unique (unique means at most 1 instance per machine)"

// The check functions return "" when the value is fine and otherwise the
// message, without position or option, so Parse and Validate can frame it.

func notPositive(v string) string {
	return fmt.Sprintf("%q is not a positive integer", v)
}

func notPositiveNumber(v string) string {
	return fmt.Sprintf("%q is not a positive number", v)
}

func parseMin(v string) (int, string) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || strings.HasPrefix(v, "+") {
		return 0, notPositive(v)
	}
	return n, ""
}

func parsePositiveInt64(v string) (int64, string) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || strings.HasPrefix(v, "+") {
		return 0, notPositive(v)
	}
	return n, ""
}

// numberRE is the number syntax of comparisons and load: decimal, with an
// optional sign, fraction and exponent; no hex, no inf or nan. Compiled at
// its first use, to keep it out of every command's start-up.
var numberRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
})

// parseNumber reads a finite decimal number.
func parseNumber(v string) (float64, string) {
	if !numberRE().MatchString(v) {
		return 0, fmt.Sprintf("%q is not a number", v)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Sprintf("%q is out of range", v)
	}
	return f, ""
}

func parsePositiveNumber(v string) (float64, string) {
	f, msg := parseNumber(v)
	if msg != "" || f <= 0 {
		return 0, notPositiveNumber(v)
	}
	return f, ""
}

// formatNumber prints f so that parseNumber gives f back.
func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func checkText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Sprintf("%q contains a NUL byte", s)
	}
	return ""
}

func checkName(s string) string {
	if s == "" {
		return "the name is empty"
	}
	if len(s) > maxNameLen {
		return fmt.Sprintf("%q is longer than %d characters", s, maxNameLen)
	}
	allDigits := true
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			allDigits = false
		case (r == '-' || r == '.') && i > 0:
			allDigits = false
		default:
			return fmt.Sprintf("%q is not a valid name (letters, digits and _-. only, not starting with - or .)", s)
		}
	}
	if allDigits {
		return fmt.Sprintf("%q is all digits and would read as a job id", s)
	}
	return ""
}

// checkJobRef accepts what netkill accepts: a job id or a symbolic name.
func checkJobRef(s string) string {
	if s == "" {
		return "the job is empty (write a job name or id)"
	}
	if _, err := strconv.ParseUint(s, 10, 64); err == nil {
		return ""
	}
	if msg := checkName(s); msg != "" {
		return fmt.Sprintf("%q is neither a job id nor a job name", s)
	}
	return ""
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// isIdent reports whether s is an option or attribute name.
func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0) {
			return false
		}
	}
	return s != ""
}

func checkEnv(s string) string {
	name, _, ok := strings.Cut(s, "=")
	if !ok || !isEnvName(name) {
		return fmt.Sprintf("%q is not of the form NAME=value", s)
	}
	return checkText(s)
}

// isWordByte reports whether c may appear in a machine key, machine name or
// queue name: letters, digits and _-.+ (mtype names such as sparc1+).
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == '+'
}

// checkWord checks a key, machine or queue name; what names it in the
// message.
func checkWord(s, what string) string {
	if s == "" {
		return "empty " + what
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return fmt.Sprintf("%q is not a %s (letters, digits and _-.+)", s, what)
		}
	}
	return ""
}

// checkKey checks a binaries key: a machine key or "*".
func checkKey(s string) string {
	switch {
	case s == client.AnyKey:
		return ""
	case s == "":
		return "empty machine key"
	case checkWord(s, "machine key") != "":
		return fmt.Sprintf("%q is not a machine key (letters, digits and _-.+, or \"*\")", s)
	}
	return ""
}

func checkKeyName(s string) string { return checkWord(s, "machine key") }
func checkMachine(s string) string { return checkWord(s, "machine name") }

// checkAttr checks the attribute of a comparison: a name that is not an
// option of the language.
func checkAttr(s string) string {
	if !isIdent(s) {
		return fmt.Sprintf("%q is not an attribute name", s)
	}
	if isOption(s) {
		return fmt.Sprintf("%s is an option, not a machine attribute (write %s=...)", s, s)
	}
	return ""
}

func checkMount(s string) string {
	if !strings.HasPrefix(s, "/") {
		return fmt.Sprintf("%q is not an absolute path", s)
	}
	return checkText(s)
}

func checkCopy(s string) string {
	if s == "" {
		return "empty file name"
	}
	return checkText(s)
}

func checkPath(s string) string {
	if s == "" {
		return "empty binary path"
	}
	return checkText(s)
}

func checkRestart(s string) string {
	switch s {
	case client.RestartNo, client.RestartOnFailure, client.RestartAlways:
		return ""
	}
	return fmt.Sprintf("%q is not a restart policy (no, on-failure or always)", s)
}

// checkMaxRestarts checks max_restarts against the restart policy.
func checkMaxRestarts(restart string) string {
	if restart == "" || restart == client.RestartNo {
		return "needs restart=on-failure or restart=always"
	}
	return ""
}

func checkMail(s string) string {
	if s == "" {
		return "empty address (write mail alone to mail the job's owner)"
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return fmt.Sprintf("%q is not a mail address (no spaces or control characters)", s)
		}
	}
	return ""
}

// needsCron is the message for catchup= or overlap= without cron=.
const needsCron = `applies to cron jobs only (add cron="MIN HOUR DAY MONTH WEEKDAY")`

func checkCatchup(s string) string {
	switch s {
	case client.CatchupLast, client.CatchupNone:
		return ""
	}
	return fmt.Sprintf("%q is not a catch-up policy (none or last)", s)
}

func checkOverlap(s string) string {
	switch s {
	case client.OverlapSkip, client.OverlapAllow:
		return ""
	}
	return fmt.Sprintf("%q is not an overlap policy (skip or allow)", s)
}

// checkCron checks that a schedule is there; the server parses it.
func checkCron(s string) string {
	if strings.TrimSpace(s) == "" {
		return `empty schedule (write cron="MIN HOUR DAY MONTH WEEKDAY")`
	}
	return checkText(s)
}
