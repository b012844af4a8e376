package dblang

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// isisPath is the paper's example database, at the repository root.
var isisPath = filepath.Join("..", "..", "testdata", "isis.db")

func readIsis(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile(isisPath)
	if err != nil {
		t.Fatalf("read the example database: %v", err)
	}
	return src
}

// TestParseGolden checks that the paper's example database parses to the
// structure in testdata/isis.golden.json (go test -update rewrites it).
func TestParseGolden(t *testing.T) {
	db, err := Parse("isis.db", readIsis(t))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	got, err := json.MarshalIndent(db, "", "\t")
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "isis.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatalf("update golden: %v", err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Parse(isis.db) as JSON:\ngot  %s\nwant %s", got, want)
	}
}

// TestParseIsisByHand pins the parts of the example database the rest of
// netmgr relies on, independently of the golden file.
func TestParseIsisByHand(t *testing.T) {
	db, err := Parse("isis.db", readIsis(t))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var keys []string
	for _, k := range db.Keys {
		keys = append(keys, k.Name)
	}
	if want := []string{"fpu", "mathlab", "xfpu", "sparc", "mc68020", "mips", "hpux"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys: got %v, want %v", keys, want)
	}
	if got, want := db.Keys[6].Comment, "HP-UX architecture"; got != want {
		t.Errorf("hpux comment: got %q, want %q", got, want)
	}
	if got, want := len(db.MTypes), 5; got != want {
		t.Errorf("mtypes: got %d, want %d", got, want)
	}
	sun3 := db.FindMType("sun3")
	if sun3 == nil || !reflect.DeepEqual(sun3.Keys, []string{"mc68020", "fpu"}) ||
		!reflect.DeepEqual(sun3.Attrs, map[string]float64{"mem": 8, "rating": 1}) {
		t.Errorf("sun3: got %+v, want keys [mc68020 fpu], mem 8, rating 1", sun3)
	}
	want := Queue{Name: "NEW_Q", MaxSize: 120, MaxActive: 100, MaxRunSeconds: 200 * 60, MaxMemMB: 20,
		Pos: Pos{File: "isis.db", Line: 16, Col: 1}}
	if len(db.Queues) != 1 || !reflect.DeepEqual(db.Queues[0], want) {
		t.Errorf("queues: got %+v, want [%+v]", db.Queues, want)
	}
	if want := []string{"tclark"}; !reflect.DeepEqual(db.Admins, want) {
		t.Errorf("admins: got %v, want %v", db.Admins, want)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want *Database
	}{
		{
			name: "empty file",
			src:  "",
			want: &Database{},
		},
		{
			name: "only comments and blank lines",
			src:  "/* a database\n   with nothing in it */\n\n\n",
			want: &Database{},
		},
		{
			name: "comments anywhere a blank may be",
			src:  "key /* before */ fpu /* after */ /* and more */\nmtype/**/m/**/=/**/{/**/fpu/**/,mem/**/=/**/4/**/}/**/\n",
			want: &Database{
				Keys:   []Key{{Name: "fpu", Comment: "before after and more"}},
				MTypes: []MType{{Name: "m", Keys: []string{"fpu"}, Attrs: map[string]float64{"mem": 4}}},
			},
		},
		{
			name: "a comment across lines is one blank",
			src:  "key fpu /* first line\nsecond line */\nkey xfpu\n",
			want: &Database{Keys: []Key{{Name: "fpu", Comment: "first line\nsecond line"}, {Name: "xfpu"}}},
		},
		{
			name: "continuations",
			src:  "key \\\n  fpu\nmtype m = {fpu,\\\n mem=1, \\  \r\n rating=2}\n",
			want: &Database{
				Keys:   []Key{{Name: "fpu"}},
				MTypes: []MType{{Name: "m", Keys: []string{"fpu"}, Attrs: map[string]float64{"mem": 1, "rating": 2}}},
			},
		},
		{
			name: "backslash at the end of the file",
			src:  "key fpu \\",
			want: &Database{Keys: []Key{{Name: "fpu"}}},
		},
		{
			name: "CRLF line ends",
			src:  "key fpu\r\nmtype m = {fpu}\r\n",
			want: &Database{Keys: []Key{{Name: "fpu"}}, MTypes: []MType{{Name: "m", Keys: []string{"fpu"}}}},
		},
		{
			name: "numbers",
			src:  "mtype m = {a=1, b=-2, c=+3, d=0.5, e=.25, f=7., g=1e3, h=2.5E-1}",
			want: &Database{MTypes: []MType{{Name: "m", Attrs: map[string]float64{
				"a": 1, "b": -2, "c": 3, "d": 0.5, "e": 0.25, "f": 7, "g": 1000, "h": 0.25,
			}}}},
		},
		{
			name: "empty lists",
			src:  "mtype m = {}\nmachine x = {}\nmachine y = {m, mounts={}}\nadd_q Q = { }",
			want: &Database{
				MTypes:   []MType{{Name: "m"}},
				Machines: []Machine{{Name: "x"}, {Name: "y", MType: "m"}},
				Queues:   []Queue{{Name: "Q"}},
			},
		},
		{
			name: "mounts as paths and strings, mtype mounts",
			src:  `mtype m = {mounts={/a, "/b c"}}` + "\n" + `machine x = {mounts={/d/e.f-g_h+i:j@k}, m}`,
			want: &Database{
				MTypes:   []MType{{Name: "m", Mounts: []string{"/a", "/b c"}}},
				Machines: []Machine{{Name: "x", MType: "m", Mounts: []string{"/d/e.f-g_h+i:j@k"}}},
			},
		},
		{
			name: "a key that shares an mtype's name",
			src:  "key mips\nkey sparc\nmtype mips = {mips}\nmtype sparc2 = {sparc}\nmachine a = {mips}\nmachine b = {sparc2, mips}\nmachine c = {mips, mips}\nmachine d = mips",
			want: &Database{
				Keys:   []Key{{Name: "mips"}, {Name: "sparc"}},
				MTypes: []MType{{Name: "mips", Keys: []string{"mips"}}, {Name: "sparc2", Keys: []string{"sparc"}}},
				Machines: []Machine{
					{Name: "a", MType: "mips"},
					{Name: "b", MType: "sparc2", Keys: []string{"mips"}},
					{Name: "c", MType: "mips", Keys: []string{"mips"}},
					{Name: "d", MType: "mips"},
				},
			},
		},
		{
			name: "the mtype need not come first in a machine's list",
			src:  "key fpu\nmtype m = {}\nmachine x = {fpu, mem=2, m}",
			want: &Database{
				Keys:     []Key{{Name: "fpu"}},
				MTypes:   []MType{{Name: "m"}},
				Machines: []Machine{{Name: "x", MType: "m", Keys: []string{"fpu"}, Attrs: map[string]float64{"mem": 2}}},
			},
		},
		{
			name: "queues",
			src:  "add_q Q = {priority=-3, nq_maxsize=0}\nadd_q R = {nq_maxmem=4096, nq_maxrun=+60, priority=7}",
			want: &Database{Queues: []Queue{
				{Name: "Q", Priority: -3},
				{Name: "R", Priority: 7, MaxRunSeconds: 60 * 60, MaxMemMB: 4096},
			}},
		},
		{
			name: "admins, quoted or not",
			src:  "admin_id tclark\nadmin_id \"fred@cs.cornell.edu\"\nadmin_id \"say \\\"hi\\\" \\\\\"",
			want: &Database{Admins: []string{"tclark", "fred@cs.cornell.edu", `say "hi" \`}},
		},
		{
			name: "declaration words are names elsewhere",
			src:  "key key\nkey mounts\nkey allow_root_jobs\nmtype mtype = {key, mounts}\nmachine machine = mtype\nadmin_id allow_root_jobs",
			want: &Database{
				Keys:     []Key{{Name: "key"}, {Name: "mounts"}, {Name: "allow_root_jobs"}},
				MTypes:   []MType{{Name: "mtype", Keys: []string{"key", "mounts"}}},
				Machines: []Machine{{Name: "machine", MType: "mtype"}},
				Admins:   []string{"allow_root_jobs"},
			},
		},
		{
			name: "allow_root_jobs",
			src:  "key fpu\nallow_root_jobs /* site policy */\nadmin_id tclark\n",
			want: &Database{Keys: []Key{{Name: "fpu"}}, Admins: []string{"tclark"}, AllowRootJobs: true},
		},
		{
			name: "allow_root_jobs first, at the end of the file",
			src:  "allow_root_jobs",
			want: &Database{AllowRootJobs: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("t.db", []byte(tt.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestParsePositions checks the positions declarations record: the file
// and the line and column of the declaration word.
func TestParsePositions(t *testing.T) {
	db, err := Parse("p.db", []byte("key fpu\n\n  mtype m = {fpu}\n\t/* x */ machine x = m\nadd_q \\\n Q = {}"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tests := []struct {
		name string
		got  Pos
		want Pos
	}{
		{"key", db.Keys[0].Pos, Pos{"p.db", 1, 1}},
		{"mtype", db.MTypes[0].Pos, Pos{"p.db", 3, 3}},
		{"machine", db.Machines[0].Pos, Pos{"p.db", 4, 10}},
		{"queue", db.Queues[0].Pos, Pos{"p.db", 5, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}
