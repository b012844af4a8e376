package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// paperDatabase is a small database in the paper's spirit: two machine
// types, bongo declared of one type with overrides, flute declared by type
// only, viola declared without a type, a queue and an admin.
func paperDatabase() fsm.Database {
	return fsm.Database{
		Keys: []fsm.DeclaredKey{{Name: "lic", Comment: "licensed compiler"}, {Name: "gpu"}, {Name: "fortran"}},
		MTypes: []fsm.DeclaredMType{
			{Name: "sparc1", Keys: []string{"lic"}, Attrs: map[string]float64{"mem": 16, "rating": 2, "nprocs": 1}, Mounts: []string{"/usr/sparc"}},
			{Name: "mips", Keys: []string{"fortran"}, Attrs: map[string]float64{"mem": 32, "rating": 5}, Mounts: []string{"/usr/mips"}},
		},
		Machines: []fsm.DeclaredMachine{
			{Name: "bongo", MType: "sparc1", Keys: []string{"gpu"}, Attrs: map[string]float64{"mem": 32}, Mounts: []string{"/data"}},
			{Name: "flute", MType: "mips"},
			{Name: "viola", Keys: []string{"gpu"}, Attrs: map[string]float64{"nprocs": 8}},
		},
		Queues: []fsm.DeclaredQueue{{Name: "NEW_Q", Priority: 1, MaxActive: 2}},
		Admins: []string{"tclark"},
	}
}

// declaring returns a database declaring the named machines (no type).
func declaring(names ...string) fsm.Database {
	var db fsm.Database
	for _, n := range names {
		db.Machines = append(db.Machines, fsm.DeclaredMachine{Name: n})
	}
	return db
}

func TestLoadDatabaseAccepted(t *testing.T) {
	a := newApplier(t)
	a.join("bongo", "sparc", 1)
	want := paperDatabase()
	res := a.mustOK(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(5), Source: "isis.db", By: "tclark", Database: want})
	if len(res.Draining) != 0 {
		t.Errorf("got Draining %v, want none", res.Draining)
	}
	var got fsm.Database
	var index uint64
	a.f.Read(func(v fsm.View) {
		db, i := v.Database()
		got, index = *db, i
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got database %+v, want %+v", got, want)
	}
	if index != res.Index {
		t.Errorf("got database index %d, want %d", index, res.Index)
	}
	if !got.IsAdmin("tclark") || got.IsAdmin("fred") {
		t.Errorf("got IsAdmin(tclark) %v IsAdmin(fred) %v, want true and false", got.IsAdmin("tclark"), got.IsAdmin("fred"))
	}
	if q, ok := got.Queue("NEW_Q"); !ok || q.MaxActive != 2 {
		t.Errorf("got Queue(NEW_Q) %+v %v, want max_active 2", q, ok)
	}
	if _, ok := got.Queue("OLD_Q"); ok {
		t.Errorf("got Queue(OLD_Q) found, want not")
	}
	if m := a.machine("bongo"); m.ModifyIndex != res.Index || m.Draining {
		t.Errorf("got bongo ModifyIndex %d Draining %v, want %d and false", m.ModifyIndex, m.Draining, res.Index)
	}

	// The database survives a snapshot, and the restored machines are
	// matched by it.
	b := restored(t, snapshotBytes(t, a.f))
	var gotB fsm.Database
	var indexB uint64
	var effB fsm.Effective
	b.Read(func(v fsm.View) {
		db, i := v.Database()
		gotB, indexB = *db, i
		m, _ := v.Machine("bongo")
		effB = *m.Effective()
	})
	if !reflect.DeepEqual(gotB, want) || indexB != index {
		t.Errorf("after restore: got database %+v at %d, want %+v at %d", gotB, indexB, want, index)
	}
	if effA := a.effective("bongo"); !reflect.DeepEqual(effB, effA) {
		t.Errorf("after restore: got bongo effective %+v, want %+v", effB, effA)
	}
}

