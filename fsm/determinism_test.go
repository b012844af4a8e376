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

// genMTypes are the machine types of genDatabases, which stubs may also
// claim in their init files ("cray" is declared nowhere).
var genMTypes = []string{"small", "big", "cray"}

// genDatabases are the databases the generator loads, in any order: each
// declares a different set of machines (those it leaves out of the
// previous one drain), changes slots and memory under running work, and the
// last is invalid.
var genDatabases = []fsm.Database{
	{
		Keys: []fsm.DeclaredKey{{Name: "lic"}},
		MTypes: []fsm.DeclaredMType{
			{Name: "small", Attrs: map[string]float64{"nprocs": 1, "mem": 1000}},
			{Name: "big", Keys: []string{"lic"}, Attrs: map[string]float64{"nprocs": 3, "mem": 4000, "rating": 2}},
		},
		Machines: []fsm.DeclaredMachine{
			{Name: "m0", MType: "small"}, {Name: "m1", MType: "big"}, {Name: "m2", Keys: []string{"lic"}},
			{Name: "m3", MType: "big", Attrs: map[string]float64{"mem": 1500}},
		},
		Queues: []fsm.DeclaredQueue{{Name: "qa", MaxSize: 4, MaxActive: 2, Prime: &fsm.DeclaredPrime{
			Windows: []string{"Mon-Fri 08:00-18:00"}, Priority: ptr(3), MaxActive: ptr[int64](1), MaxSize: ptr[int64](6)}}},
		Admins: []string{"gen"},
	},
	{
		MTypes: []fsm.DeclaredMType{
			{Name: "small", Attrs: map[string]float64{"nprocs": 1, "mem": 800}},
			{Name: "big", Attrs: map[string]float64{"nprocs": 4, "mem": 8000}},
		},
		Machines: []fsm.DeclaredMachine{
			{Name: "m1", MType: "small"}, {Name: "m4", MType: "big", Attrs: map[string]float64{"nprocs": 2}},
			{Name: "m3", Attrs: map[string]float64{"mem": 600}},
		},
		Queues:          []fsm.DeclaredQueue{{Name: "q", MaxActive: 3}},
		Accounts:        []fsm.DeclaredAccount{{Name: "ops", Share: 3, Users: []string{"gen"}}},
		HalfLifeSeconds: 600,
	},
	{},
	{Machines: []fsm.DeclaredMachine{{Name: "m0"}, {Name: "m0"}}},
}

// generator builds a random but reproducible log by applying each command
// to a driver FSM and choosing the next from the driver's state, so that
// most commands are plausible (a Place of a queued instance, a CHILD event
// for an active attempt) and some are stale, duplicated or invalid.
type generator struct {
	r      *rand.Rand
	tok    *rand.Rand // for the token commands, apart so r draws as before
	gang   *rand.Rand // for gang jobs and their plans, apart likewise
	a      *applier
	log    [][]byte
	places [][]byte // earlier Place entries, for duplicates
	step   int
	// placed is the result of the last command if it was a Place, else
	// nil; placedAt is that Place's time.
	placed   *fsm.Result
	placedAt time.Time
}

func newGenerator(tb testing.TB, seed uint64) *generator {
	return &generator{
		r:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		tok:  rand.New(rand.NewPCG(seed, seed^0x746f6b656e)),
		gang: rand.New(rand.NewPCG(seed, seed^0x67616e67)),
		a:    newApplier(tb),
	}
}

func (g *generator) emit(data []byte) *fsm.Result {
	g.log = append(g.log, data)
	res := g.a.raw(data)
	if fsm.MessageType(data[0]) == fsm.PlaceType {
		g.placed, g.placedAt = res, placeTime(g.a.tb, data)
	}
	return res
}

func (g *generator) cmd(typ fsm.MessageType, body any) []byte {
	return encode(g.a.tb, command{typ, body})
}

