package dblang

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePrime(t *testing.T) {
	src := `add_q debug = {priority=5, nq_maxuser_active=2, \
    prime={window="Mon-Fri 08:00-18:00", tz="Europe/Paris", priority=20, nq_maxuser_active=8, nq_maxrun=90s}}
add_q night = {prime={window={"Mon-Fri 18:00-08:00", "Sat-Sun"}, nq_maxactive=0}}
`
	db, err := Parse("site.db", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p := db.Queues[0].Prime
	if p == nil || strings.Join(p.Windows, ";") != "Mon-Fri 08:00-18:00" || p.TZ != "Europe/Paris" ||
		p.Priority == nil || *p.Priority != 20 || p.MaxUserActive == nil || *p.MaxUserActive != 8 ||
		p.MaxRunSeconds == nil || *p.MaxRunSeconds != 90 || p.MaxSize != nil || p.MaxUserQueued != nil {
		t.Fatalf("debug's prime: got %+v", p)
	}
	if q := db.Queues[0]; q.Priority != 5 || q.MaxUserActive != 2 {
		t.Errorf("debug's own values: got priority %d nq_maxuser_active %d, want 5 and 2", q.Priority, q.MaxUserActive)
	}
	n := db.Queues[1].Prime
	if n == nil || len(n.Windows) != 2 || n.TZ != "" || n.MaxActive == nil || *n.MaxActive != 0 || n.Priority != nil {
		t.Fatalf("night's prime: got %+v", n)
	}
	out := string(Format(db))
	for _, want := range []string{
		`add_q debug = {priority=5, nq_maxuser_active=2, prime={window="Mon-Fri 08:00-18:00", tz="Europe/Paris", nq_maxrun=90s, priority=20, nq_maxuser_active=8}}`,
		`add_q night = {prime={window={"Mon-Fri 18:00-08:00", "Sat-Sun"}, nq_maxactive=0}}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Format lacks %s:\n%s", want, out)
		}
	}
	again, err := Parse("again.db", []byte(out))
	if err != nil || !again.Equal(db) {
		t.Errorf("Format does not read back equal: %v\n%s", err, out)
	}
	changed, _ := Parse("c.db", []byte(strings.Replace(src, "priority=20", "priority=21", 1)))
	if changed.Equal(db) {
		t.Errorf("a different prime priority compares equal")
	}
}

func TestPrimeErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"not a list", `add_q Q = {prime=yes}`,
			`t.db:1:18: prime in add_q Q wants a {window="Mon-Fri 08:00-18:00", priority=N, ...} list, found "yes"`},
		{"no window", `add_q Q = {prime={priority=3}}`,
			`t.db:1:12: prime in add_q Q needs a window; write window="Mon-Fri 08:00-18:00" (or a {"...", ...} list)`},
		{"nothing changed", `add_q Q = {prime={window="Mon-Fri 08:00-18:00"}}`,
			`t.db:1:12: prime in add_q Q changes nothing; give the priority or limits that apply inside the window (priority=N, nq_maxactive=N, ...)`},
		{"bad window", `add_q Q = {prime={window="Mon-Fry 08:00-18:00", priority=3}}`,
			`t.db:1:26: bad window "Mon-Fry 08:00-18:00" in prime in add_q Q: want DAYS, HH:MM-HH:MM or both, such as "Mon-Fri 08:00-18:00"`},
		{"bad time", `add_q Q = {prime={window="08:00-25:00", priority=3}}`,
			`t.db:1:26: bad window "08:00-25:00" in prime in add_q Q: want DAYS, HH:MM-HH:MM or both, such as "Mon-Fri 08:00-18:00"`},
		{"window unquoted", `add_q Q = {prime={window=Mon-Fri, priority=3}}`,
			`t.db:1:26: window in prime in add_q Q wants a window in double quotes, such as "Mon-Fri 08:00-18:00", found "Mon-Fri"`},
		{"empty window list", `add_q Q = {prime={window={}, priority=3}}`,
			`t.db:1:26: window in prime in add_q Q lists no window; write window="Mon-Fri 08:00-18:00"`},
		{"unknown zone", `add_q Q = {prime={window="Sat-Sun", tz="Mars/Olympus", priority=3}}`,
			`t.db:1:40: unknown time zone "Mars/Olympus" for tz in prime in add_q Q; write an IANA name in double quotes, such as tz="Europe/Paris", or UTC`},
		{"local zone", `add_q Q = {prime={window="Sat-Sun", tz=Local, priority=3}}`,
			`t.db:1:40: unknown time zone "Local" for tz in prime in add_q Q; write an IANA name in double quotes, such as tz="Europe/Paris", or UTC`},
		{"unknown parameter", `add_q Q = {prime={window="Sat-Sun", kill_grace=30}}`,
			`t.db:1:37: unknown prime-time parameter "kill_grace" in add_q Q; the known ones are window, tz and nq_maxsize, nq_maxactive, nq_maxrun, nq_maxmem, priority, nq_maxuser_active, nq_maxuser_queued`},
		{"negative limit", `add_q Q = {prime={window="Sat-Sun", nq_maxactive=-1}}`,
			`t.db:1:50: nq_maxactive=-1 in prime in add_q Q is a negative limit; write 0 for no limit, or a positive number`},
		{"bad number", `add_q Q = {prime={window="Sat-Sun", priority=high}}`,
			`t.db:1:46: bad number "high" for priority in prime in add_q Q; write a whole number such as 120`},
		{"given twice", `add_q Q = {prime={window="Sat-Sun", priority=1, priority=2}}`,
			`t.db:1:49: priority is given twice in prime in add_q Q (first at 1:37); remove one`},
		{"prime twice", `add_q Q = {prime={window="Sat-Sun", priority=1}, prime={window="Sat-Sun", priority=2}}`,
			`t.db:1:50: prime is given twice in add_q Q (first at 1:12); remove one`},
		{"value missing", `add_q Q = {prime={window="Sat-Sun", priority}}`,
			`t.db:1:37: prime-time parameter priority in add_q Q needs a value; write priority=...`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Parse("t.db", []byte(tc.src))
			if db != nil {
				t.Errorf("got a Database, want nil")
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("got %v, want an ErrorList", err)
			}
			if got := list[0].Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if len(list) != 1 {
				t.Errorf("got %d errors, want 1:\n%v", len(list), err)
			}
		})
	}
}