func TestLoadDatabaseRejected(t *testing.T) {
	tests := []struct {
		name string
		edit func(db *fsm.Database)
	}{
		{"duplicate key", func(db *fsm.Database) { db.Keys = append(db.Keys, fsm.DeclaredKey{Name: "lic"}) }},
		{"empty key", func(db *fsm.Database) { db.Keys = append(db.Keys, fsm.DeclaredKey{}) }},
		{"duplicate mtype", func(db *fsm.Database) { db.MTypes = append(db.MTypes, fsm.DeclaredMType{Name: "mips"}) }},
		{"empty mtype", func(db *fsm.Database) { db.MTypes = append(db.MTypes, fsm.DeclaredMType{}) }},
		{"duplicate machine", func(db *fsm.Database) { db.Machines = append(db.Machines, fsm.DeclaredMachine{Name: "flute"}) }},
		{"empty machine", func(db *fsm.Database) { db.Machines = append(db.Machines, fsm.DeclaredMachine{}) }},
		{"unknown mtype", func(db *fsm.Database) { db.Machines[1].MType = "vax" }},
		{"duplicate queue", func(db *fsm.Database) { db.Queues = append(db.Queues, fsm.DeclaredQueue{Name: "NEW_Q"}) }},
		{"empty queue", func(db *fsm.Database) { db.Queues = append(db.Queues, fsm.DeclaredQueue{}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A state with a database loaded, declared and undeclared
			// machines up, one drained, and work running.
			a := newApplier(t)
			a.join("bongo", "sparc", 2)
			a.join("flute", "mips", 2)
			a.join("viola", "x86_64", 2)
			a.join("piano", "x86_64", 2)
			a.load(paperDatabase())
			a.load(func() fsm.Database { db := paperDatabase(); db.Machines = db.Machines[:2]; return db }())
			id := a.submit("j", 2)
			a.place(asg(id, 0, "bongo"))
			before := stateBytes(t, a.f)
			var effBefore []fsm.Effective
			for _, n := range []string{"bongo", "flute", "viola", "piano"} {
				effBefore = append(effBefore, a.effective(n))
			}

			// Accepted, it would undrain viola.
			db := paperDatabase()
			tc.edit(&db)
			res := a.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(9), Database: db})
			wantErr(t, res.Err, fsm.ErrInvalidDatabase)
			if len(res.Draining) != 0 {
				t.Errorf("got Draining %v, want none", res.Draining)
			}
			assertUnchanged(t, a.f, before)
			for i, n := range []string{"bongo", "flute", "viola", "piano"} {
				if got := a.effective(n); !reflect.DeepEqual(got, effBefore[i]) {
					t.Errorf("%s: got effective %+v, want unchanged %+v", n, got, effBefore[i])
				}
			}
		})
	}

	t.Run("one name in different kinds", func(t *testing.T) {
		a := newApplier(t)
		db := fsm.Database{
			Keys:     []fsm.DeclaredKey{{Name: "sun"}},
			MTypes:   []fsm.DeclaredMType{{Name: "sun"}},
			Machines: []fsm.DeclaredMachine{{Name: "sun", MType: "sun"}},
			Queues:   []fsm.DeclaredQueue{{Name: "sun"}},
		}
		res := a.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(9), Database: db})
		wantErr(t, res.Err, nil)
	})

	t.Run("empty database", func(t *testing.T) {
		a := newApplier(t)
		res := a.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(9)})
		wantErr(t, res.Err, nil)
		a.f.Read(func(v fsm.View) {
			if _, index := v.Database(); index != res.Index {
				t.Errorf("got database index %d, want %d", index, res.Index)
			}
		})
	})
}

