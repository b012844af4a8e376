package fsm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// t0 is the fixed time every test command is stamped from.
var t0 = time.Date(2024, time.March, 1, 9, 30, 0, 0, time.UTC)

// at returns t0 plus n seconds.
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

// command is one log entry before encoding.
type command struct {
	typ  fsm.MessageType
	body any
}

// encode returns the log entry for c, failing the test on error.
func encode(tb testing.TB, c command) []byte {
	tb.Helper()
	data, err := fsm.Encode(c.typ, c.body)
	if err != nil {
		tb.Fatalf("encode %v: %v", c.typ, err)
	}
	return data
}

// applier applies commands to one FSM at consecutive Raft indexes.
type applier struct {
	tb   testing.TB
	f    *fsm.FSM
	next uint64
}

func newApplier(tb testing.TB) *applier {
	return &applier{tb: tb, f: fsm.New(), next: 1}
}

// raw applies an already encoded entry at the next index.
func (a *applier) raw(data []byte) *fsm.Result {
	a.tb.Helper()
	out := a.f.Apply(&raft.Log{Type: raft.LogCommand, Index: a.next, Data: data})
	a.next++
	res, ok := out.(*fsm.Result)
	if !ok {
		a.tb.Fatalf("Apply returned %T, want *fsm.Result", out)
	}
	return res
}

// batch applies already encoded entries at the next indexes through
// ApplyBatch, with a configuration entry in the middle (as Raft may pass)
// when config is set.
func (a *applier) batch(datas [][]byte, config bool) []*fsm.Result {
	a.tb.Helper()
	var logs []*raft.Log
	for i, data := range datas {
		if config && i == len(datas)/2 {
			logs = append(logs, &raft.Log{Type: raft.LogConfiguration, Index: a.next})
			a.next++
		}
		logs = append(logs, &raft.Log{Type: raft.LogCommand, Index: a.next, Data: data})
		a.next++
	}
	var out []*fsm.Result
	for i, r := range a.f.ApplyBatch(logs) {
		res, ok := r.(*fsm.Result)
		if !ok {
			a.tb.Fatalf("ApplyBatch returned %T, want *fsm.Result", r)
		}
		if logs[i].Type == raft.LogCommand {
			out = append(out, res)
		}
	}
	return out
}

// apply encodes and applies one command.
func (a *applier) apply(typ fsm.MessageType, body any) *fsm.Result {
	a.tb.Helper()
	return a.raw(encode(a.tb, command{typ, body}))
}

// mustOK applies a command and fails the test if it returns an error.
func (a *applier) mustOK(typ fsm.MessageType, body any) *fsm.Result {
	a.tb.Helper()
	res := a.apply(typ, body)
	if res.Err != nil {
		a.tb.Fatalf("apply %v: got error %v, want nil", typ, res.Err)
	}
	return res
}

// join commits a machine with the given arch, CPUs and keys.
func (a *applier) join(name, arch string, cpus int, keys ...string) {
	a.tb.Helper()
	a.mustOK(fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: facts(name, arch, cpus, keys...)})
}

// leave takes a machine out of the pool.
func (a *applier) leave(name, reason string) {
	a.tb.Helper()
	a.mustOK(fsm.StubLeaveType, fsm.StubLeave{At: at(50), Machine: name, Reason: reason})
}

// submit creates a job with n instances of /bin/true for every machine and
// returns its id.
func (a *applier) submit(name string, n int) uint64 {
	a.tb.Helper()
	res := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: spec(name, n)})
	return res.JobID
}

// place proposes the assignments in one Place.
func (a *applier) place(as ...fsm.Assignment) *fsm.Result {
	a.tb.Helper()
	return a.mustOK(fsm.PlaceType, fsm.Place{At: at(2), PlannedAtIndex: a.next - 1, Assignments: as})
}

// register reports CHILD_REGISTER for attempt 1 of an instance.
func (a *applier) register(job uint64, inst int, machine string, pid int) *fsm.Result {
	a.tb.Helper()
	return a.apply(fsm.ChildRegisterType, fsm.ChildRegister{At: at(3), JobID: job, Instance: inst, Attempt: 1, Machine: machine, PID: pid})
}

// term reports CHILD_TERM for attempt 1 of an instance with an exit code.
func (a *applier) term(job uint64, inst int, machine string, code int) *fsm.Result {
	a.tb.Helper()
	return a.apply(fsm.ChildTermType, fsm.ChildTerm{At: at(4), JobID: job, Instance: inst, Attempt: 1, Machine: machine, ExitCode: code})
}

// instance returns a copy of one instance, failing if it does not exist.
func (a *applier) instance(job uint64, inst int) fsm.Instance {
	a.tb.Helper()
	var out fsm.Instance
	var ok bool
	a.f.Read(func(v fsm.View) {
		var in *fsm.Instance
		if _, in, ok = v.Instance(fsm.InstanceRef{JobID: job, Instance: inst}); ok {
			out = *in
		}
	})
	if !ok {
		a.tb.Fatalf("instance %d/%d: not found", job, inst)
	}
	return out
}