// next generates and applies one command.
func (g *generator) next() {
	g.step++
	g.placed = nil
	now := at(g.step)
	if g.step == 1 {
		// Fair share on from the start, so every end is charged and
		// every replica must agree on the usage (in the snapshot).
		g.emit(g.cmd(fsm.FairShareStartType, fsm.FairShareStart{At: now}))
	}
	if g.step%7 == 0 {
		g.emit(g.tokenCommand(now))
	}
	if g.step%11 == 0 {
		names := append(machineNames(), "ghost")
		reasons := []string{"", "console login", "load 3.2 > 2"}
		// Chosen from the step, not g.r, so the rest of the log is the
		// one the coverage test expects.
		n := g.step / 11
		g.emit(g.cmd(fsm.MachineAsleepType, fsm.MachineAsleep{At: now, Machine: names[n%len(names)], Reason: reasons[n%len(reasons)]}))
	}
	if g.step > 2000 && g.step%13 == 0 { // late, so the log before is the one the coverage test expects
		g.emit(g.cronCommand(now))
	}
	if g.step > 2000 && g.step%31 == 0 { // late, as the cron commands
		g.emit(g.expireCommand(now))
	}
	if g.step > 2000 && g.step%17 == 0 { // late, as the cron commands
		// Prime-time switches of qa, at or before the last one
		// sometimes (Stale), to either state.
		sched := at(g.step - g.step%34)
		g.emit(g.cmd(fsm.PrimeTimeSwitchType, fsm.PrimeTimeSwitch{At: now, Queue: "qa", Open: g.step%51 != 0, Scheduled: sched}))
	}
	if g.step > 2000 && g.step%5 == 0 { // late, as the cron commands
		if data := g.gangPlace(now); data != nil {
			g.emit(data)
		}
	}
	p := g.r.IntN(120)
	switch {
	case p >= 100:
		g.emit(g.queueCommand(now))
	case p < 6:
		g.emit(g.join(now))
	case p < 10:
		names := append(machineNames(), "ghost")
		g.emit(g.cmd(fsm.StubLeaveType, fsm.StubLeave{At: now, Machine: names[g.r.IntN(len(names))], Reason: "generated"}))
	case p < 17 && g.step%4 == 0:
		g.emit(g.submits(now))
	case p < 17:
		g.emit(g.submit(now))
	case p < 21:
		g.emit(g.submitPlace(now))
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
	case p < 77:
		g.emit(g.child(now, true))
	case p < 83:
		g.emit(g.childEvents(now))
	case p < 89:
		var n int
		g.a.f.Read(func(v fsm.View) { n = len(v.Jobs()) })
		g.emit(g.cmd(fsm.KillType, fsm.Kill{At: now, JobID: uint64(1 + g.r.IntN(n+1)), By: "gen", Signal: "TERM"}))
	case p < 91:
		g.emit(append([]byte{byte(fsm.IgnoreUnknownFlag | 100)}, `{"future":true}`...))
	case p < 94:
		db := genDatabases[g.r.IntN(len(genDatabases))]
		// A load may not drop a queue that holds unfinished jobs; an
		// administrator would keep its add_q, so the generator does too
		// (most of the time: a refused load is covered as well).
		if g.r.IntN(8) != 0 {
			db.Queues = slices.Clone(db.Queues)
			g.a.f.Read(func(v fsm.View) {
				for _, q := range v.Queues() {
					if q.Jobs > 0 && q.Name != fsm.DefaultQueue && !slices.ContainsFunc(db.Queues, func(d fsm.DeclaredQueue) bool { return d.Name == q.Name }) {
						db.Queues = append(db.Queues, q.Declared)
					}
				}
			})
		}
		g.emit(g.cmd(fsm.LoadDatabaseType, fsm.LoadDatabase{At: now, By: "gen", Database: db}))
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

// join mostly re-reports an up machine's facts unchanged, or joins a new
// or down machine with random CPUs, memory and init-file claims (an mtype,
// nprocs, mem). Sometimes an up machine reports new facts, which may leave
// it with fewer slots or less memory than its running work holds.
func (g *generator) join(now time.Time) []byte {
	gm := genMachines[g.r.IntN(len(genMachines))]
	f := facts(gm.name, gm.arch, 1+g.r.IntN(3), gm.keys...)
	f.MemoryMB = []int64{1000, 2000, 4096}[g.r.IntN(3)]
	if g.r.IntN(4) == 0 {
		f.MType = genMTypes[g.r.IntN(len(genMTypes))]
	}
	if g.r.IntN(4) == 0 {
		f.Attrs = map[string]float64{"nprocs": float64(1 + g.r.IntN(3))}
		if g.r.IntN(2) == 0 {
			f.Attrs["mem"] = float64(500 * (1 + g.r.IntN(4)))
		}
	}
	fresh := g.r.IntN(10) == 0
	g.a.f.Read(func(v fsm.View) {
		if m, ok := v.Machine(gm.name); ok && m.State == fsm.MachineUp && !fresh {
			f = m.MachineFacts
		}
	})
	if g.r.IntN(20) == 0 {
		f.Arch = "" // invalid
	}
	return g.cmd(fsm.StubJoinType, fsm.StubJoin{At: now, Machine: f})
}

func (g *generator) submit(now time.Time) []byte {
	return g.cmd(fsm.SubmitType, g.submitBody(now))
}

// submits is a Submits batch of the job submit would generate, followed,
// when it has an idempotency key, by a copy of it (found as the same
// job). It draws from the random source exactly as submit does and leaves
// the same database, so the log around it is the one submit would give.
func (g *generator) submits(now time.Time) []byte {
	body := g.submitBody(now)
	c := fsm.Submits{Submits: []fsm.Submit{body}}
	if body.IdempotencyKey != "" {
		c.Submits = append(c.Submits, body)
	}
	return g.cmd(fsm.SubmitsType, c)
}

// submitPlace is a SubmitPlace of a generated job with some of its
// instances assigned to random machines and keys (the FSM re-checks them
// all, as a leader's plan may be overtaken by the entries before it).
func (g *generator) submitPlace(now time.Time) []byte {
	c := fsm.SubmitPlace{Submit: g.submitBody(now)}
	g.a.f.Read(func(v fsm.View) { c.PlannedAtIndex = v.Index() })
	for i := range max(c.Submit.Spec.Min, 1) {
		if g.r.IntN(3) == 0 {
			continue
		}
		c.Assignments = append(c.Assignments, fsm.Assignment{
			Instance: i, Attempt: 1,
			Machine: genMachines[g.r.IntN(len(genMachines))].name,
			Key:     genKeys[g.r.IntN(len(genKeys))],
		})
	}
	return g.cmd(fsm.SubmitPlaceType, c)
}

// gangPlace is a Place of every queued instance of one gang job, each
// on a random machine, or nil when no gang job waits whole: the plans a
// leader makes for a gang, which the FSM applies all or none.
func (g *generator) gangPlace(now time.Time) []byte {
	var c fsm.Place
	g.a.f.Read(func(v fsm.View) {
		c.PlannedAtIndex = v.Index()
		for _, j := range v.Jobs() {
			if !j.Spec.Gang || j.State() != fsm.JobQueued || g.gang.IntN(2) == 0 {
				continue
			}
			for _, in := range j.Instances {
				key := fsm.AnyKey
				for k := range j.Spec.Binaries {
					if k < key || key == fsm.AnyKey {
						key = k
					}
				}
				c.Assignments = append(c.Assignments, fsm.Assignment{
					JobID: j.ID, Instance: in.Index, Attempt: in.Attempt,
					Machine: genMachines[g.gang.IntN(len(genMachines))].name, Key: key,
				})
			}
			return
		}
	})
	if len(c.Assignments) == 0 {
		return nil
	}
	c.At = now
	return g.cmd(fsm.PlaceType, c)
}

func (g *generator) submitBody(now time.Time) fsm.Submit {
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
	switch g.r.IntN(6) {
	case 0:
		s.Unique = true
	case 1:
		s.MaxPerMachine = 1 + g.r.IntN(2)
	}
	if g.r.IntN(3) == 0 {
		s.MemoryMB = []int64{300, 700, 1500}[g.r.IntN(3)]
	}
	if g.r.IntN(3) == 0 {
		s.Restart = []string{fsm.RestartNo, fsm.RestartOnFailure, fsm.RestartAlways}[g.r.IntN(3)]
		s.MaxRestarts = g.r.IntN(3)
	}
	s.Queue = genQueues[g.r.IntN(len(genQueues))]
	c := fsm.Submit{At: now, Owner: genOwners[g.r.IntN(len(genOwners))], Spec: s}
	if g.r.IntN(3) == 0 {
		c.IdempotencyKey = fmt.Sprintf("k%d", g.r.IntN(8))
	}
	// Gangs only late, from their own source, so the log before is the
	// one the coverage test expects.
	c.Spec.Gang = g.step > 2000 && g.gang.IntN(4) == 0
	return c
}

func (g *generator) place(now time.Time) []byte {
	names := append(machineNames(), "ghost")
	var as []fsm.Assignment
	g.a.f.Read(func(v fsm.View) {
		queued := v.Queued()
		jobs := len(v.Jobs())
		for range 1 + g.r.IntN(6) {
			a := fsm.Assignment{Attempt: 1, Machine: names[g.r.IntN(len(names))]}
			// Often another instance of the previous assignment's job
			// on its machine, to meet per-machine limits and memory.
			var prev *fsm.Assignment
			if len(as) > 0 && g.r.IntN(10) < 4 {
				prev = &as[len(as)-1]
				a.Machine = prev.Machine
			}
			if len(queued) > 0 && g.r.IntN(10) < 7 {
				ref := queued[g.r.IntN(len(queued))]
				if prev != nil {
					if same := slices.DeleteFunc(slices.Clone(queued), func(r fsm.InstanceRef) bool { return r.JobID != prev.JobID }); len(same) > 0 {
						ref = same[g.r.IntN(len(same))]
					}
				}
				j, in, _ := v.Instance(ref)
				keys := make([]string, 0, len(j.Spec.Binaries))
				for k := range j.Spec.Binaries {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				a.JobID, a.Instance, a.Key, a.Attempt = ref.JobID, ref.Instance, keys[g.r.IntN(len(keys))], in.Attempt
				if g.r.IntN(10) == 0 {
					a.Attempt++
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
// childEvents is a ChildEvents batch of one to six CHILD events, each
// drawn as child draws a single one (so a batch may register and end the
// same attempt, or repeat an event).
func (g *generator) childEvents(now time.Time) []byte {
	var c fsm.ChildEvents
	for range 1 + g.r.IntN(6) {
		reg, term := g.childEvent(now, g.r.IntN(2) == 0)
		c.Events = append(c.Events, fsm.ChildEvent{Register: reg, Term: term})
	}
	return g.cmd(fsm.ChildEventsType, c)
}

func (g *generator) child(now time.Time, term bool) []byte {
	reg, t := g.childEvent(now, term)
	if reg != nil {
		return g.cmd(fsm.ChildRegisterType, *reg)
	}
	return g.cmd(fsm.ChildTermType, *t)
}

// childEvent draws one CHILD_REGISTER or, when term is set, CHILD_TERM,
// mostly for an active attempt, sometimes for a lost or stale one.
func (g *generator) childEvent(now time.Time, term bool) (*fsm.ChildRegister, *fsm.ChildTerm) {
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
		return &fsm.ChildRegister{At: now, JobID: t.ref.JobID, Instance: t.ref.Instance, Attempt: t.attempt, Machine: t.machine, PID: 1000 + g.step}, nil
	}
	c := fsm.ChildTerm{At: now, JobID: t.ref.JobID, Instance: t.ref.Instance, Attempt: t.attempt, Machine: t.machine, UserMS: int64(g.step)}
	switch g.r.IntN(7) {
	case 0:
		c.ExitCode = 1 + g.r.IntN(3)
	case 1:
		c.ExitCode, c.Signal = -1, "KILL"
	case 2:
		c.ExitCode, c.Error = -1, "exec failed"
	case 3:
		c.ExitCode, c.Signal, c.Reason = -1, "KILL", "run limit of 1m0s exceeded"
	}
	return nil, &c
}

// checkInvariants verifies the derived indexes against the records: every
// instance is in exactly the index its state calls for, the running counts
// add up to the active set, and JobCounts and UsedMemoryMB equal a recount
// of the active instances but those lent to a preemptor. (Running may exceed Slots, and UsedMemoryMB the
// machine's memory, after a LoadDatabase or StubJoin lowered them under
// running work; checkPlaced checks that no Place makes that worse.)
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
		restartableOn := map[string]int{}
		perJob := map[string]map[uint64]int{}
		memory := map[string]int64{}
		lent := 0
		for _, r := range v.Active() {
			active[r] = true
			if queued[r] {
				fail("%v is both queued and active", r)
			}
			j, in, ok := v.Instance(r)
			if !ok {
				fail("active %v does not exist", r)
				continue
			}
			if in.Lent() {
				lent++ // suspended for a preemptor: its machine counts it not
				continue
			}
			perMachine[in.Machine]++
			if j.Spec.Restartable() && in.State != fsm.InstanceUnknown {
				restartableOn[in.Machine]++
			}
			if perJob[in.Machine] == nil {
				perJob[in.Machine] = map[uint64]int{}
			}
			perJob[in.Machine][j.ID]++
			memory[in.Machine] += j.Spec.MemoryMB
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
			if got, want := v.JobCounts(m.Name), perJob[m.Name]; !mapsEqual(got, want) {
				fail("machine %s: JobCounts %v, recount %v", m.Name, got, want)
			}
			if got, want := v.UsedMemoryMB(m.Name), memory[m.Name]; got != want {
				fail("machine %s: UsedMemoryMB %d, recount %d", m.Name, got, want)
			}
			if e := m.Effective(); !slices.Contains(e.Keys, m.Arch) || !slices.IsSorted(e.Keys) || e.Slots < 1 || e.Rating <= 0 {
				fail("machine %s: effective %+v lacks its arch, is unsorted, or has no slot or rating", m.Name, *e)
			}
			if n != perMachine[m.Name] {
				fail("machine %s: Running %d, but %d active instances there", m.Name, n, perMachine[m.Name])
			}
			// A down machine keeps only attempts of restartable jobs, which
			// wait for its lease to expire before they run elsewhere.
			if m.State == fsm.MachineDown && n != restartableOn[m.Name] {
				fail("machine %s is down with Running %d, %d of them restartable", m.Name, n, restartableOn[m.Name])
			}
		}
		if sum != len(active)-lent {
			fail("sum of Running %d, want %d active instances (%d lent)", sum, len(active)-lent, lent)
		}
		if got := v.JobCounts("ghost"); len(got) != 0 || v.UsedMemoryMB("ghost") != 0 || v.Running("ghost") != 0 {
			fail("unknown machine has JobCounts %v UsedMemoryMB %d Running %d", got, v.UsedMemoryMB("ghost"), v.Running("ghost"))
		}
	})
	for _, e := range errs {
		tb.Errorf("step %d: %s", step, e)
	}
	if len(errs) > 0 {
		tb.FailNow()
	}
}

// checkPlaced verifies that a Place made no machine it placed on worse:
// each accepted assignment's machine takes work and has the key, and after
// the Place it runs no more than its slots, holds no more of the job than
// the job's per-machine limit, and, when the job asks memory, has no more
// memory claimed than it has. Running work a LoadDatabase or StubJoin
// left over a lowered bound only makes the Place drop more.
func checkPlaced(tb testing.TB, f *fsm.FSM, res *fsm.Result, step int) {
	tb.Helper()
	var errs []string
	f.Read(func(v fsm.View) {
		for _, a := range res.Accepted {
			m, ok := v.Machine(a.Machine)
			j, _ := v.Job(a.JobID)
			if !ok || j == nil {
				errs = append(errs, fmt.Sprintf("accepted %+v names no machine or job", a))
				continue
			}
			if m.State != fsm.MachineUp || m.Draining || !m.HasKey(a.Key) {
				errs = append(errs, fmt.Sprintf("accepted %+v on a machine that is %s, draining %v, has key %v", a, m.State, m.Draining, m.HasKey(a.Key)))
			}
			if n := v.Running(m.Name); n > m.Slots() {
				errs = append(errs, fmt.Sprintf("accepted %+v: Running %d > Slots %d", a, n, m.Slots()))
			}
			if limit := j.Spec.PerMachineLimit(); limit > 0 && v.JobCounts(m.Name)[j.ID] > limit {
				errs = append(errs, fmt.Sprintf("accepted %+v: job holds %d there, limit %d", a, v.JobCounts(m.Name)[j.ID], limit))
			}
			if j.Spec.MemoryMB > 0 && v.UsedMemoryMB(m.Name) > m.Effective().MemoryMB {
				errs = append(errs, fmt.Sprintf("accepted %+v: UsedMemoryMB %d > %d", a, v.UsedMemoryMB(m.Name), m.Effective().MemoryMB))
			}
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
			t.Parallel()
			g := newGenerator(t, seed)
			for step := range 600 {
				g.next()
				checkInvariants(t, g.a.f, step)
				checkQueuesAndReservations(t, g.a.f, step)
				checkRoundTrip(t, g.a.f, step)
				if g.placed != nil {
					checkPlaced(t, g.a.f, g.placed, step)
					checkPlacedLimits(t, g.a.f, g.placed, g.placedAt, step)
				}
			}
			// The invariants hold after a restore too, and the restored
			// replica derives the same effective attributes and counts.
			b := restored(t, snapshotBytes(t, g.a.f))
			checkInvariants(t, b, -1)
			checkQueuesAndReservations(t, b, -1)
			if got, want := readIndexes(b), readIndexes(g.a.f); !got.equal(want) {
				t.Errorf("indexes after restore:\ngot  %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestGeneratedLogCoverage guards the generator: the log it builds must
// reach every command and outcome the determinism test relies on.
func TestGeneratedLogCoverage(t *testing.T) {
	g := newGenerator(t, 12)
	seen := map[string]int{}
	for range 3000 {
		g.next()
	}
	replay := newApplier(t)
	for _, data := range g.log {
		typ := fsm.MessageType(data[0])
		res := replay.raw(data)
		seen[typ.String()]++
		countQueueOutcomes(seen, typ, res)
		switch {
		case res.Err != nil:
			seen[typ.String()+" error"]++
		case len(res.Draining) > 0:
			seen["draining"]++
		case res.Stale:
			seen["stale"]++
		case slices.ContainsFunc(res.Events, func(r *fsm.Result) bool { return r.Stale }):
			seen["stale in a batch"]++
		case res.Existing:
			seen["existing"]++
		case slices.ContainsFunc(res.Events, func(r *fsm.Result) bool { return r.Existing }):
			seen["existing in a batch"]++
		case typ == fsm.JobsExpireType && res.Affected > 0:
			seen["jobs expired"]++
		case typ == fsm.PlaceType && len(res.Accepted) > 0:
			seen["accepted"]++
		case typ == fsm.SubmitPlaceType && len(res.Accepted) > 0:
			seen["placed at submit"]++
		case typ == fsm.PlaceType && res.Dropped > 0:
			seen["dropped"]++
		}
		replay.f.Read(func(v fsm.View) {
			for _, j := range v.Jobs() {
				for _, in := range j.Instances {
					seen[in.State]++
					if in.Restarts > 0 {
						seen["restarted"]++
					}
				}
			}
			for _, m := range v.Machines() {
				counts := v.JobCounts(m.Name)
				for _, j := range v.Jobs() {
					if l := j.Spec.PerMachineLimit(); l > 0 && counts[j.ID] == l {
						seen["per-machine limit reached"]++
					}
				}
				if v.Running(m.Name) > 0 && v.Running(m.Name) == m.Slots() {
					seen["slots full"]++
				}
				if mem := v.UsedMemoryMB(m.Name); mem > 0 && mem+300 > m.Effective().MemoryMB {
					seen["memory nearly full"]++
				}
			}
			countQueueStates(seen, v)
		})
	}
	for _, want := range []string{
		"StubJoin", "StubJoin error", "StubLeave", "Submit", "Submit error", "Place", "ChildRegister",
		"ChildTerm", "ChildEvents", "stale in a batch", "SubmitPlace", "placed at submit", "Submits", "existing in a batch", "Kill", "Kill error", "MessageType(228)", "stale", "existing", "accepted", "dropped",
		"LoadDatabase", "LoadDatabase error", "draining", "TokenIssue", "TokenIssue error", "TokenRevoke", "TokenRevoke error", "ServerRemoved", "SessionEvent", "SubmitCron", "CronFire", "CronFire error", "JobsExpire", "jobs expired", "restarted", "per-machine limit reached", "slots full", "memory nearly full",
		fsm.InstanceQueued, fsm.InstancePlaced, fsm.InstanceRunning, fsm.InstanceExited, fsm.InstanceFailed, fsm.InstanceSignaled,
		fsm.InstanceKilled, fsm.InstanceLost,
	} {
		if seen[want] == 0 {
			t.Errorf("generated log never produced %q", want)
		}
	}
	for _, want := range queueOutcomes {
		if seen[want] == 0 {
			t.Errorf("generated log never produced %q", want)
		}
	}
}

func TestDeterminism(t *testing.T) {
	const steps = 3000
	g := newGenerator(t, 12)
	for range steps {
		g.next()
	}
	want := snapshotBytes(t, g.a.f)
	if !bytes.Contains(want, []byte(`"fair_share":{"start_index":1,"latest":`)) {
		t.Fatalf("the generated log charged no usage: the replicas' agreement on it would prove nothing")
	}

	// describe is what a replica's result must agree on. Error texts are
	// for the proposer's user and may differ; everything else must not.
	var describe func(res *fsm.Result) string
	describe = func(res *fsm.Result) string {
		out := fmt.Sprintf("%d %d %v %v %d %v %d %d %v %d %v %d %v",
			res.Index, res.JobID, res.Existing, res.Accepted, res.Dropped, res.Stale, res.Signaled, res.Dequeued, res.Draining,
			res.ReservationID, res.Ended, res.Affected, res.Err != nil)
		for _, ev := range res.Events {
			out += " [" + describe(ev) + "]"
		}
		return out
	}
	replay := func(log [][]byte) (*applier, []string) {
		a := newApplier(t)
		var results []string
		for _, data := range log {
			results = append(results, describe(a.raw(data)))
		}
		return a, results
	}
	a, resA := replay(g.log)
	// Replica B gets the log as Raft hands a busy replica it: in batches
	// of varying size through ApplyBatch.
	b := newApplier(t)
	var resB []string
	for i, n := 0, 1; i < len(g.log); i, n = i+n, n%17+1 {
		for _, res := range b.batch(g.log[i:min(i+n, len(g.log))], false) {
			resB = append(resB, describe(res))
		}
	}
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
			if got, want := readIndexes(d.f), readIndexes(g.a.f); !got.equal(want) {
				t.Errorf("replica restored at %d derives other indexes:\ngot  %+v\nwant %+v", cut, got, want)
			}
		})
	}
}

// cronCommand submits a cron job, fires one (on time, or late with missed
// times, or again for a time already decided), or kills one with or
// without its runs. Chosen from the step, not g.r, so the rest of the log
// stays the one the coverage test expects.
func (g *generator) cronCommand(now time.Time) []byte {
	n := g.step / 13
	var crons []uint64
	g.a.f.Read(func(v fsm.View) {
		for _, j := range v.Jobs() {
			if j.IsCron() {
				crons = append(crons, j.ID)
			}
		}
	})
	if n%6 == 0 || len(crons) == 0 {
		overlap := []string{"", fsm.OverlapAllow}[n%2]
		catchup := []string{"", fsm.CatchupNone}[n/2%2]
		s := withCron(fsm.JobSpec{Name: "cron", Binaries: map[string]string{fsm.AnyKey: "/bin/true"}}, "@every 1s", catchup, overlap)
		return g.cmd(fsm.SubmitCronType, fsm.Submit{At: now, Owner: "gen", Spec: s})
	}
	id := crons[n%len(crons)]
	switch n % 6 {
	case 1, 2:
		return g.cmd(fsm.CronFireType, fsm.CronFire{At: now, JobID: id, Scheduled: now})
	case 3:
		return g.cmd(fsm.CronFireType, fsm.CronFire{At: now, JobID: id, Scheduled: now.Add(-time.Second), Missed: []time.Time{now.Add(-3 * time.Second), now.Add(-2 * time.Second)}, MissedMore: n % 3, Skip: n%2 == 0})
	case 4:
		if n%12 == 10 {
			id = 1 // not a cron job
		}
		return g.cmd(fsm.CronFireType, fsm.CronFire{At: now, JobID: id, Scheduled: now.Add(-20 * time.Second)})
	}
	return g.cmd(fsm.KillType, fsm.Kill{At: now, JobID: id, By: "gen", Runs: n%2 == 1})
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