func TestLoadDatabaseDraining(t *testing.T) {
	a := newApplier(t)
	for _, n := range []string{"m1", "m2", "m3", "m4"} {
		a.join(n, "x86_64", 2)
	}
	a.leave("m4", "powered off")
	id := a.submit("j", 6)
	a.place(asg(id, 0, "m1"))
	a.register(id, 0, "m1", 100)

	draining := func() []string {
		var out []string
		a.f.Read(func(v fsm.View) {
			for _, m := range v.Machines() {
				if m.Draining {
					out = append(out, m.Name)
				}
			}
		})
		return out
	}
	steps := []struct {
		name string
		db   fsm.Database
		// wantResult is Result.Draining: machines newly drained.
		wantResult []string
		// wantDraining is every draining machine afterwards.
		wantDraining []string
	}{
		{"first load declares m1, m2, m4", declaring("m1", "m2", "m4"), nil, nil},
		{"m1 and the down m4 leave the file", declaring("m2"), []string{"m1", "m4"}, []string{"m1", "m4"}},
		{"the same again drains nothing new", declaring("m2"), nil, []string{"m1", "m4"}},
		{"m1 declared again, m2 leaves", declaring("m1"), []string{"m2"}, []string{"m2", "m4"}},
		{"an undeclared machine declared for the first time", declaring("m1", "m3"), nil, []string{"m2", "m4"}},
		{"everything declared", declaring("m1", "m2", "m3", "m4"), nil, nil},
		{"nothing declared", fsm.Database{}, []string{"m1", "m2", "m3", "m4"}, []string{"m1", "m2", "m3", "m4"}},
	}
	for _, st := range steps {
		res := a.load(st.db)
		if !slices.Equal(res.Draining, st.wantResult) {
			t.Errorf("%s: got Result.Draining %v, want %v", st.name, res.Draining, st.wantResult)
		}
		if got := draining(); !slices.Equal(got, st.wantDraining) {
			t.Errorf("%s: got draining machines %v, want %v", st.name, got, st.wantDraining)
		}
		for _, n := range res.Draining {
			if m := a.machine(n); m.ModifyIndex != res.Index {
				t.Errorf("%s: drained %s has ModifyIndex %d, want %d", st.name, n, m.ModifyIndex, res.Index)
			}
		}
	}

	// Drained m1 keeps its running instance; it ends normally.
	if in := a.instance(id, 0); in.State != fsm.InstanceRunning || in.Machine != "m1" {
		t.Errorf("instance on drained m1: got state %q machine %q, want running on m1", in.State, in.Machine)
	}
	if got := a.running("m1"); got != 1 {
		t.Errorf("got Running(m1) %d, want 1", got)
	}
	if res := a.place(asg(id, 1, "m1")); len(res.Accepted) != 0 {
		t.Errorf("place on drained m1: got Accepted %v, want none", res.Accepted)
	}
	if res := a.term(id, 0, "m1", 0); res.Err != nil || res.Stale {
		t.Errorf("term on drained m1: got Err %v Stale %v, want nil and false", res.Err, res.Stale)
	}
	if got := a.instance(id, 0).State; got != fsm.InstanceExited {
		t.Errorf("got state %q, want %q", got, fsm.InstanceExited)
	}

	// A drained machine stays drained across leave and rejoin: its
	// declaration is still missing.
	a.leave("m1", "reboot")
	a.join("m1", "x86_64", 2)
	if m := a.machine("m1"); !m.Draining || m.Accepts() {
		t.Errorf("rejoined m1: got Draining %v Accepts %v, want true and false", m.Draining, m.Accepts())
	}
	// Declared again: it takes work.
	if res := a.load(declaring("m1")); len(res.Draining) != 0 {
		t.Errorf("got Result.Draining %v, want none", res.Draining)
	}
	if m := a.machine("m1"); m.Draining || !m.Accepts() {
		t.Errorf("redeclared m1: got Draining %v Accepts %v, want false and true", m.Draining, m.Accepts())
	}
	if res := a.place(asg(id, 1, "m1")); len(res.Accepted) != 1 {
		t.Errorf("place on redeclared m1: got Accepted %v, want one", res.Accepted)
	}
}

