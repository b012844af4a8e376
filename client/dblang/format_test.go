package dblang

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// isisFormatted is Format of the example database.
const isisFormatted = `key fpu /* Has hardware fpu */
key mathlab /* Has mathlab license */
key xfpu /* Has high speed FPU support */
key sparc /* Sparc architecture */
key mc68020 /* MC68020 architecture */
key mips /* mips architecture */
key hpux /* HP-UX architecture */

mtype sun3 = {mc68020, fpu, mem=8, rating=1}
mtype sparc1+ = {sparc, mem=16, rating=8}
mtype sparc2 = {sparc, fpu, xfpu, mem=16, rating=16}
mtype mips = {mips, fpu, xfpu, mem=16, rating=16}
mtype hpux = {hpux, fpu, xfpu, mem=16, rating=16}

machine flute = sparc1+
machine viola = {mips, mathlab, mounts={/usr/fsys/fs1, /usr/fsys/fs2}}
machine bongo = {sparc1+, mem=32, mounts={/usr/fsys/fs1}}

add_q NEW_Q = {nq_maxsize=120, nq_maxactive=100, nq_maxrun=200, nq_maxmem=20}

admin_id tclark
`

func TestFormatIsis(t *testing.T) {
	db, err := Parse("isis.db", readIsis(t))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	out := Format(db)
	if got := string(out); got != isisFormatted {
		t.Errorf("Format:\ngot  %s\nwant %s", got, isisFormatted)
	}
	again, err := Parse("formatted", out)
	if err != nil {
		t.Fatalf("Parse(Format): %v", err)
	}
	if !again.Equal(db) {
		t.Errorf("Parse(Format(db)): got %+v, want %+v", again, db)
	}
}

func TestFormatQuotesAndNumbers(t *testing.T) {
	db := &Database{
		Keys:     []Key{{Name: "k", Comment: "ends */ early"}},
		MTypes:   []MType{{Name: "m", Attrs: map[string]float64{"big": 1e25, "tiny": 1e-7, "half": 0.5, "neg": -3, "zero": 0}}},
		Machines: []Machine{{Name: "x", Mounts: []string{"/z", "/a b", `/q"uote`, "/c/*d", "/b"}}},
		Queues:   []Queue{{Name: "Q"}},
		Admins:   []string{"tclark", "fred@cs", ""},
	}
	want := `key k /* ends * / early */

mtype m = {big=1e+25, half=0.5, neg=-3, tiny=1e-07, zero=0}

machine x = {mounts={"/a b", /b, "/c/*d", "/q\"uote", /z}}

add_q Q = {}

admin_id tclark
admin_id "fred@cs"
admin_id ""
`
	if got := string(Format(db)); got != want {
		t.Errorf("Format:\ngot  %s\nwant %s", got, want)
	}
	if got := Format(nil); got != nil {
		t.Errorf("Format(nil): got %q, want nil", got)
	}
}

