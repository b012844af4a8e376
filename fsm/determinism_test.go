package fsm_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// genMachine is a machine the generator may join; its CPUs vary between
// joins of a machine that is down.
type genMachine struct {
	name, arch string
	keys       []string
}

var genMachines = []genMachine{
	{"m0", "x86_64", nil},
	{"m1", "x86_64", []string{"lic"}},
	{"m2", "sparc", nil},
	{"m3", "sparc", []string{"lic"}},
	{"m4", "x86_64", nil},
}

// genKeys are the binaries keys jobs use.
var genKeys = []string{fsm.AnyKey, "x86_64", "sparc", "lic"}

// generator builds a random but reproducible log by applying each command
// to a driver FSM and choosing the next from the driver's state, so that
// most commands are plausible (a Place of a queued instance, a CHILD event
// for an active attempt) and some are stale, duplicated or invalid.
type generator struct {
	r      *rand.Rand
	a      *applier
	log    [][]byte
	places [][]byte // earlier Place entries, for duplicates
	step   int
}

func newGenerator(tb testing.TB, seed uint64) *generator {
	return &generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), a: newApplier(tb)}
}

func (g *generator) emit(data []byte) *fsm.Result {
	g.log = append(g.log, data)
	return g.a.raw(data)
}

func (g *generator) cmd(typ fsm.MessageType, body any) []byte {
	return encode(g.a.tb, command{typ, body})
}

// next generates and applies one command.
func (g *generator) next() {
	g.step++
	now := at(g.step)
	p := g.r.IntN(100)
	switch {
	case p < 6:
		g.emit(g.join(now))
	case p < 10:
		names := append(machineNames(), "ghost")
		g.emit(g.cmd(fsm.StubLeaveType, fsm.StubLeave{At: now, Machine: names[g.r.IntN(len(names))], Reason: "generated"}))
	case p < 21:
		g.emit(g.submit(now))
	case p < 48:
		if len(g.places) > 0 && g.r.IntN(10) == 0 {
			g.emit(g.places[g.r.IntN(len(g.places))])
			return
		}
		data := g.place(now)
		g.places = append(g.places, data)
		g.emit(data)
	case p < 63:
		g.emit(g.child(now, false))
	case p < 83:
		g.emit(g.child(now, true))
	case p < 89:
		var n int
		g.a.f.Read(func(v fsm.View) { n = len(v.Jobs()) })
		g.emit(g.cmd(fsm.KillType, fsm.Kill{At: now, JobID: uint64(1 + g.r.IntN(n+1)), By: "gen", Signal: "TERM"}))
	case p < 91:
		g.emit(append([]byte{byte(fsm.IgnoreUnknownFlag | 100)}, `{"future":true}`...))
	default:
		// Re-apply an earlier entry other than a StubJoin: a duplicated
		// proposal. (A duplicated old StubJoin would re-report stale
		// facts; see TestStubJoinFactsWhileBusy.)
		for range 10 {
			if len(g.log) == 0 {
				break
			}
			if old := g.log[g.r.IntN(len(g.log))]; fsm.MessageType(old[0]) != fsm.StubJoinType {
				g.emit(old)
				return
			}
		}
		g.emit(g.submit(now))
	}
}

func machineNames() []string {
	names := make([]string, len(genMachines))
	for i, m := range genMachines {
		names[i] = m.name
	}
	return names
}

// join re-reports an up machine's facts unchanged, or joins a new or down
// machine with a random CPU count.
func (g *generator) join(now time.Time) []byte {
	gm := genMachines[g.r.IntN(len(genMachines))]
	f := facts(gm.name, gm.arch, 1+g.r.IntN(3), gm.keys...)
	g.a.f.Read(func(v fsm.View) {
		if m, ok := v.Machine(gm.name); ok && m.State == fsm.MachineUp {
			f = m.MachineFacts
		}
	})
	if g.r.IntN(20) == 0 {
		f.Arch = "" // invalid
	}
	return g.cmd(fsm.StubJoinType, fsm.StubJoin{At: now, Machine: f})
}

func (g *generator) submit(now time.Time) []byte {
	s := fsm.JobSpec{Binaries: map[string]string{}, Min: g.r.IntN(5)}
	for _, k := range genKeys {
		if g.r.IntN(2) == 0 {
			s.Binaries[k] = "/bin/" + k
		}
	}
	if len(s.Binaries) == 0 && g.r.IntN(4) != 0 {
		s.Binaries[fsm.AnyKey] = "/bin/any"
	}
	if g.r.IntN(4) == 0 {
		s.Name = fmt.Sprintf("name%d", g.r.IntN(5))
	}
	if g.r.IntN(20) == 0 {
		s.Env = []string{"NOEQUALS"}
	}
	c := fsm.Submit{At: now, Owner: "gen", Spec: s}
	if g.r.IntN(3) == 0 {
		c.IdempotencyKey = fmt.Sprintf("k%d", g.r.IntN(8))
	}
	return g.cmd(fsm.SubmitType, c)
}