// TestLoadDatabaseRecomputesEffective checks that a load changes what
// machines already in the pool are matched by, without touching the work
// they run, and that dropping the declaration returns them to their own
// facts.
func TestLoadDatabaseRecomputesEffective(t *testing.T) {
	a := newApplier(t)
	a.join("bongo", "sparc", 4)
	a.join("piano", "x86_64", 2)
	id := a.submit("j", 4)
	a.place(asg(id, 0, "bongo"), asg(id, 1, "bongo"))
	detected := a.effective("bongo")
	if detected.Slots != 4 || detected.MemoryMB != 4096 || detected.Declared {
		t.Fatalf("before load: got %+v, want 4 slots, 4096 MB, not declared", detected)
	}

	a.load(paperDatabase())
	e := a.effective("bongo")
	if e.MType != "sparc1" || e.Slots != 1 || e.MemoryMB != 32 || e.Rating != 2 || !e.Declared {
		t.Errorf("after load: got %+v, want sparc1, 1 slot, 32 MB, rating 2, declared", e)
	}
	m := a.machine("bongo")
	if !m.HasKey("lic") || !m.HasKey("gpu") || !m.HasKey("sparc") || m.HasKey("fortran") {
		t.Errorf("after load: got keys %v, want lic, gpu and sparc, not fortran", e.Keys)
	}
	if got := a.running("bongo"); got != 2 {
		t.Errorf("after load: got Running %d, want 2 (running work is left alone)", got)
	}
	if res := a.place(asg(id, 2, "bongo")); len(res.Accepted) != 0 {
		t.Errorf("after load: bongo has 1 slot and runs 2: got Accepted %v, want none", res.Accepted)
	}
	if got := a.effective("piano"); !reflect.DeepEqual(got, func() fsm.Effective { b := newApplier(t); b.join("piano", "x86_64", 2); return b.effective("piano") }()) {
		t.Errorf("undeclared piano: got %+v, want its detected facts", got)
	}

	res := a.load(fsm.Database{})
	if want := []string{"bongo"}; !slices.Equal(res.Draining, want) {
		t.Errorf("got Draining %v, want %v", res.Draining, want)
	}
	if got := a.effective("bongo"); !reflect.DeepEqual(got, detected) {
		t.Errorf("after dropping the declaration: got %+v, want detected %+v", got, detected)
	}
}