// job returns a copy of one job (its instances copied too).
func (a *applier) job(id uint64) *fsm.Job {
	a.tb.Helper()
	var out fsm.Job
	var ok bool
	a.f.Read(func(v fsm.View) {
		var j *fsm.Job
		if j, ok = v.Job(id); ok {
			out = *j
			out.Instances = append([]fsm.Instance(nil), j.Instances...)
		}
	})
	if !ok {
		a.tb.Fatalf("job %d: not found", id)
	}
	return &out
}

// machine returns a copy of one machine.
func (a *applier) machine(name string) fsm.Machine {
	a.tb.Helper()
	var out fsm.Machine
	var ok bool
	a.f.Read(func(v fsm.View) {
		var m *fsm.Machine
		if m, ok = v.Machine(name); ok {
			out = *m
		}
	})
	if !ok {
		a.tb.Fatalf("machine %q: not found", name)
	}
	return out
}

// effective returns a copy of a machine's effective attributes.
func (a *applier) effective(name string) fsm.Effective {
	a.tb.Helper()
	m := a.machine(name)
	return *m.Effective()
}

// load applies a LoadDatabase, failing the test if it is refused.
func (a *applier) load(db fsm.Database) *fsm.Result {
	a.tb.Helper()
	return a.mustOK(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(5), By: "tclark", Database: db})
}

// usage returns View.JobCounts (copied) and View.UsedMemoryMB for a machine.
func (a *applier) usage(name string) (map[uint64]int, int64) {
	var counts map[uint64]int
	var mem int64
	a.f.Read(func(v fsm.View) {
		counts = maps.Clone(v.JobCounts(name))
		mem = v.UsedMemoryMB(name)
	})
	return counts, mem
}

// running returns View.Running for a machine.
func (a *applier) running(name string) int {
	var n int
	a.f.Read(func(v fsm.View) { n = v.Running(name) })
	return n
}

func facts(name, arch string, cpus int, keys ...string) fsm.MachineFacts {
	return fsm.MachineFacts{
		Name:     name,
		Arch:     arch,
		CPUs:     cpus,
		MemoryMB: 4096,
		Keys:     keys,
		Addr:     "127.0.0.1:7000",
	}
}

// spec is a job running /bin/true on any machine.
func spec(name string, n int) fsm.JobSpec {
	return fsm.JobSpec{Name: name, Binaries: map[string]string{fsm.AnyKey: "/bin/true"}, Min: n}
}

// asg assigns attempt 1 of an instance to a machine with the wildcard key.
func asg(job uint64, inst int, machine string) fsm.Assignment {
	return fsm.Assignment{JobID: job, Instance: inst, Attempt: 1, Machine: machine, Key: fsm.AnyKey}
}

// ref names an instance.
func ref(job uint64, inst int) fsm.InstanceRef { return fsm.InstanceRef{JobID: job, Instance: inst} }

// memSink is an in-memory raft.SnapshotSink.
type memSink struct {
	bytes.Buffer
	cancelled bool
	closed    bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

// snapshotBytes snapshots f and persists it into memory.
func snapshotBytes(tb testing.TB, f *fsm.FSM) []byte {
	tb.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatalf("snapshot: %v", err)
	}
	defer snap.Release()
	return persist(tb, snap)
}

// persist writes a taken snapshot into memory.
func persist(tb testing.TB, snap raft.FSMSnapshot) []byte {
	tb.Helper()
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		tb.Fatalf("persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		tb.Fatalf("persist: got closed=%v cancelled=%v, want closed and not cancelled", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

// restoreInto restores data into f.
func restoreInto(f *fsm.FSM, data []byte) error {
	return f.Restore(io.NopCloser(bytes.NewReader(data)))
}

// restored returns a fresh FSM restored from data.
func restored(tb testing.TB, data []byte) *fsm.FSM {
	tb.Helper()
	f := fsm.New()
	if err := restoreInto(f, data); err != nil {
		tb.Fatalf("restore: %v", err)
	}
	return f
}

// stateBytes is the snapshot without the applied index, so two states that
// differ only in how many commands led to them compare equal.
func stateBytes(tb testing.TB, f *fsm.FSM) []byte {
	tb.Helper()
	data := snapshotBytes(tb, f)
	header, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		tb.Fatalf("snapshot has no header line: %q", data)
	}
	var h map[string]any
	if err := json.Unmarshal(header, &h); err != nil {
		tb.Fatalf("decode snapshot header: %v", err)
	}
	delete(h, "index")
	header, err := json.Marshal(h)
	if err != nil {
		tb.Fatalf("encode snapshot header: %v", err)
	}
	return append(append(header, '\n'), rest...)
}

// assertUnchanged fails if the state differs from before (see stateBytes).
func assertUnchanged(tb testing.TB, f *fsm.FSM, before []byte) {
	tb.Helper()
	if after := stateBytes(tb, f); !bytes.Equal(after, before) {
		tb.Errorf("state changed:\nbefore: %s\nafter:  %s", before, after)
	}
}

// wantErr checks that err wraps want (nil meaning no error).
func wantErr(tb testing.TB, err, want error) {
	tb.Helper()
	switch {
	case want == nil && err != nil:
		tb.Errorf("got error %v, want nil", err)
	case want != nil && !errors.Is(err, want):
		tb.Errorf("got error %v, want %v", err, want)
	}
}
