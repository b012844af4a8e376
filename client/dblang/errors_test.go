package dblang

import (
	"errors"
	"strings"
	"testing"
)

// header declares what the error cases use, so each case's line numbers
// start at 4.
const header = "key fpu\nkey sparc\nmtype sun3 = {fpu, mem=8}\n"

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"undeclared key in mtype", "mtype m = {fpu, gpu}", "t.db:4:17: key gpu is not declared; declare it with `key gpu` above line 4"},
		{"key used before it is declared", "mtype m = {gpu}\nkey gpu", "t.db:4:12: key gpu is used before it is declared at line 5; move `key gpu` above line 4"},
		{"undeclared word in machine", "machine x = {sun3, gpu}", "t.db:4:20: gpu is neither a declared key nor a declared mtype; declare it with `key gpu` or `mtype gpu = {...}` above line 4"},
		{"key used before it is declared in machine", "machine x = {sun3, gpu}\nkey gpu", "t.db:4:20: key gpu is used before it is declared at line 5; move `key gpu` above line 4"},
		{"unknown mtype", "machine x = sun4", "t.db:4:13: unknown mtype sun4; declare it with `mtype sun4 = {...}` above line 4"},
		{"mtype used before it is declared", "machine x = m\nmtype m = {}", "t.db:4:13: mtype m is used before it is declared at line 5; move its declaration above line 4"},
		{"mtype used before it is declared in a list", "machine x = {m, fpu}\nmtype m = {}", "t.db:4:14: mtype m is used before it is declared at line 5; move its declaration above line 4"},
		{"key given as mtype", "machine x = fpu", "t.db:4:13: fpu is a key, not an mtype; write machine x = {fpu} to give the machine that key"},
		{"mtype in an mtype list", "mtype m = {sun3}", "t.db:4:12: sun3 is an mtype, not a key; an mtype's list holds keys, attr=NUMBER and mounts={...}"},
		{"two mtypes", "mtype m = {}\nmachine x = {sun3, fpu, m}", "t.db:5:25: machine x has two mtypes, sun3 (at 5:14) and m; a machine has one mtype"},
		{"duplicate key", "key fpu /* again */", "t.db:4:5: key fpu is declared twice (first at line 1); remove or rename one"},
		{"duplicate mtype", "mtype sun3 = {}", "t.db:4:7: mtype sun3 is declared twice (first at line 3); remove or rename one"},
		{"duplicate machine", "machine x = sun3\nmachine x = sun3", "t.db:5:9: machine x is declared twice (first at line 4); remove or rename one"},
		{"duplicate queue", "add_q Q = {}\nadd_q Q = {priority=1}", "t.db:5:7: add_q Q is declared twice (first at line 4); remove or rename one"},
		{"duplicate admin", "admin_id tclark\nadmin_id tclark", "t.db:5:10: admin_id tclark is given twice (first at line 4); remove one"},
		{"allow_root_jobs twice", "allow_root_jobs\nadmin_id tclark\n  allow_root_jobs", "t.db:6:3: allow_root_jobs is given twice (first at line 4); remove one"},
		{"allow_root_jobs with an argument", "allow_root_jobs yes", `t.db:4:17: allow_root_jobs takes no arguments, found "yes"; write allow_root_jobs alone on its line to allow root jobs, or leave it out to refuse them`},
		{"allow_root_jobs given a value", "allow_root_jobs = true", `t.db:4:17: allow_root_jobs takes no arguments, found '='; write allow_root_jobs alone on its line to allow root jobs, or leave it out to refuse them`},
		{"allow_root_jobs given a list", "allow_root_jobs {root}", `t.db:4:17: allow_root_jobs takes no arguments, found '{'; write allow_root_jobs alone on its line to allow root jobs, or leave it out to refuse them`},
		{"allow_root_jobs continued onto an argument", "allow_root_jobs \\\n  tclark", `t.db:5:3: allow_root_jobs takes no arguments, found "tclark"; write allow_root_jobs alone on its line to allow root jobs, or leave it out to refuse them`},
		{"bad number", "mtype m = {mem=12x}", `t.db:4:16: bad number "12x" for attribute mem in mtype m; write a number such as 16 or 8.5`},
		{"number as string", `mtype m = {mem="12"}`, `t.db:4:16: bad number string "12" for attribute mem in mtype m; write a number such as 16 or 8.5`},
		{"number out of range", "mtype m = {mem=1e999}", "t.db:4:16: number 1e999 for attribute mem in mtype m is out of range"},
		{"attribute given a list", "mtype m = {mem={1}}", "t.db:4:16: attribute mem in mtype m wants a number, not a list (only mounts takes a list)"},
		{"attribute twice", "mtype m = {mem=1, mem=2}", "t.db:4:19: attribute mem is given twice in mtype m (first at 4:12); remove one"},
		{"key twice in a list", "mtype m = {fpu, fpu}", "t.db:4:17: key fpu is listed twice in mtype m (first at 4:12); remove one"},
		{"path as an item", "mtype m = {/usr}", "t.db:4:12: unexpected path /usr in the list of mtype m; the list holds keys, attr=NUMBER and mounts={...}"},
		{"mounts not a list", "machine x = {sun3, mounts=/usr}", "t.db:4:27: mounts in machine x wants a {/path, ...} list, found path /usr"},
		{"mount not absolute", `machine x = {mounts={"usr"}}`, `t.db:4:22: mount "usr" in machine x is not an absolute path; write it starting with /`},
		{"mount twice", "machine x = {mounts={/a, /a}}", "t.db:4:26: mount /a is listed twice in machine x (first at 4:22); remove one"},
		{"mounts twice", "machine x = {mounts={/a}, mounts={/b}}", "t.db:4:27: mounts is given twice in machine x; merge the two lists"},
		{"machine wants mtype or list", "machine x = /usr", "t.db:4:13: machine x wants an mtype name or a {...} list, found path /usr"},
		{"mtype wants a list", "mtype m = sun3", `t.db:4:11: mtype m wants a {key, attr=NUMBER, mounts={...}} list, found "sun3"`},
		{"unterminated comment", "key gpu /* GPU", "t.db:4:9: unterminated comment: this /* has no closing */; close it"},
		{"unterminated list", "mtype m = {fpu,\nmem=8}", `t.db:4:11: unterminated list: this { has no closing } on its line; close it, or end the line with \ to continue the list on the next`},
		{"unterminated list at end of file", "mtype m = {fpu", `t.db:4:11: unterminated list: this { has no closing } on its line; close it, or end the line with \ to continue the list on the next`},
		{"unterminated string", `admin_id "tclark`, `t.db:4:10: unterminated string: close it with " before the end of the line`},
		{"unknown escape", `admin_id "t\nclark"`, `t.db:4:12: unknown escape \n in a string; only \" and \\ are escapes`},
		{"interactive not yes or no", "add_q Q = {interactive=maybe}", `t.db:4:24: interactive in add_q Q wants yes or no, found "maybe"`},
		{"two interactive queues", "add_q Q = {interactive=yes}\nadd_q R = {interactive=yes}", `t.db:5:12: add_q R is marked interactive=yes, and so is add_q Q (4:1); interactive jobs without --queue go to one queue, so mark only one`},
		{"unknown nq_ parameter", "add_q Q = {nq_maxjobs=3}", `t.db:4:12: unknown queue parameter "nq_maxjobs" in add_q Q; the known ones are nq_maxsize, nq_maxactive, nq_maxrun, nq_maxmem, priority, kill_grace, policy, nq_maxuser_active, nq_maxuser_queued, interactive, preempt, prime, vacate_after, keep_suspended and suspend`},
		{"queue parameter without value", "add_q Q = {nq_maxsize}", "t.db:4:12: queue parameter nq_maxsize in add_q Q needs a value; write nq_maxsize=N"},
		{"queue parameter twice", "add_q Q = {priority=1, priority=2}", "t.db:4:24: priority is given twice in add_q Q (first at 4:12); remove one"},
		{"kill grace of zero", "add_q Q = {kill_grace=0}", "t.db:4:23: bad kill grace \"0\" for kill_grace in add_q Q; write whole seconds from 1 to 3600, such as 30, or with a unit: 30s, 2m, 1h"},
		{"kill grace over an hour", "add_q Q = {kill_grace=2h}", "t.db:4:23: bad kill grace \"2h\" for kill_grace in add_q Q; write whole seconds from 1 to 3600, such as 30, or with a unit: 30s, 2m, 1h"},
		{"negative limit", "add_q Q = {nq_maxmem=-20}", "t.db:4:22: nq_maxmem=-20 in add_q Q is a negative limit; write 0 for no limit, or a positive number"},
		{"fractional limit", "add_q Q = {nq_maxsize=1.5}", "t.db:4:23: nq_maxsize in add_q Q wants a whole number, found 1.5"},
		{"bad limit", "add_q Q = {nq_maxsize=lots}", `t.db:4:23: bad number "lots" for nq_maxsize in add_q Q; write a whole number such as 120`},
		{"fractional run limit", "add_q Q = {nq_maxrun=1.5}", `t.db:4:22: bad run limit "1.5" for nq_maxrun in add_q Q; write whole minutes such as 200, or a whole number with a unit: 90s, 30m, 2h`},
		{"bad run limit", "add_q Q = {nq_maxrun=lots}", `t.db:4:22: bad run limit "lots" for nq_maxrun in add_q Q; write whole minutes such as 200, or a whole number with a unit: 90s, 30m, 2h`},
		{"unknown run unit", "add_q Q = {nq_maxrun=5d}", `t.db:4:22: bad run limit "5d" for nq_maxrun in add_q Q; write whole minutes such as 200, or a whole number with a unit: 90s, 30m, 2h`},
		{"limit out of range", "add_q Q = {nq_maxsize=99999999999999999999}", "t.db:4:23: number 99999999999999999999 for nq_maxsize in add_q Q is out of range"},
		{"unknown declaration", "host flute = sun3", `t.db:4:1: unknown declaration "host"; a declaration starts with key, mtype, machine, add_q, license, admin_id, allow_root_jobs, account, share or fairshare_halflife`},
		{"not a declaration", "{fpu}", "t.db:4:1: expected a declaration (key, mtype, machine, add_q, license, admin_id, allow_root_jobs, account, share or fairshare_halflife), found '{'"},
		{"garbage after a declaration", "machine x = sun3 fpu", `t.db:4:18: unexpected "fpu" after the machine declaration; put each declaration on its own line`},
		{"garbage after a key", "key gpu, tpu", "t.db:4:8: unexpected ',' after the key declaration; put each declaration on its own line"},
		{"missing name at the end of a line", "key\n", `t.db:4:4: expected a name after key, found end of line; a newline ends a declaration unless a \ ends the line`},
		{"missing name", "key /* nothing */", "t.db:4:18: expected a name after key, found end of file (names use letters, digits, _ - . +)"},
		{"missing equals", "mtype m {fpu}", "t.db:4:9: expected '=' after mtype m, found '{'"},
		{"missing login", "admin_id =", "t.db:4:10: expected a login after admin_id, found '='"},
		{"empty login", `admin_id ""`, "t.db:4:10: admin_id needs a login; write admin_id LOGIN"},
		{"trailing comma", "mtype m = {fpu,}", "t.db:4:16: expected an item after ',', found '}'; remove the trailing comma"},
		{"missing comma", "mtype m = {fpu sparc}", `t.db:4:16: expected ',' or '}' after a list item, found "sparc"`},
		{"missing value", "mtype m = {mem=}", "t.db:4:16: expected a value after mem=, found '}'"},
		{"name before equals", "mtype m = {/a=1}", "t.db:4:14: expected a name before '=', found path /a"},
		{"stray backslash", `key gpu \ /* GPU */`, `t.db:4:9: a \ continues a declaration only at the end of a line; remove it or the text after it`},
		{"unexpected character", "key gpu;", "t.db:4:8: unexpected character ';'; names use letters, digits, _ - . + and other text goes in double quotes"},
		{"not UTF-8", "key g\xffu", "t.db:4:6: unexpected byte 0xff (the file is not UTF-8 text here)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := Parse("t.db", []byte(header+tt.src))
			if db != nil {
				t.Errorf("got a Database, want nil")
			}
			if err == nil {
				t.Fatalf("got no error, want %q", tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var list ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("got %#v, want an ErrorList of one", err)
			}
		})
	}
}