func TestEffectivePrecedence(t *testing.T) {
	with := func(f fsm.MachineFacts, edit func(*fsm.MachineFacts)) fsm.MachineFacts {
		edit(&f)
		return f
	}
	// Each row: what a stub reports (4096 MB detected) and what the
	// machine is matched by under paperDatabase.
	tests := []struct {
		name  string
		facts fsm.MachineFacts
		want  fsm.Effective
	}{
		{"detected only", facts("plain", "x86_64", 4), fsm.Effective{
			Keys: []string{"x86_64"}, Attrs: map[string]float64{"mem": 4096, "nprocs": 4, "rating": 1},
			Slots: 4, Rating: 1, MemoryMB: 4096,
		}},
		{"detected with no CPUs has one slot", facts("plain", "x86_64", 0), fsm.Effective{
			Keys: []string{"x86_64"}, Attrs: map[string]float64{"mem": 4096, "nprocs": 1, "rating": 1},
			Slots: 1, Rating: 1, MemoryMB: 4096,
		}},
		{"init keys and mounts add to the architecture", with(facts("plain", "x86_64", 2), func(f *fsm.MachineFacts) {
			f.Keys, f.Mounts = []string{"lic", "x86_64"}, []string{"/home", "/data", "/home"}
		}), fsm.Effective{
			Keys: []string{"lic", "x86_64"}, Attrs: map[string]float64{"mem": 4096, "nprocs": 2, "rating": 1},
			Mounts: []string{"/data", "/home"}, Slots: 2, Rating: 1, MemoryMB: 4096,
		}},
		{"init mtype claim gives that mtype's keys, attrs and mounts", with(facts("plain", "sparc", 4), func(f *fsm.MachineFacts) { f.MType = "sparc1" }), fsm.Effective{
			MType: "sparc1", Keys: []string{"lic", "sparc"}, Attrs: map[string]float64{"mem": 16, "nprocs": 1, "rating": 2},
			Mounts: []string{"/usr/sparc"}, Slots: 1, Rating: 2, MemoryMB: 16,
		}},
		{"init attrs override the claimed mtype's", with(facts("plain", "sparc", 4), func(f *fsm.MachineFacts) {
			f.MType, f.Attrs = "sparc1", map[string]float64{"mem": 64, "nprocs": 3, "speed": 7}
		}), fsm.Effective{
			MType: "sparc1", Keys: []string{"lic", "sparc"}, Attrs: map[string]float64{"mem": 64, "nprocs": 3, "rating": 2, "speed": 7},
			Mounts: []string{"/usr/sparc"}, Slots: 3, Rating: 2, MemoryMB: 64,
		}},
		{"init attrs override detection", with(facts("plain", "x86_64", 8), func(f *fsm.MachineFacts) {
			f.Attrs = map[string]float64{"mem": 100, "nprocs": 2, "rating": 4}
		}), fsm.Effective{
			Keys: []string{"x86_64"}, Attrs: map[string]float64{"mem": 100, "nprocs": 2, "rating": 4},
			Slots: 2, Rating: 4, MemoryMB: 100,
		}},
		{"init claim of an undeclared mtype adds nothing", with(facts("plain", "x86_64", 2), func(f *fsm.MachineFacts) { f.MType = "cray" }), fsm.Effective{
			MType: "cray", Keys: []string{"x86_64"}, Attrs: map[string]float64{"mem": 4096, "nprocs": 2, "rating": 1},
			Slots: 2, Rating: 1, MemoryMB: 4096,
		}},
		{"declaration by mtype only", facts("flute", "mips", 2), fsm.Effective{
			MType: "mips", Keys: []string{"fortran", "mips"}, Attrs: map[string]float64{"mem": 32, "nprocs": 2, "rating": 5},
			Mounts: []string{"/usr/mips"}, Slots: 2, Rating: 5, MemoryMB: 32, Declared: true,
		}},
		{"declaration overrides init, its mtype wins over the init's claim", with(facts("bongo", "sparc", 8), func(f *fsm.MachineFacts) {
			f.MType, f.Attrs = "mips", map[string]float64{"mem": 64, "rating": 9, "speed": 7}
			f.Keys, f.Mounts = []string{"own"}, []string{"/home"}
		}), fsm.Effective{
			// Not mips's key fortran nor its mount; sparc1's nprocs=1
			// lends the 8-CPU machine with one slot; bongo's mem=32
			// beats both sparc1's 16 and the init file's 64.
			MType: "sparc1", Keys: []string{"gpu", "lic", "own", "sparc"}, Attrs: map[string]float64{"mem": 32, "nprocs": 1, "rating": 2, "speed": 7},
			Mounts: []string{"/data", "/home", "/usr/sparc"}, Slots: 1, Rating: 2, MemoryMB: 32, Declared: true,
		}},
		{"declaration without an mtype keeps the init's claim", with(facts("viola", "mips", 2), func(f *fsm.MachineFacts) {
			f.MType, f.Attrs = "mips", map[string]float64{"rating": 6, "nprocs": 1}
		}), fsm.Effective{
			MType: "mips", Keys: []string{"fortran", "gpu", "mips"}, Attrs: map[string]float64{"mem": 32, "nprocs": 8, "rating": 6},
			Mounts: []string{"/usr/mips"}, Slots: 8, Rating: 6, MemoryMB: 32, Declared: true,
		}},
		{"keys and mounts from every source union without duplicates", with(facts("bongo", "sparc", 1), func(f *fsm.MachineFacts) {
			f.Keys, f.Mounts = []string{"gpu", "lic", "sparc"}, []string{"/usr/sparc", "/data"}
		}), fsm.Effective{
			MType: "sparc1", Keys: []string{"gpu", "lic", "sparc"}, Attrs: map[string]float64{"mem": 32, "nprocs": 1, "rating": 2},
			Mounts: []string{"/data", "/usr/sparc"}, Slots: 1, Rating: 2, MemoryMB: 32, Declared: true,
		}},
		{"zero rating means the default 1", with(facts("plain", "x86_64", 1), func(f *fsm.MachineFacts) { f.Attrs = map[string]float64{"rating": 0} }), fsm.Effective{
			Keys: []string{"x86_64"}, Attrs: map[string]float64{"mem": 4096, "nprocs": 1, "rating": 0},
			Slots: 1, Rating: 1, MemoryMB: 4096,
		}},
		{"negative rating means the default 1", with(facts("plain", "x86_64", 1), func(f *fsm.MachineFacts) { f.Attrs = map[string]float64{"rating": -3} }), fsm.Effective{
			Keys: []string{"x86_64"}, Attrs: map[string]float64{"mem": 4096, "nprocs": 1, "rating": -3},
			Slots: 1, Rating: 1, MemoryMB: 4096,
		}},
		{"zero nprocs still gives one slot", with(facts("plain", "x86_64", 4), func(f *fsm.MachineFacts) { f.Attrs = map[string]float64{"nprocs": 0} }), fsm.Effective{
			Keys: []string{"x86_64"}, Attrs: map[string]float64{"mem": 4096, "nprocs": 0, "rating": 1},
			Slots: 1, Rating: 1, MemoryMB: 4096,
		}},
	}
	for _, tc := range tests {
		// The same effective attributes whether the stub joined before
		// or after the database was loaded.
		for _, order := range []string{"load then join", "join then load"} {
			t.Run(tc.name+"/"+order, func(t *testing.T) {
				a := newApplier(t)
				join := func() { a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(1), Machine: tc.facts}) }
				if order == "load then join" {
					a.load(paperDatabase())
					join()
				} else {
					join()
					a.load(paperDatabase())
				}
				if diff := diffEffective(a.effective(tc.facts.Name), tc.want); diff != "" {
					t.Error(diff)
				}
				m := a.machine(tc.facts.Name)
				if got := m.Slots(); got != tc.want.Slots {
					t.Errorf("got Slots() %d, want %d", got, tc.want.Slots)
				}
				for _, k := range tc.want.Keys {
					if !m.HasKey(k) {
						t.Errorf("got HasKey(%q) false, want true", k)
					}
				}
				if m.HasKey("no-such-key") {
					t.Errorf("got HasKey(no-such-key) true, want false")
				}
				// Restore recomputes the same.
				b := &applier{tb: t, f: restored(t, snapshotBytes(t, a.f))}
				if diff := diffEffective(b.effective(tc.facts.Name), tc.want); diff != "" {
					t.Errorf("after restore: %s", diff)
				}
			})
		}
	}
}

