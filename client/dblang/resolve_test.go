package dblang

import (
	"reflect"
	"testing"
)

func TestResolve(t *testing.T) {
	db, err := Parse("isis.db", readIsis(t))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tests := []struct {
		machine string
		want    Resolved
	}{
		{"flute", Resolved{
			MType: "sparc1+",
			Keys:  []string{"sparc"},
			Attrs: map[string]float64{"mem": 16, "rating": 8},
		}},
		{"viola", Resolved{
			MType:  "mips",
			Keys:   []string{"fpu", "mathlab", "mips", "xfpu"},
			Attrs:  map[string]float64{"mem": 16, "rating": 16},
			Mounts: []string{"/usr/fsys/fs1", "/usr/fsys/fs2"},
		}},
		{"bongo", Resolved{
			MType:  "sparc1+",
			Keys:   []string{"sparc"},
			Attrs:  map[string]float64{"mem": 32, "rating": 8},
			Mounts: []string{"/usr/fsys/fs1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.machine, func(t *testing.T) {
			got, ok := db.Resolve(tt.machine)
			if !ok {
				t.Fatalf("Resolve(%q): not found", tt.machine)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resolve(%q): got %+v, want %+v", tt.machine, got, tt.want)
			}
		})
	}
	t.Run("unknown machine", func(t *testing.T) {
		if got, ok := db.Resolve("tuba"); ok {
			t.Errorf("Resolve(tuba): got %+v, true, want false", got)
		}
	})
	t.Run("does not change the database", func(t *testing.T) {
		r, _ := db.Resolve("bongo")
		r.Attrs["rating"] = 99
		r.Keys[0] = "changed"
		if got := db.FindMType("sparc1+"); got.Attrs["rating"] != 8 || got.Keys[0] != "sparc" {
			t.Errorf("mtype sparc1+ after changing a Resolved: got %+v, want it unchanged", got)
		}
	})
}

func TestResolveMerges(t *testing.T) {
	db, err := Parse("t.db", []byte(`key a
key b
key c
mtype m = {a, b, x=1, y=2, mounts={/m, /shared}}
machine own = {c, b, m, y=3, z=4, mounts={/shared, /own}}
machine bare = {c, x=5}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tests := []struct {
		machine string
		want    Resolved
	}{
		{"own", Resolved{
			MType:  "m",
			Keys:   []string{"a", "b", "c"},
			Attrs:  map[string]float64{"x": 1, "y": 3, "z": 4},
			Mounts: []string{"/m", "/own", "/shared"},
		}},
		{"bare", Resolved{
			Keys:  []string{"c"},
			Attrs: map[string]float64{"x": 5},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.machine, func(t *testing.T) {
			got, ok := db.Resolve(tt.machine)
			if !ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resolve(%q): got %+v, %v, want %+v, true", tt.machine, got, ok, tt.want)
			}
		})
	}
}

func TestResolveMType(t *testing.T) {
	db, err := Parse("isis.db", readIsis(t))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tests := []struct {
		mtype  string
		want   Resolved
		wantOK bool
	}{
		{"sparc2", Resolved{
			MType: "sparc2",
			Keys:  []string{"fpu", "sparc", "xfpu"},
			Attrs: map[string]float64{"mem": 16, "rating": 16},
		}, true},
		{"sun3", Resolved{
			MType: "sun3",
			Keys:  []string{"fpu", "mc68020"},
			Attrs: map[string]float64{"mem": 8, "rating": 1},
		}, true},
		{"vax", Resolved{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.mtype, func(t *testing.T) {
			got, ok := db.ResolveMType(tt.mtype)
			if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ResolveMType(%q): got %+v, %v, want %+v, %v", tt.mtype, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