// TestParseReportsEveryError checks that Parse goes on after an error,
// reports each problem once (the lines that continue an unterminated list
// are not reported again), and sorts the list by position.
func TestParseReportsEveryError(t *testing.T) {
	src := `key fpu
mtype m = {fpu,
   mem=8, rating=1}
machine x = {m, gpu}
key
  sparc
add_q Q = {nq_maxjobs=1, nq_maxsize=-1}
mtype m = {}
`
	want := []struct {
		pos Pos
		msg string
	}{
		{Pos{"t.db", 2, 11}, `unterminated list: this { has no closing } on its line; close it, or end the line with \ to continue the list on the next`},
		{Pos{"t.db", 4, 17}, "gpu is neither a declared key nor a declared mtype; declare it with `key gpu` or `mtype gpu = {...}` above line 4"},
		{Pos{"t.db", 5, 4}, `expected a name after key, found end of line; a newline ends a declaration unless a \ ends the line`},
		{Pos{"t.db", 6, 3}, `unknown declaration "sparc"; a declaration starts with key, mtype, machine, add_q, license, admin_id, allow_root_jobs, account, share or fairshare_halflife`},
		{Pos{"t.db", 7, 12}, `unknown queue parameter "nq_maxjobs" in add_q Q; the known ones are nq_maxsize, nq_maxactive, nq_maxrun, nq_maxmem, priority, kill_grace, policy, nq_maxuser_active, nq_maxuser_queued, interactive, preempt, prime, vacate_after, keep_suspended and suspend`},
		{Pos{"t.db", 7, 37}, "nq_maxsize=-1 in add_q Q is a negative limit; write 0 for no limit, or a positive number"},
		{Pos{"t.db", 8, 7}, "mtype m is declared twice (first at line 2); remove or rename one"},
	}
	db, err := Parse("t.db", []byte(src))
	if db != nil {
		t.Errorf("got a Database, want nil")
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %v, want an ErrorList", err)
	}
	if len(list) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(list), len(want), err)
	}
	for i, w := range want {
		if list[i].Pos != w.pos || list[i].Msg != w.msg {
			t.Errorf("error %d: got %v: %s\nwant %v: %s", i, list[i].Pos, list[i].Msg, w.pos, w.msg)
		}
	}
}

func TestErrorListTruncates(t *testing.T) {
	var src strings.Builder
	for range 40 {
		src.WriteString("bogus\n")
	}
	_, err := Parse("t.db", []byte(src.String()))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 40 {
		t.Fatalf("got %v, want an ErrorList of 40", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if got, want := len(lines), 31; got != want {
		t.Fatalf("Error() lines: got %d, want %d", got, want)
	}
	if got, want := lines[30], "(and 10 more errors)"; got != want {
		t.Errorf("last line: got %q, want %q", got, want)
	}
	if got, want := (&Error{Pos: Pos{Line: 2, Col: 3}, Msg: "m"}).Error(), "2:3: m"; got != want {
		t.Errorf("Error without a file: got %q, want %q", got, want)
	}
}