// diffEffective describes how got differs from want ("" when equal),
// treating nil and empty lists alike.
func diffEffective(got, want fsm.Effective) string {
	if got.MType == want.MType && slices.Equal(got.Keys, want.Keys) && maps.Equal(got.Attrs, want.Attrs) &&
		slices.Equal(got.Mounts, want.Mounts) && got.Slots == want.Slots && got.Rating == want.Rating &&
		got.MemoryMB == want.MemoryMB && got.Declared == want.Declared {
		return ""
	}
	return fmt.Sprintf("got effective %+v, want %+v", got, want)
}

// TestEffectiveHugeAttributes: a numeric attribute beyond the range of
// int (nprocs=1e20, mem=1e30 in a database or init file) must be refused
// or turned into the same slots and memory on every replica. Go's
// float-to-int conversion of an out-of-range value is implementation
// specific (amd64 gives math.MinInt64, arm64 saturates), so converting it
// as is lets replicas on different architectures disagree about Place.
func TestEffectiveHugeAttributes(t *testing.T) {
	attrs := map[string]float64{"nprocs": 1e20, "mem": 1e30}
	check := func(t *testing.T, a *applier, res *fsm.Result) {
		t.Helper()
		if res.Err != nil {
			if !errors.Is(res.Err, fsm.ErrInvalidDatabase) && !errors.Is(res.Err, fsm.ErrInvalidMachine) {
				t.Errorf("got error %v, want ErrInvalidDatabase or ErrInvalidMachine", res.Err)
			}
			return
		}
		e := a.effective("big")
		if e.Slots != 1<<20 || e.MemoryMB != 1<<40 {
			t.Errorf("got Slots %d MemoryMB %d from nprocs=1e20 mem=1e30, want the documented bounds %d and %d", e.Slots, e.MemoryMB, 1<<20, int64(1)<<40)
		}
	}
	t.Run("database", func(t *testing.T) {
		a := newApplier(t)
		a.join("big", "x86_64", 4)
		db := fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "big", Attrs: attrs}}}
		check(t, a, a.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(5), Database: db}))
	})
	t.Run("init file", func(t *testing.T) {
		a := newApplier(t)
		f := facts("big", "x86_64", 4)
		f.Attrs = attrs
		check(t, a, a.apply(fsm.StubJoinType, fsm.StubJoin{At: at(5), Machine: f}))
	})
}