// TestFormatAllowRootJobs checks allow_root_jobs prints last, in a section
// of its own, only when set, and reads back the same.
func TestFormatAllowRootJobs(t *testing.T) {
	tests := []struct {
		name string
		db   *Database
		want string
	}{
		{"alone", &Database{AllowRootJobs: true}, "allow_root_jobs\n"},
		{"after admin_ids", &Database{Queues: []Queue{{Name: "Q"}}, Admins: []string{"tclark"}, AllowRootJobs: true},
			"add_q Q = {}\n\nadmin_id tclark\n\nallow_root_jobs\n"},
		{"after queues when no admin_id", &Database{Queues: []Queue{{Name: "Q"}}, AllowRootJobs: true},
			"add_q Q = {}\n\nallow_root_jobs\n"},
		{"not set", &Database{Admins: []string{"tclark"}}, "admin_id tclark\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Format(tt.db)
			if string(out) != tt.want {
				t.Errorf("Format:\ngot  %q\nwant %q", out, tt.want)
			}
			back, err := Parse("formatted", out)
			if err != nil {
				t.Fatalf("Parse(Format): %v", err)
			}
			if !back.Equal(tt.db) || back.AllowRootJobs != tt.db.AllowRootJobs {
				t.Errorf("Parse(Format(db)): got %+v, want %+v", back, tt.db)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	base := func() *Database {
		return &Database{
			Keys:     []Key{{Name: "fpu", Comment: "c", Pos: Pos{"a", 1, 1}}},
			MTypes:   []MType{{Name: "m", Keys: []string{"fpu"}, Attrs: map[string]float64{"mem": 1}, Mounts: []string{"/a", "/b"}}},
			Machines: []Machine{{Name: "x", MType: "m"}},
			Queues:   []Queue{{Name: "Q", MaxSize: 3}},
			Admins:   []string{"root"},
		}
	}
	tests := []struct {
		name   string
		change func(*Database)
		want   bool
	}{
		{"same", func(*Database) {}, true},
		{"positions differ", func(d *Database) { d.Keys[0].Pos = Pos{}; d.Queues[0].Pos = Pos{"b", 2, 2} }, true},
		{"mounts in another order", func(d *Database) { d.MTypes[0].Mounts = []string{"/b", "/a"} }, true},
		{"empty instead of nil", func(d *Database) { d.Machines[0].Attrs = map[string]float64{}; d.Machines[0].Keys = []string{} }, true},
		{"comment differs", func(d *Database) { d.Keys[0].Comment = "" }, false},
		{"attr differs", func(d *Database) { d.MTypes[0].Attrs["mem"] = 2 }, false},
		{"attr missing", func(d *Database) { d.MTypes[0].Attrs = nil }, false},
		{"mtype differs", func(d *Database) { d.Machines[0].MType = "" }, false},
		{"queue differs", func(d *Database) { d.Queues[0].Priority = 1 }, false},
		{"admin differs", func(d *Database) { d.Admins = nil }, false},
		{"allow_root_jobs differs", func(d *Database) { d.AllowRootJobs = true }, false},
		{"mount differs", func(d *Database) { d.MTypes[0].Mounts = []string{"/a", "/a"} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.change(o)
			if got := base().Equal(o); got != tt.want {
				t.Errorf("Equal: got %v, want %v", got, tt.want)
			}
		})
	}
	var nilDB *Database
	if !nilDB.Equal(nil) || nilDB.Equal(&Database{}) || (&Database{}).Equal(nil) {
		t.Errorf("Equal with nil: want only nil equal to nil")
	}
}

// TestFormatRoundTripGenerated formats many generated databases and checks
// each parses back to an Equal one, and formats the same again.
func TestFormatRoundTripGenerated(t *testing.T) {
	for seed := range uint64(300) {
		db := genDatabase(rand.New(rand.NewPCG(seed, 1)))
		out := Format(db)
		back, err := Parse("gen", out)
		if err != nil {
			t.Fatalf("seed %d: Parse(Format(db)): %v\n%s", seed, err, out)
		}
		if !back.Equal(db) {
			t.Fatalf("seed %d: Parse(Format(db)): got %+v, want %+v\n%s", seed, back, db, out)
		}
		if again := Format(back); string(again) != string(out) {
			t.Fatalf("seed %d: Format is not stable:\ngot  %s\nwant %s", seed, again, out)
		}
	}
}

var (
	genNames    = []string{"fpu", "mips", "sparc1+", "a.b", "-x", "8", "mounts", "key", "mtype", "x_1", "hp-ux", "Z"}
	genComments = []string{"", "plain", "a * star", "two\nlines", "/* opener", "tab\there", "ends with *"}
	genMounts   = []string{"/", "/usr/fsys/fs1", "/a b", `/q"x`, "/c/*d", "/e=f", "/g,h", `/back\slash`, "/ü"}
	genAdmins   = []string{"tclark", "fred@cs.cornell.edu", "with space", `q"`, "8"}
)

// pick returns up to n distinct elements of from, in a random order.
func pick(r *rand.Rand, from []string, n int) []string {
	var out []string
	for _, i := range r.Perm(len(from)) {
		if len(out) == n {
			break
		}
		out = append(out, from[i])
	}
	return out
}

func genAttrs(r *rand.Rand) map[string]float64 {
	n := r.IntN(4)
	if n == 0 {
		return nil
	}
	attrs := map[string]float64{}
	for _, name := range pick(r, []string{"mem", "rating", "nprocs", "disk", "a.b", "8"}, n) {
		switch r.IntN(4) {
		case 0:
			attrs[name] = float64(r.IntN(1000))
		case 1:
			attrs[name] = r.NormFloat64() * 100
		case 2:
			attrs[name] = math.Ldexp(r.Float64(), r.IntN(200)-100)
		default:
			attrs[name] = -float64(r.IntN(10)) / 8
		}
	}
	return attrs
}

func genDatabase(r *rand.Rand) *Database {
	db := &Database{}
	keys := pick(r, genNames, r.IntN(len(genNames)))
	for _, k := range keys {
		db.Keys = append(db.Keys, Key{Name: k, Comment: genComments[r.IntN(len(genComments))]})
	}
	mtypes := pick(r, genNames, r.IntN(5))
	isMType := map[string]bool{}
	for _, m := range mtypes {
		isMType[m] = true
		db.MTypes = append(db.MTypes, MType{
			Name: m, Keys: pick(r, keys, r.IntN(4)), Attrs: genAttrs(r), Mounts: pick(r, genMounts, r.IntN(3)),
		})
	}
	for i, name := range pick(r, genNames, r.IntN(6)) {
		m := Machine{Name: name, Attrs: genAttrs(r), Mounts: pick(r, genMounts, r.IntN(3))}
		if len(mtypes) > 0 && i%3 != 0 {
			m.MType = mtypes[r.IntN(len(mtypes))]
		}
		for _, k := range pick(r, keys, r.IntN(4)) {
			// Without an mtype, a key named like an mtype would be read
			// as the mtype; such a machine cannot be written.
			if m.MType != "" || !isMType[k] {
				m.Keys = append(m.Keys, k)
			}
		}
		db.Machines = append(db.Machines, m)
	}
	for i := range r.IntN(3) {
		db.Queues = append(db.Queues, Queue{
			Name: fmt.Sprintf("Q%d", i), Priority: r.IntN(21) - 10,
			MaxSize: r.Int64N(3), MaxActive: r.Int64N(300), MaxRunSeconds: r.Int64N(2) * 90, MaxMemMB: math.MaxInt64 - r.Int64N(2),
		})
	}
	db.Admins = pick(r, genAdmins, r.IntN(3))
	db.AllowRootJobs = r.IntN(2) == 0
	return db
}
