package fsm_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// ownerDatabase declares n machines m0..m(n-1), every third of mtype
// "desk" (whose owner settings the even ones override), and the mtype
// "lab", which no declared machine uses.
func ownerDatabase(n int) fsm.Database {
	db := fsm.Database{MTypes: []fsm.DeclaredMType{
		{Name: "desk", Owner: map[string]string{"suspend_on_input": "1m", "max_load": "0.5"}},
		{Name: "lab", Owner: map[string]string{"max_load": "2"}},
	}}
	for i := range n {
		m := fsm.DeclaredMachine{Name: fmt.Sprintf("m%d", i)}
		if i%3 == 0 {
			m.MType = "desk"
		}
		if i%2 == 0 {
			m.Owner = map[string]string{"max_load": fmt.Sprint(i)}
		}
		db.Machines = append(db.Machines, m)
	}
	return db
}

// TestOwnerSettingsIndexed checks that View.OwnerSettings, which finds
// declarations through the database's index by name, agrees with
// Database.OwnerSettings, which scans them, for declared machines, a
// machine declared only by the mtype its init file claims and one the
// database ignores; after a reload that drops declarations; and on a
// replica restored from a snapshot, which rebuilds the index.
func TestOwnerSettingsIndexed(t *testing.T) {
	a := newApplier(t)
	names := []string{"m0", "m1", "m2", "m3", "m7", "m12", "stray", "labby"}
	for _, n := range names {
		a.join(n, "x86_64", 1)
	}
	lab := facts("labby", "x86_64", 1)
	lab.MType = "lab"
	a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(1), Machine: lab})
	check := func(f *fsm.FSM, when string) {
		t.Helper()
		f.Read(func(v fsm.View) {
			db, _ := v.Database()
			for _, n := range names {
				m, ok := v.Machine(n)
				if !ok {
					t.Fatalf("%s: machine %s missing", when, n)
				}
				gotS, gotD := v.OwnerSettings(m)
				wantS, wantD := db.OwnerSettings(&m.MachineFacts)
				if !reflect.DeepEqual(gotS, wantS) || gotD != wantD {
					t.Errorf("%s: OwnerSettings(%s) = %v, %v; the scan gives %v, %v", when, n, gotS, gotD, wantS, wantD)
				}
			}
		})
	}
	a.load(ownerDatabase(20))
	check(a.f, "after the load")
	a.f.Read(func(v fsm.View) {
		m, _ := v.Machine("m12")
		if s, declared := v.OwnerSettings(m); !declared || s["max_load"] != "12" || s["suspend_on_input"] != "1m" {
			t.Errorf("OwnerSettings(m12) = %v, %v; want declared, max_load 12 over desk's suspend_on_input 1m", s, declared)
		}
		m, _ = v.Machine("labby")
		if s, declared := v.OwnerSettings(m); declared || s["max_load"] != "2" {
			t.Errorf("OwnerSettings(labby) = %v, %v; want lab's max_load 2, not declared", s, declared)
		}
	})
	check(restored(t, snapshotBytes(t, a.f)), "after a restore")
	a.load(ownerDatabase(2))
	check(a.f, "after a reload declaring fewer")
	a.f.Read(func(v fsm.View) {
		m, _ := v.Machine("m3")
		if s, declared := v.OwnerSettings(m); declared || s != nil {
			t.Errorf("OwnerSettings(m3) after its declaration left = %v, %v; want nil, not declared", s, declared)
		}
	})
}