// TestLoadDatabaseAllowRootJobs: AllowRootJobs is off until a database
// sets it, survives a snapshot and a queue change, is absent from the
// snapshot of a database that does not set it (so older snapshots read as
// off), and a load without it turns it off again.
func TestLoadDatabaseAllowRootJobs(t *testing.T) {
	a := newApplier(t)
	allows := func(f *fsm.FSM) (on bool) {
		f.Read(func(v fsm.View) { db, _ := v.Database(); on = db.AllowRootJobs })
		return on
	}
	if allows(a.f) {
		t.Fatalf("a new FSM allows root jobs; want off by default")
	}
	db := paperDatabase()
	db.AllowRootJobs = true
	a.load(db)
	a.mustOK(fsm.SetQueueType, fsm.SetQueue{At: at(6), By: "tclark", Queue: fsm.DeclaredQueue{Name: "LATE_Q", MaxActive: 1}})
	if !allows(a.f) {
		t.Fatalf("after loading allow_root_jobs and setting a queue: root jobs refused, want allowed")
	}
	if !allows(restored(t, snapshotBytes(t, a.f))) {
		t.Errorf("after snapshot and restore: root jobs refused, want allowed")
	}
	a.load(paperDatabase())
	if allows(a.f) {
		t.Errorf("after loading a database without allow_root_jobs: root jobs allowed, want refused")
	}
	if snap := snapshotBytes(t, a.f); bytes.Contains(snap, []byte("allow_root_jobs")) {
		t.Errorf("snapshot of a database without it names allow_root_jobs:\n%s", snap)
	}
}

// TestOwnerSettingsPrecedence checks the owner-policy settings the
// database gives a machine: a declared machine's over its mtype's; an
// undeclared one gets the mtype its init file claims, marked undeclared so
// the stub lets the init file win over it.
func TestOwnerSettingsPrecedence(t *testing.T) {
	db := fsm.Database{
		MTypes: []fsm.DeclaredMType{{Name: "desk", Owner: map[string]string{"sleep_on_input": "15", "vacate_after": "10"}}},
		Machines: []fsm.DeclaredMachine{
			{Name: "flute", MType: "desk", Owner: map[string]string{"sleep_on_input": "90s"}},
			{Name: "viola"},
		},
	}
	tests := []struct {
		facts        fsm.MachineFacts
		want         map[string]string
		wantDeclared bool
	}{
		{fsm.MachineFacts{Name: "flute"}, map[string]string{"sleep_on_input": "90s", "vacate_after": "10"}, true},
		{fsm.MachineFacts{Name: "flute", MType: "other"}, map[string]string{"sleep_on_input": "90s", "vacate_after": "10"}, true},
		{fsm.MachineFacts{Name: "viola", MType: "desk"}, nil, true},
		{fsm.MachineFacts{Name: "oboe", MType: "desk"}, map[string]string{"sleep_on_input": "15", "vacate_after": "10"}, false},
		{fsm.MachineFacts{Name: "oboe"}, nil, false},
	}
	for _, tt := range tests {
		got, declared := db.OwnerSettings(&tt.facts)
		if !maps.Equal(got, tt.want) || declared != tt.wantDeclared {
			t.Errorf("OwnerSettings(%+v) = %v, %v; want %v, %v", tt.facts, got, declared, tt.want, tt.wantDeclared)
		}
	}
	got, _ := db.OwnerSettings(&fsm.MachineFacts{Name: "flute"})
	got["sleep_on_input"] = "1"
	if db.Machines[0].Owner["sleep_on_input"] != "90s" {
		t.Errorf("changing the returned settings changed the database")
	}
}
