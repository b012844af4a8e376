package server

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// Parity tests of translate.go's translators: every field crosses, or is
// listed with the reason it does not (parity_internal_test.go).

// The spec's field names that differ between the wire and the log.
var specRenamed = map[string]string{
	"MailType":   "MailTypes",
	"TimeLimitS": "TimeLimitSeconds",
	"WarnLeadS":  "WarnLeadSeconds",
}

// reverse swaps a rename map's keys and values.
func reverse(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

func TestSpecFromWireParity(t *testing.T) {
	src := fillNew[client.JobSpec](new(filler))
	checkParity(t, src, specFromWire(src), crossing{
		renamed: specRenamed,
		dropped: map[string]string{
			"After":      "names or ids of other jobs: resolveDependencies resolves them into ids",
			"AfterOK":    "as After",
			"AfterNotOK": "as After",
			"Priority":   "only the site policy's admit sets it (admitSite); validateSpec refuses one on the wire",
		},
		derived: map[string]string{
			"After":      "resolveDependencies sets the resolved ids",
			"AfterOK":    "as After",
			"AfterNotOK": "as After",
			"Priority":   "admitSite sets it from the site policy's admit, or leaves it 0",
		},
	})
}

func TestSpecToWireParity(t *testing.T) {
	src := fillNew[fsm.JobSpec](new(filler))
	dst := specToWire(src)
	checkParity(t, src, dst, crossing{
		renamed: reverse(specRenamed),
		dropped: map[string]string{
			"After":      "ids, rendered as the decimal strings a spec may name them by (checked below)",
			"AfterOK":    "as After",
			"AfterNotOK": "as After",
		},
		derived: map[string]string{
			"After":      "src.After rendered by idsToWire",
			"AfterOK":    "src.AfterOK rendered by idsToWire",
			"AfterNotOK": "src.AfterNotOK rendered by idsToWire",
		},
	})
	for _, ids := range []struct {
		name string
		got  []string
		want []uint64
	}{{"After", dst.After, src.After}, {"AfterOK", dst.AfterOK, src.AfterOK}, {"AfterNotOK", dst.AfterNotOK, src.AfterNotOK}} {
		if want := idsToWire(ids.want); len(ids.got) != len(want) || len(want) != 2 || ids.got[0] != want[0] || ids.got[1] != want[1] {
			t.Errorf("%s = %q, want %q", ids.name, ids.got, want)
		}
	}
}

func TestJobToWireParity(t *testing.T) {
	f := new(filler)
	src := fillNew[fsm.Job](f)
	// The instances' binary keys name binaries of the spec, as placement
	// makes them.
	keys := []string{}
	for k := range src.Spec.Binaries {
		keys = append(keys, k)
	}
	for i := range src.Instances {
		src.Instances[i].Key = keys[i%len(keys)]
	}
	var dst client.Job
	fsm.New().Read(func(v fsm.View) {
		dst = jobToWire(v, &src)
		addHistory(&dst, &src)
	})
	renamed := map[string]string{"ModifyIndex": "Index"}
	for from, to := range reverse(specRenamed) {
		renamed["Spec."+from] = "Spec." + to
	}
	checkParity(t, src, dst, crossing{
		renamed: renamed,
		dropped: map[string]string{
			"Spec.After":      "as in TestSpecToWireParity",
			"Spec.AfterOK":    "as After",
			"Spec.AfterNotOK": "as After",
			"Queue":           "shown on each instance (Instances[].Queue, checked below)",
			"IdempotencyKey":  "the submit's key for the leader to recognise a retried submit; not the user's to see",
			"KillRequested":   "the kill shows in the instances: their KillRequested, and their states once they end",
			"KilledBy":        "for the mail; the job-killed event names who",
			"KillSignal":      "for the dispatcher, which signals the active instances; the job-killed event names it",
			"CreateIndex":     "the log's bookkeeping; Index is the last change",
			"Cron.Missed":     "counted in Skipped too, which the wire shows",

			"Instances[].Key":              "a key of Spec.Binaries; the wire shows the binary it names (Instances[].Binary, checked below)",
			"Instances[].RestartRequested": "for the dispatcher: the attempt is signalled and restarted at its end",
			"Instances[].SuspendIndex":     "for the dispatcher: SIGSTOP owed; the state says suspended",
			"Instances[].ResumeIndex":      "as SuspendIndex, for SIGCONT",
			"Instances[].PreemptedBy":      "the instance-preempted event and the attempt's history (preempted by job N) say who preempted it",
			"Instances[].Preempt":          "for the dispatcher and the planner; the state says suspended, the events say why",
			"Instances[].StaleEvents":      "a count of fenced CHILD events, for tests and debugging",
			"Instances[].ModifyIndex":      "the log's bookkeeping; the job's Index is its last change",
			"Instances[].History[].Key":    "a key of Spec.Binaries; the history shows where the attempt ran (Machine)",
			"Instances[].Checkpoint.Index": "the log's bookkeeping; At says when it was committed",
		},
		derived: map[string]string{
			"Spec.After":         "as in TestSpecToWireParity",
			"Spec.AfterOK":       "as After",
			"Spec.AfterNotOK":    "as After",
			"State":              "j.State(), from the instances' states",
			"Dependencies":       "how each dependency of Spec stands, read from the database (dependenciesToWire)",
			"Instances[].Queue":  "the job's Queue",
			"Instances[].Binary": "the binary the instance's Key names",
			"Cron.Schedule":      "Spec.Cron",
			"Cron.Catchup":       "Spec.CatchupPolicy(), Spec.Catchup with its default",
			"Cron.Overlap":       "Spec.OverlapPolicy(), Spec.Overlap with its default",
			"Cron.Next":          "the schedule's next time after Through (none here: the filler's schedule does not parse)",
		},
	})
	for i, in := range dst.Instances {
		if want := src.Spec.Binaries[src.Instances[i].Key]; in.Binary != want {
			t.Errorf("Instances[%d].Binary = %q, want %q, the binary its key names", i, in.Binary, want)
		}
	}
	if dst.Cron.Schedule != src.Spec.Cron {
		t.Errorf("Cron.Schedule = %q, want Spec.Cron %q", dst.Cron.Schedule, src.Spec.Cron)
	}
	for i, in := range dst.Instances {
		if in.Queue != src.Queue {
			t.Errorf("Instances[%d].Queue = %q, want the job's %q", i, in.Queue, src.Queue)
		}
	}
}

func TestFactsFromWireParity(t *testing.T) {
	src := fillNew[client.Facts](new(filler))
	checkParity(t, src, factsFromWire(src), crossing{
		renamed: map[string]string{"HTTPAddr": "Addr"},
		dropped: map[string]string{
			"Load":        "changes by the second: the leader keeps it in the pool (pool.go), outside the log",
			"GossipAddr":  "the stub's gossip address, for rejoin; the log keeps the API address (Addr)",
			"GPUs[].Used": "a stub reports what it has; which GPUs are held the FSM derives from its instances",
		},
	})
}

func TestMachineToWireParity(t *testing.T) {
	src := fillNew[fsm.Machine](new(filler))
	src.State = fsm.MachineUp
	checkParity(t, src, machineToWire(&src, 7, 0.5, false), crossing{
		renamed: map[string]string{"Unhealthy": "Problem"},
		dropped: map[string]string{
			// The wire shows the effective values: the facts merged with
			// the database's declarations, which fsm computes as it
			// applies (fsm.Effective; zero in a Machine built here).
			"MType":    "shown as Effective().MType",
			"MemoryMB": "shown as Effective().MemoryMB",
			"Keys":     "shown as Effective().Keys",
			"Attrs":    "shown as Effective().Attrs",
			"Mounts":   "shown as Effective().Mounts",

			"State":       "shown through machineState, with draining, asleep and suspect (checked below)",
			"Draining":    "shown in State (draining)",
			"JoinedAt":    "the log's record of the stub's join; netstatus -m shows the present",
			"LeftAt":      "as JoinedAt",
			"LeaveReason": "as JoinedAt; the machine-left event says why",
			"CreateIndex": "the log's bookkeeping",
			"ModifyIndex": "the log's bookkeeping",
			"GPUs":        "shown in Resources, the effective GPUs with their use (resourcesToWire, set by the handler)",
			"DiskMB":      "shown in Resources, as GPUs",
			"Unenforced":  "shown in Resources, as GPUs",
		},
		derived: map[string]string{
			"Resources":     "resourcesToWire, from the effective resources and what the instances hold, set by the handler",
			"MType":         "Effective().MType",
			"MemoryMB":      "Effective().MemoryMB",
			"Keys":          "Effective().Keys",
			"Attrs":         "Effective().Attrs",
			"Mounts":        "Effective().Mounts",
			"Rating":        "Effective().Rating",
			"Declared":      "Effective().Declared",
			"Slots":         "Slots(), from the effective nprocs or the CPUs",
			"Load":          "the pool's load, an argument",
			"Running":       "the running count, an argument",
			"State":         "machineState",
			"ExecUsedBytes": "the stub's report through the pool, set by the handler",
			"ReservedBy":    "the reservation holding the machine, set by the handler",
			"ReservedUntil": "as ReservedBy",
		},
	})
	src.Unhealthy, src.Asleep = "", ""
	for _, tt := range []struct {
		draining bool
		suspect  bool
		want     string
	}{{true, false, client.MachineDraining}, {false, true, client.MachineSuspect}} {
		src.Draining = tt.draining
		if got := machineToWire(&src, 0, 0, tt.suspect).State; got != tt.want {
			t.Errorf("draining %v, suspect %v: State = %q, want %q", tt.draining, tt.suspect, got, tt.want)
		}
	}
}

func TestLeftoversParity(t *testing.T) {
	log := fillNew[[]fsm.Leftover](new(filler))
	checkParity(t, struct{ L []fsm.Leftover }{log}, struct{ L []client.Leftover }{leftoversToWire(log)}, crossing{})
	wire := fillNew[[]client.Leftover](new(filler))
	checkParity(t, struct{ L []client.Leftover }{wire}, struct{ L []fsm.Leftover }{leftoversFromWire(wire)}, crossing{})
}

func TestAttemptsFromWireParity(t *testing.T) {
	src := fillNew[[]client.AttemptRef](new(filler))
	checkParity(t, struct{ A []client.AttemptRef }{src}, struct{ A []fsm.AttemptRef }{attemptsFromWire(src)}, crossing{})
}

func TestReservationToWireParity(t *testing.T) {
	src := fillNew[fsm.Reservation](new(filler))
	checkParity(t, src, reservationToWire(&src), crossing{
		dropped: map[string]string{"CreateIndex": "the log's bookkeeping; ID names the reservation"},
	})
}

func TestQueueToWireParity(t *testing.T) {
	src := fillNew[fsm.QueueView](new(filler))
	checkParity(t, src, queueToWire(src, time.Time{}), crossing{
		renamed: map[string]string{"Active": "Running", "PrimeState.Open": "Prime.Open", "PrimeState.At": "Prime.Since"},
		dropped: map[string]string{
			"KillGraceSeconds":    "the database file's setting (kill_grace): GET /v1/database shows it",
			"Owner":               "the database file's owner policy: GET /v1/database shows it",
			"Declared":            "the declaration: the values in force cross, and Prime.Outside and Prime.Inside derive from it",
			"PrimeState.Index":    "the log's bookkeeping",
			"Prime.Priority":      "crosses as Prime.Inside, the values in force inside the window",
			"Prime.MaxSize":       "as Prime.Priority",
			"Prime.MaxActive":     "as Prime.Priority",
			"Prime.MaxRunSeconds": "as Prime.Priority",
			"Prime.MaxMemMB":      "as Prime.Priority",
			"Prime.MaxUserActive": "as Prime.Priority",
			"Prime.MaxUserQueued": "as Prime.Priority",
		},
		derived: map[string]string{
			"Prime.Next":     "computed from the windows and the server's clock (server/prime.NextChange)",
			"Prime.NextOpen": "as Prime.Next",
			"Prime.Outside":  "the declaration's values (Declared.InForce(false))",
			"Prime.Inside":   "the declaration's values inside the window (Declared.InForce(true))",
		},
	})
}

func TestQueueFromWireParity(t *testing.T) {
	src := fillNew[client.Queue](new(filler))
	dst := queueFromWire("q1", src)
	checkParity(t, src, dst, crossing{
		dropped: map[string]string{
			"Name":          "the name comes from the request's path (checked below)",
			"Jobs":          "a count the server reports, not a limit to set",
			"Waiting":       "as Jobs",
			"Running":       "as Jobs",
			"Policy":        "the database file's; PUT /v1/queues/{name} keeps the queue's (http_queues.go)",
			"MaxUserActive": "as Policy",
			"MaxUserQueued": "as Policy",
			"Interactive":   "as Policy",
			"Prime":         "the database file's prime time and its state; PUT /v1/queues/{name} keeps the queue's",
			"Preempt":       "as Policy",
		},
		derived: map[string]string{
			"Prime":            "the database file's; kept by the handler",
			"Name":             "the request's path",
			"KillGraceSeconds": "the database file's; kept by the handler",
			"Owner":            "the database file's; kept by the handler",
			"Policy":           "the database file's; kept by the handler",
			"MaxUserActive":    "the database file's; kept by the handler",
			"MaxUserQueued":    "the database file's; kept by the handler",
			"Interactive":      "the database file's; kept by the handler",
			"Preempt":          "the database file's; kept by the handler",
		},
	})
	if dst.Name != "q1" {
		t.Errorf("Name = %q, want the path's q1", dst.Name)
	}
}

func TestEventToWireParity(t *testing.T) {
	src := fillNew[fsm.Event](new(filler))
	checkParity(t, src, eventToWire(src), crossing{})
}