func (g *generator) place(now time.Time) []byte {
	names := append(machineNames(), "ghost")
	var as []fsm.Assignment
	g.a.f.Read(func(v fsm.View) {
		queued := v.Queued()
		jobs := len(v.Jobs())
		for range 1 + g.r.IntN(6) {
			a := fsm.Assignment{Attempt: 1, Machine: names[g.r.IntN(len(names))]}
			if len(queued) > 0 && g.r.IntN(10) < 7 {
				ref := queued[g.r.IntN(len(queued))]
				j, _ := v.Job(ref.JobID)
				keys := make([]string, 0, len(j.Spec.Binaries))
				for k := range j.Spec.Binaries {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				a.JobID, a.Instance, a.Key = ref.JobID, ref.Instance, keys[g.r.IntN(len(keys))]
				if g.r.IntN(10) == 0 {
					a.Attempt = 2
				}
			} else {
				a.JobID = uint64(g.r.IntN(jobs + 2))
				a.Instance = g.r.IntN(5) - 1
				a.Attempt = uint64(g.r.IntN(3))
				a.Key = genKeys[g.r.IntN(len(genKeys))]
			}
			as = append(as, a)
		}
	})
	return g.cmd(fsm.PlaceType, fsm.Place{At: now, PlannedAtIndex: g.a.next - 1, Assignments: as})
}

// child builds a CHILD_REGISTER or CHILD_TERM: mostly for an active
// attempt, sometimes for a lost one, sometimes stale.
func (g *generator) child(now time.Time, term bool) []byte {
	type target struct {
		ref     fsm.InstanceRef
		attempt uint64
		machine string
	}
	var active, lost, all []target
	g.a.f.Read(func(v fsm.View) {
		for _, j := range v.Jobs() {
			for _, in := range j.Instances {
				tg := target{fsm.InstanceRef{JobID: j.ID, Instance: in.Index}, in.Attempt, in.Machine}
				all = append(all, tg)
				switch {
				case in.Active():
					active = append(active, tg)
				case in.State == fsm.InstanceLost:
					lost = append(lost, tg)
				}
			}
		}
	})
	var t target
	switch p := g.r.IntN(10); {
	case p < 7 && len(active) > 0:
		t = active[g.r.IntN(len(active))]
	case p < 8 && len(lost) > 0:
		t = lost[g.r.IntN(len(lost))]
	case len(all) > 0:
		t = all[g.r.IntN(len(all))]
		if g.r.IntN(2) == 0 {
			t.attempt++
		} else {
			t.machine = genMachines[g.r.IntN(len(genMachines))].name
		}
	default:
		t = target{fsm.InstanceRef{JobID: 1}, 1, "m0"}
	}
	if !term {
		return g.cmd(fsm.ChildRegisterType, fsm.ChildRegister{At: now, JobID: t.ref.JobID, Instance: t.ref.Instance, Attempt: t.attempt, Machine: t.machine, PID: 1000 + g.step})
	}
	c := fsm.ChildTerm{At: now, JobID: t.ref.JobID, Instance: t.ref.Instance, Attempt: t.attempt, Machine: t.machine, UserMS: int64(g.step)}
	switch g.r.IntN(6) {
	case 0:
		c.ExitCode = 1 + g.r.IntN(3)
	case 1:
		c.ExitCode, c.Signal = -1, "KILL"
	case 2:
		c.ExitCode, c.Error = -1, "exec failed"
	}
	return g.cmd(fsm.ChildTermType, c)
}

// checkInvariants verifies the derived indexes against the records: no
// machine runs more than its slots, every instance is in exactly the index
// its state calls for, and the running counts add up to the active set.
func checkInvariants(tb testing.TB, f *fsm.FSM, step int) {
	tb.Helper()
	var errs []string
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf(format, args...))
	}
	f.Read(func(v fsm.View) {
		queued := map[fsm.InstanceRef]bool{}
		for _, r := range v.Queued() {
			queued[r] = true
		}
		active := map[fsm.InstanceRef]bool{}
		perMachine := map[string]int{}
		for _, r := range v.Active() {
			active[r] = true
			if queued[r] {
				fail("%v is both queued and active", r)
			}
			if _, in, ok := v.Instance(r); ok {
				perMachine[in.Machine]++
			} else {
				fail("active %v does not exist", r)
			}
		}
		for r := range queued {
			if _, _, ok := v.Instance(r); !ok {
				fail("queued %v does not exist", r)
			}
		}
		for _, j := range v.Jobs() {
			for _, in := range j.Instances {
				r := fsm.InstanceRef{JobID: j.ID, Instance: in.Index}
				if got, want := queued[r], in.State == fsm.InstanceQueued; got != want {
					fail("%v (%s): in Queued %v, want %v", r, in.State, got, want)
				}
				if got, want := active[r], in.Active(); got != want {
					fail("%v (%s): in Active %v, want %v", r, in.State, got, want)
				}
			}
		}
		sum := 0
		for _, m := range v.Machines() {
			n := v.Running(m.Name)
			sum += n
			if n > m.Slots() {
				fail("machine %s: Running %d > Slots %d", m.Name, n, m.Slots())
			}
			if n != perMachine[m.Name] {
				fail("machine %s: Running %d, but %d active instances there", m.Name, n, perMachine[m.Name])
			}
			if m.State == fsm.MachineDown && n != 0 {
				fail("machine %s is down with Running %d", m.Name, n)
			}
		}
		if sum != len(active) {
			fail("sum of Running %d, want %d active instances", sum, len(active))
		}
	})
	for _, e := range errs {
		tb.Errorf("step %d: %s", step, e)
	}
	if len(errs) > 0 {
		tb.FailNow()
	}
}

func TestPropertyIndexesAndSlots(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 42, 1992} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			g := newGenerator(t, seed)
			for step := range 600 {
				g.next()
				checkInvariants(t, g.a.f, step)
			}
			// The invariants hold after a restore too.
			checkInvariants(t, restored(t, snapshotBytes(t, g.a.f)), -1)
		})
	}
}

// TestGeneratedLogCoverage guards the generator: the log it builds must
// reach every command and outcome the determinism test relies on.
func TestGeneratedLogCoverage(t *testing.T) {
	g := newGenerator(t, 7)
	seen := map[string]int{}
	for range 2000 {
		g.next()
	}
	replay := newApplier(t)
	for _, data := range g.log {
		typ := fsm.MessageType(data[0])
		res := replay.raw(data)
		seen[typ.String()]++
		switch {
		case res.Err != nil:
			seen[typ.String()+" error"]++
		case res.Stale:
			seen["stale"]++
		case res.Existing:
			seen["existing"]++
		case typ == fsm.PlaceType && len(res.Accepted) > 0:
			seen["accepted"]++
		case typ == fsm.PlaceType && res.Dropped > 0:
			seen["dropped"]++
		}
		replay.f.Read(func(v fsm.View) {
			for _, j := range v.Jobs() {
				for _, in := range j.Instances {
					seen[in.State]++
				}
			}
		})
	}
	for _, want := range []string{
		"StubJoin", "StubJoin error", "StubLeave", "Submit", "Submit error", "Place", "ChildRegister",
		"ChildTerm", "Kill", "Kill error", "MessageType(228)", "stale", "existing", "accepted", "dropped",
		fsm.InstanceQueued, fsm.InstancePlaced, fsm.InstanceRunning, fsm.InstanceExited, fsm.InstanceFailed, fsm.InstanceSignaled,
		fsm.InstanceKilled, fsm.InstanceLost,
	} {
		if seen[want] == 0 {
			t.Errorf("generated log never produced %q", want)
		}
	}
}

func TestDeterminism(t *testing.T) {
	const steps = 3000
	g := newGenerator(t, 7)
	for range steps {
		g.next()
	}
	want := snapshotBytes(t, g.a.f)

	replay := func(log [][]byte) (*applier, []string) {
		a := newApplier(t)
		var results []string
		for _, data := range log {
			res := a.raw(data)
			// Error texts are for the proposer's user and may differ;
			// everything else must not.
			results = append(results, fmt.Sprintf("%d %d %v %v %d %v %d %d %v",
				res.Index, res.JobID, res.Existing, res.Accepted, res.Dropped, res.Stale, res.Signaled, res.Dequeued, res.Err != nil))
		}
		return a, results
	}
	a, resA := replay(g.log)
	b, resB := replay(g.log)
	if got := snapshotBytes(t, a.f); !bytes.Equal(got, want) {
		t.Errorf("replica A differs from the driver")
	}
	if got := snapshotBytes(t, b.f); !bytes.Equal(got, want) {
		t.Errorf("replica B differs from the driver")
	}
	if !slices.Equal(resA, resB) {
		for i := range resA {
			if resA[i] != resB[i] {
				t.Errorf("entry %d: results differ: %s vs %s", i+1, resA[i], resB[i])
				break
			}
		}
	}

	for _, cut := range []int{1, steps / 3, steps / 2, steps - 1} {
		t.Run(fmt.Sprintf("restore after %d", cut), func(t *testing.T) {
			c, _ := replay(g.log[:cut])
			d := &applier{tb: t, f: restored(t, snapshotBytes(t, c.f)), next: c.next}
			for _, data := range g.log[cut:] {
				d.raw(data)
			}
			if got := snapshotBytes(t, d.f); !bytes.Equal(got, want) {
				t.Errorf("replica restored at %d differs from the driver", cut)
			}
		})
	}
}
