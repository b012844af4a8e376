package fsm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
)

var update = flag.Bool("update", false, "rewrite testdata/snapshot.golden")

// richCommands builds a state holding every record type and every instance
// state: machines up and down (with keys and mounts), jobs with and without
// names, idempotency keys, args and env, and instances queued, placed,
// running, exited, failed, signaled, killed (from the queue and while
// running), lost, kill-requested and with stale events; a loaded database
// (keys, an mtype, declared machines, a queue, an admin), a draining
// machine, a job with every spec option, and a restarted instance with its
// history; a queue set at run time, a suspended instance, a
// restart-requested one, a finished instance queued again by RestartJob,
// an instance killed for a queue limit with its reason, reservations
// (bounded, open-ended, and one ended by Unreserve), and an unhealthy
// machine with an instance queued again for its fault.
func richCommands() []command {
	x := func(job uint64, inst int, machine, key string) fsm.Assignment {
		return fsm.Assignment{JobID: job, Instance: inst, Attempt: 1, Machine: machine, Key: key}
	}
	m1 := facts("m1", "x86_64", 4, "lic")
	m1.Mounts = []string{"/home", "/data"}
	cmds := []command{
		{fsm.StubJoinType, fsm.StubJoin{At: at(0), Machine: m1}},
		{fsm.StubJoinType, fsm.StubJoin{At: at(1), Machine: facts("m2", "sparc", 2)}},
		{fsm.StubJoinType, fsm.StubJoin{At: at(2), Machine: facts("m3", "x86_64", 1)}},
		{fsm.SubmitType, fsm.Submit{At: at(10), Owner: "alice", IdempotencyKey: "key-1", Spec: fsm.JobSpec{
			Name:     "build",
			Binaries: map[string]string{"x86_64": "/bin/build", "sparc": "/bin/build.sparc"},
			Args:     []string{"-j", "4"},
			Env:      []string{"A=1", "B="},
			Min:      3,
		}}},
		{fsm.SubmitType, fsm.Submit{At: at(11), Owner: "bob", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/sh"}, Args: []string{"-c", "echo hi"}, Min: 4}}},
		{fsm.SubmitType, fsm.Submit{At: at(12), Owner: "carol", Spec: spec("victim", 3)}},
		{fsm.SubmitType, fsm.Submit{At: at(13), Owner: "carol", Spec: spec("lostjob", 1)}},
		{fsm.PlaceType, fsm.Place{At: at(20), PlannedAtIndex: 7, Assignments: []fsm.Assignment{
			x(1, 0, "m1", "x86_64"), x(1, 1, "m2", "sparc"), x(1, 2, "m1", "x86_64"),
			x(2, 0, "m1", "*"), x(2, 1, "m1", "*"), x(2, 2, "m2", "*"), x(3, 0, "m3", "*"),
			x(4, 0, "m3", "*"), x(2, 3, "m1", "*"), // dropped: m3 and m1 are full
		}}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(21), JobID: 1, Instance: 0, Attempt: 1, Machine: "m1", PID: 100}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(22), JobID: 1, Instance: 1, Attempt: 1, Machine: "m2", PID: 101}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(23), JobID: 2, Instance: 0, Attempt: 1, Machine: "m1", PID: 200}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(30), JobID: 1, Instance: 0, Attempt: 1, Machine: "m1", UserMS: 5, SysMS: 6, MaxRSSKB: 7}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(31), JobID: 1, Instance: 1, Attempt: 1, Machine: "m2", ExitCode: 3}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(32), JobID: 2, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: -1, Signal: "SEGV"}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(33), JobID: 2, Instance: 1, Attempt: 1, Machine: "m1", ExitCode: -1, Error: "exec format error"}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(34), JobID: 1, Instance: 2, Attempt: 2, Machine: "m1", PID: 102}}, // stale
		{fsm.KillType, fsm.Kill{At: at(40), JobID: 3, By: "bob", Signal: "TERM"}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(41), JobID: 3, Instance: 0, Attempt: 1, Machine: "m3", PID: 300}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(42), JobID: 3, Instance: 0, Attempt: 1, Machine: "m3", ExitCode: -1, Signal: "TERM"}},
		{fsm.PlaceType, fsm.Place{At: at(50), PlannedAtIndex: 19, Assignments: []fsm.Assignment{x(4, 0, "m3", "*")}}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(51), JobID: 4, Instance: 0, Attempt: 1, Machine: "m3", PID: 400}},
		{fsm.StubLeaveType, fsm.StubLeave{At: at(60), Machine: "m3", Reason: "missed contact"}},
		{fsm.SubmitType, fsm.Submit{At: at(70), Owner: "dave", IdempotencyKey: "key-5", Spec: fsm.JobSpec{
			Name:     "longrun",
			Binaries: map[string]string{"*": "/bin/sleep", "lic": "/opt/licensed/sleep"},
			Args:     []string{"3600"},
			Min:      2,
		}}},
		{fsm.PlaceType, fsm.Place{At: at(71), PlannedAtIndex: 23, Assignments: []fsm.Assignment{x(5, 0, "m1", "lic"), x(5, 1, "m1", "*")}}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(72), JobID: 5, Instance: 0, Attempt: 1, Machine: "m1", PID: 500}},
		{fsm.KillType, fsm.Kill{At: at(80), JobID: 5, By: "dave"}},
		{fsm.SubmitType, fsm.Submit{At: at(90), Owner: "erin", Spec: spec("waiting", 2)}},
		// The database: m4 joins, is declared, then drained by a second
		// load that declares only m2.
		{fsm.StubJoinType, fsm.StubJoin{At: at(100), Machine: facts("m4", "x86_64", 2)}},
		{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(101), Source: "isis.db", By: "tclark", Database: richDatabase("m2", "m4")}},
		{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(102), Source: "isis.db", By: "tclark", Database: richDatabase("m2")}},
		// A job using every spec option, whose instance failed once and
		// was restarted (queued again with its history), then a late
		// duplicate of the failed attempt's CHILD_TERM (stale).
		{fsm.SubmitType, fsm.Submit{At: at(103), Owner: "fred", Spec: fsm.JobSpec{
			Name:          "flaky",
			Binaries:      map[string]string{"*": "/bin/flaky", "sparc": "/bin/flaky.sparc"},
			Min:           1,
			Keys:          []string{"lic"},
			Requirements:  []fsm.Requirement{{Attr: "mem", Op: ">", Value: 10}, {Attr: "rating", Op: ">=", Value: 1.5}},
			Mounts:        []string{"/usr/local"},
			Machines:      []string{"m1", "m2"},
			Unique:        true,
			MaxPerMachine: 2,
			Load:          0.5,
			MemoryMB:      512,
			Queue:         "NEW_Q",
			Restart:       fsm.RestartOnFailure,
			MaxRestarts:   2,
		}}},
		{fsm.PlaceType, fsm.Place{At: at(104), PlannedAtIndex: 31, Assignments: []fsm.Assignment{x(7, 0, "m2", "sparc")}}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(105), JobID: 7, Instance: 0, Attempt: 1, Machine: "m2", PID: 700}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(106), JobID: 7, Instance: 0, Attempt: 1, Machine: "m2", ExitCode: 2, UserMS: 1}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(107), JobID: 7, Instance: 0, Attempt: 1, Machine: "m2", ExitCode: 2}}, // stale
		// Queues, job control and reservations on a fifth machine.
		{fsm.StubJoinType, fsm.StubJoin{At: at(110), Machine: facts("m5", "x86_64", 4)}},
		{fsm.SetQueueType, fsm.SetQueue{At: at(111), By: "tclark", Queue: fsm.DeclaredQueue{
			Name: "batch", Priority: 1, MaxSize: 5, MaxActive: 2, MaxRunSeconds: 600, MaxMemMB: 2048,
		}}},
		{fsm.SubmitType, fsm.Submit{At: at(112), Owner: "gina", Spec: fsm.JobSpec{
			Name: "paused", Binaries: map[string]string{"*": "/bin/count"}, Min: 1, MemoryMB: 256, Queue: "batch",
		}}},
		{fsm.SubmitType, fsm.Submit{At: at(113), Owner: "hank", Spec: fsm.JobSpec{
			Name: "again", Binaries: map[string]string{"*": "/bin/again"}, Min: 2, Restart: fsm.RestartOnFailure,
		}}},
		{fsm.SubmitType, fsm.Submit{At: at(114), Owner: "ivan", Spec: fsm.JobSpec{
			Name: "hog", Binaries: map[string]string{"*": "/bin/hog"}, Min: 1, MemoryMB: 512, Queue: "NEW_Q",
		}}},
		{fsm.PlaceType, fsm.Place{At: at(115), PlannedAtIndex: 40, Assignments: []fsm.Assignment{
			x(8, 0, "m5", "*"), x(9, 0, "m5", "*"), x(9, 1, "m5", "*"), x(10, 0, "m5", "*"),
		}}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(116), JobID: 8, Instance: 0, Attempt: 1, Machine: "m5", PID: 800}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(116), JobID: 9, Instance: 0, Attempt: 1, Machine: "m5", PID: 900}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(116), JobID: 9, Instance: 1, Attempt: 1, Machine: "m5", PID: 901}},
		{fsm.ChildRegisterType, fsm.ChildRegister{At: at(116), JobID: 10, Instance: 0, Attempt: 1, Machine: "m5", PID: 1000}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(117), JobID: 9, Instance: 1, Attempt: 1, Machine: "m5", UserMS: 3}},
		{fsm.SuspendType, fsm.JobControl{At: at(118), JobID: 8, By: "gina"}},
		{fsm.RestartJobType, fsm.JobControl{At: at(119), JobID: 9, By: "hank"}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(120), JobID: 10, Instance: 0, Attempt: 1, Machine: "m5", ExitCode: -1, Signal: "KILL",
			Reason: "memory limit of 1024 MB exceeded (resident 1100 MB)", MaxRSSKB: 1126400}},
		{fsm.ReserveType, fsm.Reserve{At: at(121), Owner: "alice", Machines: []string{"m5", "m1"}, From: at(200), Until: at(300)}},
		{fsm.ReserveType, fsm.Reserve{At: at(122), Owner: "bob", Machines: []string{"m5"}, From: at(300)}},
		{fsm.ReserveType, fsm.Reserve{At: at(123), Owner: "carol", Machines: []string{"m2"}, From: at(100), Until: at(150)}},
		{fsm.UnreserveType, fsm.Unreserve{At: at(124), By: "carol", IDs: []uint64{3}}},
		// Since 1.0 (richSince1_0 counts them): a machine fault. An
		// attempt on m6 fails to start for a full exec dir and is queued
		// again uncounted; m6 reports itself unhealthy.
		{fsm.StubJoinType, fsm.StubJoin{At: at(125), Machine: facts("m6", "x86_64", 1)}},
		{fsm.SubmitType, fsm.Submit{At: at(126), Owner: "kim", Spec: spec("faulted", 1)}},
		{fsm.PlaceType, fsm.Place{At: at(127), PlannedAtIndex: 54, Assignments: []fsm.Assignment{x(11, 0, "m6", "*")}}},
		{fsm.ChildTermType, fsm.ChildTerm{At: at(128), JobID: 11, Instance: 0, Attempt: 1, Machine: "m6", ExitCode: 127,
			Error: "not started: exec dir full: 0 B free", MachineFault: true}},
		{fsm.MachineHealthType, fsm.MachineHealth{At: at(129), Machine: "m6", Problem: "exec dir full: 0 B free"}},
		// Since snapshot version 6 (richSinceV5 counts them): API tokens,
		// one of them revoked and one expired by the time of the last
		// command (Apply keeps it: only servers check expiry).
		{fsm.TokenIssueType, tokenIssue("0a1b2c3d", "alice", "tclark", 130, 86400)},
		{fsm.TokenIssueType, tokenIssue("1b2c3d4e", "bob", "root", 131, 60)},
		{fsm.TokenIssueType, tokenIssue("2c3d4e5f", "alice", "root", 132, 3600)},
		{fsm.TokenRevokeType, fsm.TokenRevoke{At: at(133), ID: "2c3d4e5f", By: "tclark"}},
		{fsm.ServerRemovedType | fsm.IgnoreUnknownFlag, fsm.ServerRemoved{At: at(200), Name: "s3", By: "root"}},
		// Since snapshot version 7 (richSinceV6 counts them): dependent
		// jobs, one held for a running job, one held with a dependency
		// that has already ended, one cancelled at once by a failed one.
		{fsm.SubmitAfterType, fsm.Submit{At: at(201), Owner: "gina", Spec: withDeps(spec("next", 1), nil, []uint64{8}, nil)}},
		{fsm.SubmitAfterType, fsm.Submit{At: at(202), Owner: "gina", Spec: withDeps(spec("cleanup", 2), []uint64{1}, nil, []uint64{8})}},
		{fsm.SubmitAfterType, fsm.Submit{At: at(203), Owner: "gina", Spec: withDeps(spec("never", 1), nil, []uint64{2}, nil)}},
		// Since snapshot version 8 (richSinceV7 counts them): owner
		// policies. m6 falls asleep for a console login, then for load.
		{fsm.MachineAsleepType, fsm.MachineAsleep{At: at(204), Machine: "m6", Reason: "console login"}},
		{fsm.MachineAsleepType, fsm.MachineAsleep{At: at(205), Machine: "m6", Reason: "load 3.2 > 2"}},
		// Since snapshot version 9 (richSinceV8 counts them): cron jobs.
		// Job 15 fires once (run job 16) after a missed time, then misses
		// a time under catchup=none; job 17 fires (run job 18, queued),
		// skips a firing for the overlap, and is killed with its runs.
		{fsm.SubmitCronType, fsm.Submit{At: at(206), Owner: "hana", Spec: withCron(spec("nightly", 1), "CRON_TZ=Europe/Paris 0 3 * * *", fsm.CatchupNone, fsm.OverlapAllow)}},
		{fsm.CronFireType, fsm.CronFire{At: at(210), JobID: 15, Scheduled: at(209), Missed: []time.Time{at(207)}}},
		{fsm.CronFireType, fsm.CronFire{At: at(212), JobID: 15, Scheduled: at(211), Skip: true}},
		{fsm.SubmitCronType, fsm.Submit{At: at(213), Owner: "hana", Spec: withCron(spec("tick", 1), "@every 2s", "", "")}},
		{fsm.CronFireType, fsm.CronFire{At: at(214), JobID: 17, Scheduled: at(214)}},
		{fsm.CronFireType, fsm.CronFire{At: at(216), JobID: 17, Scheduled: at(216)}},
		{fsm.KillType, fsm.Kill{At: at(217), JobID: 17, By: "hana", Runs: true}},
		// Also since version 9: a job with a working directory (netexec
		// --chdir), job 19.
		{fsm.SubmitDirType, fsm.Submit{At: at(218), Owner: "hana", Spec: withDir(spec("indir", 1), "/home/hana/work")}},
		// Also since version 9: owner-policy settings in the database, on an mtype, a machine and queues.
		{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(218), Source: "isis.db", By: "tclark", Database: withOwnerSettings(withQueue(richDatabase("m2"), batchQueue))}},
	}
	// Also since version 9: mail. Job 20
	// asks for every mail type; it begins and fails, filing two mails.
	// The begin mail is recorded sent, the fail mail failed once, and
	// the admins' mail about job 7 (failed after its last restart) is
	// still pending untried.
	begin := uint64(len(cmds) + 3) // the index of the ChildRegister
	cmds = append(cmds,
		command{fsm.SubmitType, fsm.Submit{At: at(219), Owner: "lena", Spec: withMail(spec("mailed", 1), fsm.MailOwner, fsm.MailAll)}},
		command{fsm.PlaceType, fsm.Place{At: at(220), PlannedAtIndex: begin - 2, Assignments: []fsm.Assignment{x(20, 0, "m2", "*")}}},
		command{fsm.ChildRegisterType, fsm.ChildRegister{At: at(221), JobID: 20, Instance: 0, Attempt: 1, Machine: "m2", PID: 1500}},
		command{fsm.ChildTermType, fsm.ChildTerm{At: at(223), JobID: 20, Instance: 0, Attempt: 1, Machine: "m2", ExitCode: 4, UserMS: 20, SysMS: 3, MaxRSSKB: 900}},
		command{fsm.MailSentType, fsm.MailSent{At: at(224), ID: fmt.Sprintf("%d.begin.20.0", begin)}},
		command{fsm.MailSentType, fsm.MailSent{At: at(225), ID: fmt.Sprintf("%d.fail.20", begin+1), Error: "dial tcp: connection refused"}},
		// Since version 10 (richSinceV9 counts them): a queue's kill
		// grace, and job 21 with a time limit and a warning of its own.
		command{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(226), Source: "isis.db", By: "tclark", Database: withKillGrace(withOwnerSettings(withQueue(richDatabase("m2"), batchQueue)), 45)}},
		command{fsm.SubmitLimitsType, fsm.Submit{At: at(227), Owner: "lena", Spec: withTimeLimit(spec("checkpointed", 1), 600, "USR1", 120)}},
		// Since version 11 (richSinceV10 counts them): job 22, a gang, and
		// a queue with a placement policy.
		command{fsm.SubmitGangType, fsm.Submit{At: at(228), Owner: "lena", Spec: withGang(spec("mpi", 2))}},
		command{fsm.SetQueueType, fsm.SetQueue{At: at(229), By: "tclark", Queue: fsm.DeclaredQueue{Name: "MPI", Priority: 3, Policy: "gang"}}},
		// Since version 12 (richSinceV11 counts them): job 23 with files
		// in and out, and its instance 0's kept outputs.
		command{fsm.SubmitFilesType, fsm.Submit{At: at(230), Owner: "lena", Spec: withFiles(spec("staged", 1))}},
		command{fsm.OutputsKeptType, fsm.OutputsKept{At: at(231), JobID: 23, Instance: 0, Attempt: 1, Machine: "m2",
			Blob: strings.Repeat("ab", 32), Size: 10240, Files: []string{"out.txt", "plots/a.png"}, Lost: []string{"big.dat: over the copy_out limit"}}},
		// Since version 13 (richSinceV12 counts them): fair share on,
		// a database with accounts, shares, a half-life and per-user
		// limits, and job 24 of zoe (account physics) run for 10 s.
		command{fsm.FairShareStartType, fsm.FairShareStart{At: at(232)}},
		command{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(233), Source: "isis.db", By: "tclark", Database: withShares(withKillGrace(withOwnerSettings(withQueue(richDatabase("m2"), batchQueue)), 45))}},
		command{fsm.SubmitType, fsm.Submit{At: at(234), Owner: "zoe", Spec: spec("shared", 1)}},
		command{fsm.PlaceType, fsm.Place{At: at(235), Assignments: []fsm.Assignment{x(24, 0, "m2", "*")}}},
		command{fsm.ChildRegisterType, fsm.ChildRegister{At: at(236), JobID: 24, Instance: 0, Attempt: 1, Machine: "m2", PID: 2400}},
		command{fsm.ChildTermType, fsm.ChildTerm{At: at(246), JobID: 24, Instance: 0, Attempt: 1, Machine: "m2"}},
		// Since version 14 (richSinceV13 counts them): m7 with detected
		// GPUs, disk and an fpga; licences in the database; job 25 asking
		// for CPUs, GPUs, an fpga, disk and a licence, whose instance 0
		// gets GPUs 0 and 1 and whose instance 1 finds no a100 left.
		command{fsm.StubJoinType, fsm.StubJoin{At: at(247), Machine: gpuFacts("m7")}},
		command{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(248), Source: "isis.db", By: "tclark",
			Database: withLicenses(withShares(withKillGrace(withOwnerSettings(withQueue(richDatabase("m2"), batchQueue)), 45)))}},
		command{fsm.SubmitResourcesType, fsm.Submit{At: at(249), Owner: "lena", Spec: withResources(spec("trainer", 2))}},
		command{fsm.PlaceType, fsm.Place{At: at(250), PlannedAtIndex: 98, Assignments: []fsm.Assignment{x(25, 0, "m7", "*"), x(25, 1, "m7", "*")}}},
		command{fsm.ChildRegisterType, fsm.ChildRegister{At: at(251), JobID: 25, Instance: 0, Attempt: 1, Machine: "m7", PID: 2400}},
		// Since version 15 (richSinceV14 counts them): queue batch's
		// prime-time window, opened, and the interactive queue.
		command{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(252), Source: "isis.db", By: "tclark",
			Database: withInteractive(withPrime(withLicenses(withShares(withKillGrace(withOwnerSettings(withQueue(richDatabase("m2"), batchQueue)), 45)))))}},
		command{fsm.PrimeTimeSwitchType, fsm.PrimeTimeSwitch{At: at(254), Queue: "batch", Open: true, Scheduled: at(253)}},
		// Also since version 15: queue batch
		// preempts by suspending, and job 25's instance 0 (default queue)
		// is suspended for batch's job, lending its slot.
		command{fsm.SetQueueType, fsm.SetQueue{At: at(255), By: "tclark", Queue: withPreempt(batchQueue, fsm.PreemptSuspend)}},
		command{fsm.PreemptType, fsm.Preempt{At: at(256), Preemptor: 8, Victims: []fsm.Victim{{JobID: 25, Instance: 0, Attempt: 1}}}},
		// Also since version 15: a site policy
		// script, loaded, then replaced.
		command{fsm.PolicyLoadType, fsm.PolicyLoad{At: at(257), Op: fsm.PolicyOpLoad, By: "tclark", Source: "def priority(job, user, usage, now):\n    return 0\n"}},
		command{fsm.PolicyLoadType, fsm.PolicyLoad{At: at(258), Op: fsm.PolicyOpLoad, By: "tclark", Source: "def admit(job, user):\n    return None\n"}},
		// Also since version 15: job 26, which
		// checkpoints, and the checkpoint its instance 0 kept.
		command{fsm.SubmitType, fsm.Submit{At: at(259), Owner: "lena", Spec: withCheckpoint(spec("counter", 1))}},
		command{fsm.PlaceType, fsm.Place{At: at(260), Assignments: []fsm.Assignment{x(26, 0, "m7", "*")}}},
		command{fsm.ChildRegisterType, fsm.ChildRegister{At: at(261), JobID: 26, Instance: 0, Attempt: 1, Machine: "m7", PID: 2600}},
		command{fsm.CheckpointKeptType, fsm.CheckpointKept{At: at(262), JobID: 26, Instance: 0, Attempt: 1, Machine: "m7",
			Blob: strings.Repeat("ef", 32), Size: 2048, Files: []string{"state/counter"}}},
		// Also since version 15: job 27, to which the site policy's
		// admit gave a job priority.
		command{fsm.SubmitType, fsm.Submit{At: at(263), Owner: "lena", Spec: withPriority(spec("urgent", 1), 7)}},
	)
	return cmds
}

// richSinceV14 is how many of richCommands' last commands a version 14
// snapshot cannot hold: the rich state of testdata/snapshot_v14.golden
// lacks them.
const richSinceV14 = 11

// withInteractive adds the queue "now", marked interactive, to db.
func withInteractive(db fsm.Database) fsm.Database {
	db.Queues = append(slices.Clone(db.Queues), fsm.DeclaredQueue{Name: "now", MaxUserActive: 1, Interactive: true})
	return db
}

// withPrime gives db's queue batch a prime-time window in Europe/Paris
// raising its priority to 20 and lifting its nq_maxactive.
func withPrime(db fsm.Database) fsm.Database {
	db.Queues = slices.Clone(db.Queues)
	for i := range db.Queues {
		if db.Queues[i].Name == "batch" {
			prio, active := 20, int64(0)
			db.Queues[i].Prime = &fsm.DeclaredPrime{Windows: []string{"Mon-Fri 08:00-18:00"}, TZ: "Europe/Paris", Priority: &prio, MaxActive: &active}
		}
	}
	return db
}

// withShares gives db two accounts, a user's share, a half-life of a
// day and per-user limits on its first queue.
func withShares(db fsm.Database) fsm.Database {
	db.Accounts = []fsm.DeclaredAccount{{Name: "physics", Share: 10, Users: []string{"zoe", "yan"}}, {Name: "chem", Users: []string{"xi"}}}
	db.Shares = []fsm.DeclaredShare{{User: "zoe", Share: 2}}
	db.HalfLifeSeconds = 86400
	db.Queues = slices.Clone(db.Queues)
	db.Queues[0].MaxUserActive, db.Queues[0].MaxUserQueued = 3, 7
	return db
}

// richSinceV12 is how many of richCommands' last commands a version 12
// snapshot cannot hold: the rich state of testdata/snapshot_v12.golden
// lacks them.
const richSinceV12 = 6 + richSinceV13

// withFiles returns s with copy_in and copy_out.
func withFiles(s fsm.JobSpec) fsm.JobSpec {
	s.CopyIn, s.CopyInBlob, s.CopyInSize, s.CopyOut = []string{"sim", "input.dat"}, strings.Repeat("cd", 32), 4096, []string{"out.txt", "plots/*.png"}
	return s
}

// withPreempt returns q preempting lower-priority queues in mode.
func withPreempt(q fsm.DeclaredQueue, mode string) fsm.DeclaredQueue {
	q.Preempt = mode
	return q
}

// richSinceV13 is how many of richCommands' last commands a version 13
// snapshot cannot hold: the rich state of testdata/snapshot_v13.golden
// lacks them.
const richSinceV13 = 5 + richSinceV14

// withPriority returns s with job priority n, as a site policy's admit
// sets it.
func withPriority(s fsm.JobSpec, n int) fsm.JobSpec {
	s.Priority = n
	return s
}

// withCheckpoint returns s keeping state/ as its checkpoint on exit 85.
func withCheckpoint(s fsm.JobSpec) fsm.JobSpec {
	s.Checkpoint, s.CheckpointExit = []string{"state"}, 85
	return s
}

// gpuFacts is an 8-CPU machine with two a100 GPUs and a t4 detected,
// 50 GB of free disk and two fpga declared in its init file.
func gpuFacts(name string) fsm.MachineFacts {
	f := facts(name, "x86_64", 8)
	f.GPUs = []fsm.GPU{{Index: 0, Type: "a100", MemoryMB: 40960}, {Index: 1, Type: "a100", MemoryMB: 40960}, {Index: 2, Type: "t4", MemoryMB: 16384}}
	f.DiskMB = 50000
	f.Unenforced = []string{"gpus: no device control (cgroup v2 needs an eBPF program)"}
	f.Attrs = map[string]float64{"gres.fpga": 2}
	return f
}

// withLicenses declares the licences matlab (2) and sas (1) in db.
func withLicenses(db fsm.Database) fsm.Database {
	db.Licenses = []fsm.DeclaredLicense{{Name: "matlab", Count: 2}, {Name: "sas", Count: 1}}
	return db
}

// withResources returns s asking, per instance, for 2 CPUs, 2 a100
// GPUs, an fpga, 1000 MB of disk and a matlab licence.
func withResources(s fsm.JobSpec) fsm.JobSpec {
	s.CPUs, s.ExclusiveCPUs, s.GPUs, s.GPUType, s.DiskMB = 2, true, 2, "a100", 1000
	s.Gres, s.Licenses = map[string]int{"fpga": 1}, map[string]int{"matlab": 1}
	return s
}

// richSinceV11 is how many of richCommands' last commands a version 11
// snapshot cannot hold: the rich state of testdata/snapshot_v11.golden
// lacks them.
const richSinceV11 = 2 + richSinceV12

// withMail returns s mailing to, for the mail types given.
func withMail(s fsm.JobSpec, to string, types ...string) fsm.JobSpec {
	s.Mail, s.MailTypes = to, types
	return s
}

// withCron returns s as a cron job with the options given.
func withCron(s fsm.JobSpec, expr, catchup, overlap string) fsm.JobSpec {
	s.Cron, s.Catchup, s.Overlap = expr, catchup, overlap
	return s
}

// richSinceV10 is how many of richCommands' last commands a version 10
// snapshot cannot hold: the rich state of testdata/snapshot_v10.golden
// lacks them.
const richSinceV10 = 2 + richSinceV11

// withGang returns s as a gang job.
func withGang(s fsm.JobSpec) fsm.JobSpec {
	s.Gang = true
	return s
}

// richSinceV9 is how many of richCommands' last commands a version 9
// snapshot cannot hold: the rich state of testdata/snapshot_v9.golden
// lacks them.
const richSinceV9 = 2 + richSinceV10

// withKillGrace gives db's last queue a kill grace of secs seconds.
func withKillGrace(db fsm.Database, secs int64) fsm.Database {
	db.Queues = slices.Clone(db.Queues)
	db.Queues[len(db.Queues)-1].KillGraceSeconds = secs
	return db
}

// withTimeLimit returns s with a time limit and a warning.
func withTimeLimit(s fsm.JobSpec, secs int64, sig string, lead int64) fsm.JobSpec {
	s.TimeLimitSeconds, s.WarnSignal, s.WarnLeadSeconds = secs, sig, lead
	return s
}

// richSinceV8 is how many of richCommands' last commands a version 8
// snapshot cannot hold: the rich state of testdata/snapshot_v8.golden
// lacks them.
const richSinceV8 = 8 + 1 + 6 + richSinceV9 // cron and working directory, owner settings, then mail

// withOwnerSettings gives db's mtype, its machine m2 and its queues
// owner-policy settings.
func withOwnerSettings(db fsm.Database) fsm.Database {
	db.MTypes = slices.Clone(db.MTypes)
	db.MTypes[0].Owner = map[string]string{"sleep_on_input": "15", "vacate_after": "10", "available": "Mon-Fri 18:00-08:00; Sat-Sun"}
	db.Machines = slices.Clone(db.Machines)
	for i := range db.Machines {
		if db.Machines[i].Name == "m2" {
			db.Machines[i].Owner = map[string]string{"sleep_on_input": "90s", "keep_suspended": "yes"}
		}
	}
	db.Queues = slices.Clone(db.Queues)
	db.Queues[0].Owner = map[string]string{"suspend": "no"}
	db.Queues[len(db.Queues)-1].Owner = map[string]string{"vacate_after": "30", "keep_suspended": "yes"}
	return db
}

// withDeps returns s with the dependencies given.
func withDeps(s fsm.JobSpec, after, afterOK, afterNotOK []uint64) fsm.JobSpec {
	s.After, s.AfterOK, s.AfterNotOK = after, afterOK, afterNotOK
	return s
}

// withDir returns s with working directory dir.
func withDir(s fsm.JobSpec, dir string) fsm.JobSpec {
	s.Dir = dir
	return s
}

// richSinceV7 is how many of richCommands' last commands a version 7
// snapshot cannot hold: the rich state of testdata/snapshot_v7.golden
// lacks them.
const richSinceV7 = 2 + richSinceV8

// richSinceV6 is how many of richCommands' last commands a version 6
// snapshot cannot hold: the rich state of testdata/snapshot_v6.golden
// lacks them.
const richSinceV6 = 3 + richSinceV7

// richSinceV5 is how many of richCommands' last commands a version 5
// snapshot cannot hold: the rich state of testdata/snapshot_v5.golden
// lacks them.
const richSinceV5 = 5 + richSinceV6

// richSince1_0 is how many of richCommands' last commands 1.0 did not
// know: the rich state of testdata/snapshot_v4.golden lacks them.
const richSince1_0 = 5 + richSinceV5

// tokenIssue is a TokenIssue at at(n) for a token that lasts ttl seconds,
// with a hash made from its ID.
func tokenIssue(id, user, by string, n, ttl int) fsm.TokenIssue {
	return fsm.TokenIssue{
		ID: id, User: user, Hash: hashOf("nmt_" + id), IssuedBy: by,
		IssuedAt: at(n), ExpiresAt: at(n + ttl),
	}
}

// hashOf is the hex SHA-256 of s, as servers hash tokens.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// richDatabase is a database with two keys, an mtype with keys, attributes
// and mounts, the named machines declared (m2 of that mtype, others with a
// key), a queue and an admin.
// batchQueue is the queue the rich state sets at run time; it holds
// unfinished jobs, so later loads keep it.
var batchQueue = fsm.DeclaredQueue{Name: "batch", Priority: 1, MaxSize: 5, MaxActive: 2, MaxRunSeconds: 600, MaxMemMB: 2048}

func withQueue(db fsm.Database, q fsm.DeclaredQueue) fsm.Database {
	db.Queues = append(slices.Clone(db.Queues), q)
	return db
}

func richDatabase(machines ...string) fsm.Database {
	db := fsm.Database{
		Keys: []fsm.DeclaredKey{{Name: "lic", Comment: "licensed compiler"}, {Name: "gpu"}},
		MTypes: []fsm.DeclaredMType{{
			Name:   "sun4",
			Keys:   []string{"lic"},
			Attrs:  map[string]float64{"mem": 8192, "rating": 2.5},
			Mounts: []string{"/usr/local"},
		}},
		Queues: []fsm.DeclaredQueue{{Name: "NEW_Q", Priority: 2, MaxSize: 10, MaxActive: 4, MaxRunSeconds: 3600, MaxMemMB: 1024}},
		Admins: []string{"tclark"},
	}
	for _, name := range machines {
		if name == "m2" {
			db.Machines = append(db.Machines, fsm.DeclaredMachine{Name: name, MType: "sun4", Attrs: map[string]float64{"rating": 3}, Mounts: []string{"/proj"}})
			continue
		}
		db.Machines = append(db.Machines, fsm.DeclaredMachine{Name: name, Keys: []string{"gpu"}})
	}
	return db
}

// richState applies richCommands to a fresh FSM.
func richState(t *testing.T) *applier {
	t.Helper()
	a := newApplier(t)
	for _, c := range richCommands() {
		a.apply(c.typ, c.body)
	}
	return a
}

func TestRichStateCoversEveryState(t *testing.T) {
	a := richState(t)
	seen := map[string]bool{}
	var kill, stale, killedJob, draining, unhealthy, asleep, history, restartRequested, reason, requeued, faulted bool
	var db *fsm.Database
	var dbIndex uint64
	a.f.Read(func(v fsm.View) {
		db, dbIndex = v.Database()
		for _, m := range v.Machines() {
			seen["machine "+m.State] = true
			draining = draining || m.Draining
			unhealthy = unhealthy || m.Unhealthy != ""
			asleep = asleep || m.Asleep != ""
		}
		for _, j := range v.Jobs() {
			seen["job "+j.State()] = true
			killedJob = killedJob || j.KillRequested
			for _, in := range j.Instances {
				seen[in.State] = true
				kill = kill || in.KillRequested
				stale = stale || in.StaleEvents > 0
				history = history || (len(in.History) > 0 && in.Restarts > 0 && in.State == fsm.InstanceQueued)
				restartRequested = restartRequested || (in.RestartRequested && in.Active())
				reason = reason || (in.Reason != "" && in.State == fsm.InstanceKilled)
				requeued = requeued || (len(in.History) > 0 && in.Restarts == 0 && in.State == fsm.InstanceQueued)
				faulted = faulted || (len(in.History) > 0 && in.History[0].ExitCode == 127 && in.Restarts == 0 && in.State == fsm.InstanceQueued)
			}
		}
	})
	for _, want := range []string{
		"machine up", "machine down",
		fsm.InstanceQueued, fsm.InstancePlaced, fsm.InstanceRunning, fsm.InstanceExited,
		fsm.InstanceFailed, fsm.InstanceSignaled, fsm.InstanceKilled, fsm.InstanceLost, fsm.InstanceSuspended,
		"job " + fsm.JobQueued, "job " + fsm.JobRunning, "job " + fsm.JobKilled, "job " + fsm.JobFailed,
	} {
		if !seen[want] {
			t.Errorf("rich state lacks %q", want)
		}
	}
	if !kill || !stale || !killedJob {
		t.Errorf("got kill-requested instance %v, stale events %v, killed job %v, want all true", kill, stale, killedJob)
	}
	if !draining || !history || !unhealthy || !asleep || !faulted {
		t.Errorf("got draining machine %v, restarted instance with history %v, unhealthy machine %v, asleep machine %v, instance queued again for a machine fault %v, want all true",
			draining, history, unhealthy, asleep, faulted)
	}
	if dbIndex == 0 || len(db.Keys) == 0 || len(db.MTypes) == 0 || len(db.Machines) == 0 || len(db.Queues) == 0 || len(db.Admins) == 0 {
		t.Errorf("got database %+v at index %d, want every kind of declaration loaded", db, dbIndex)
	}
	if !restartRequested || !reason || !requeued {
		t.Errorf("got restart requested %v, killed with a reason %v, requeued by RestartJob %v, want all true", restartRequested, reason, requeued)
	}
	var rs []*fsm.Reservation
	var batch fsm.QueueView
	var ok bool
	a.f.Read(func(v fsm.View) {
		rs = v.Reservations()
		batch, ok = v.Queue("batch")
	})
	if len(rs) != 2 || !rs[0].Until.After(rs[0].From) || !rs[1].Until.IsZero() {
		t.Errorf("got %d reservations, want a bounded and an open-ended one", len(rs))
	}
	if !ok || batch.Active != 1 || batch.Jobs != 1 {
		t.Errorf("got queue batch %+v (found %v), want it set at run time holding one suspended job", batch, ok)
	}
	var tokens []*fsm.Token
	a.f.Read(func(v fsm.View) { tokens = v.Tokens() })
	if len(tokens) != 2 || tokens[0].Expired(at(200)) || !tokens[1].Expired(at(200)) {
		t.Errorf("got tokens %+v, want two left after a revoke, the second expired at the last command", tokens)
	}
}

// indexes is everything the derived indexes answer, for comparison.
type indexes struct {
	Index    uint64
	Machines []string
	Jobs     []uint64
	Queued   []fsm.InstanceRef
	Active   []fsm.InstanceRef
	Running  map[string]int
	ByName   map[string]uint64
	// Derived prints, per machine, what is computed rather than stored:
	// effective attributes, per-job counts and used memory.
	Derived map[string]string
	// TokenHashes maps each token's ID to the ID its hash looks up.
	TokenHashes map[string]string
}

func readIndexes(f *fsm.FSM) indexes {
	var ix indexes
	f.Read(func(v fsm.View) {
		ix.Index = v.Index()
		ix.Queued, ix.Active = v.Queued(), v.Active()
		ix.Running = map[string]int{}
		ix.ByName = map[string]uint64{}
		ix.Derived = map[string]string{}
		ix.TokenHashes = map[string]string{}
		for _, tk := range v.Tokens() {
			if found, ok := v.TokenByHash(tk.Hash); ok {
				ix.TokenHashes[tk.ID] = found.ID
			}
		}
		for _, m := range v.Machines() {
			ix.Machines = append(ix.Machines, m.Name)
			ix.Running[m.Name] = v.Running(m.Name)
			ix.Derived[m.Name] = fmt.Sprintf("%+v jobs=%v mem=%d", *m.Effective(), v.JobCounts(m.Name), v.UsedMemoryMB(m.Name))
		}
		for _, j := range v.Jobs() {
			ix.Jobs = append(ix.Jobs, j.ID)
			if k, ok := v.JobByName(j.Name); ok {
				ix.ByName[j.Name] = k.ID
			}
		}
		if _, ok := v.JobByName("no-such-name"); ok {
			ix.ByName["no-such-name"] = 1
		}
	})
	return ix
}

func (x indexes) equal(y indexes) bool {
	return x.Index == y.Index &&
		slices.Equal(x.Machines, y.Machines) && slices.Equal(x.Jobs, y.Jobs) &&
		slices.Equal(x.Queued, y.Queued) && slices.Equal(x.Active, y.Active) &&
		mapsEqual(x.Running, y.Running) && mapsEqual(x.ByName, y.ByName) && mapsEqual(x.Derived, y.Derived) &&
		mapsEqual(x.TokenHashes, y.TokenHashes)
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestSnapshotRoundTrip(t *testing.T) {
	a := richState(t)
	orig := snapshotBytes(t, a.f)
	b := &applier{tb: t, f: restored(t, orig), next: a.next}
	if got := snapshotBytes(t, b.f); !bytes.Equal(got, orig) {
		t.Fatalf("snapshot of restored FSM differs:\ngot:  %s\nwant: %s", got, orig)
	}
	if got, want := readIndexes(b.f), readIndexes(a.f); !got.equal(want) {
		t.Fatalf("indexes after restore:\ngot  %+v\nwant %+v", got, want)
	}

	// The same commands must now give the same answers on both.
	steps := []struct {
		name  string
		cmd   command
		check func(t *testing.T, res *fsm.Result)
	}{
		{"place respects slots", command{fsm.PlaceType, fsm.Place{At: at(100), Assignments: []fsm.Assignment{asg(6, 0, "m1"), asg(6, 1, "m1"), asg(2, 3, "m2")}}},
			func(t *testing.T, res *fsm.Result) {
				// m1: 4 CPUs holding job1/2, job5/0, job5/1; m2: 2 CPUs holding job2/2.
				if want := []fsm.Assignment{asg(6, 0, "m1"), asg(2, 3, "m2")}; !slices.Equal(res.Accepted, want) || res.Dropped != 1 {
					t.Errorf("got Accepted %v Dropped %d, want %v and 1", res.Accepted, res.Dropped, want)
				}
			}},
		{"place on a down machine", command{fsm.PlaceType, fsm.Place{At: at(101), Assignments: []fsm.Assignment{asg(6, 1, "m3")}}},
			func(t *testing.T, res *fsm.Result) {
				if len(res.Accepted) != 0 {
					t.Errorf("got Accepted %v, want none", res.Accepted)
				}
			}},
		{"place on a draining machine", command{fsm.PlaceType, fsm.Place{At: at(101), Assignments: []fsm.Assignment{asg(6, 1, "m4")}}},
			func(t *testing.T, res *fsm.Result) {
				if len(res.Accepted) != 0 {
					t.Errorf("got Accepted %v, want none", res.Accepted)
				}
			}},
		{"place the old attempt of a restarted instance", command{fsm.PlaceType, fsm.Place{At: at(101), Assignments: []fsm.Assignment{{JobID: 7, Instance: 0, Attempt: 1, Machine: "m4", Key: "*"}}}},
			func(t *testing.T, res *fsm.Result) {
				if len(res.Accepted) != 0 {
					t.Errorf("got Accepted %v, want none", res.Accepted)
				}
			}},
		{"place for a kill-requested job", command{fsm.PlaceType, fsm.Place{At: at(101), Assignments: []fsm.Assignment{asg(3, 1, "m2")}}},
			func(t *testing.T, res *fsm.Result) {
				if len(res.Accepted) != 0 {
					t.Errorf("got Accepted %v, want none", res.Accepted)
				}
			}},
		{"duplicate idempotency key", command{fsm.SubmitType, fsm.Submit{At: at(102), Owner: "alice", IdempotencyKey: "key-1", Spec: spec("again", 1)}},
			func(t *testing.T, res *fsm.Result) {
				if res.JobID != 1 || !res.Existing {
					t.Errorf("got JobID %d Existing %v, want 1 and true", res.JobID, res.Existing)
				}
			}},
		{"second idempotency key", command{fsm.SubmitType, fsm.Submit{At: at(103), Owner: "dave", IdempotencyKey: "key-5", Spec: spec("again", 1)}},
			func(t *testing.T, res *fsm.Result) {
				if res.JobID != 5 || !res.Existing {
					t.Errorf("got JobID %d Existing %v, want 5 and true", res.JobID, res.Existing)
				}
			}},
		{"next job id continues", command{fsm.SubmitType, fsm.Submit{At: at(104), Owner: "erin", Spec: spec("", 1)}},
			func(t *testing.T, res *fsm.Result) {
				if res.JobID != 28 || res.Existing {
					t.Errorf("got JobID %d Existing %v, want 28 and false", res.JobID, res.Existing)
				}
			}},
		{"term of a lost instance", command{fsm.ChildTermType, fsm.ChildTerm{At: at(105), JobID: 4, Instance: 0, Attempt: 1, Machine: "m3"}},
			func(t *testing.T, res *fsm.Result) {
				if res.Stale || res.Err != nil {
					t.Errorf("got Stale %v Err %v, want false and nil", res.Stale, res.Err)
				}
			}},
		{"term frees a slot", command{fsm.ChildTermType, fsm.ChildTerm{At: at(106), JobID: 5, Instance: 1, Attempt: 1, Machine: "m1"}},
			func(t *testing.T, res *fsm.Result) {
				if res.Stale || res.Err != nil {
					t.Errorf("got Stale %v Err %v, want false and nil", res.Stale, res.Err)
				}
			}},
		{"freed slot is usable", command{fsm.PlaceType, fsm.Place{At: at(107), Assignments: []fsm.Assignment{asg(6, 1, "m1"), asg(19, 0, "m1")}}},
			func(t *testing.T, res *fsm.Result) {
				if want := []fsm.Assignment{asg(6, 1, "m1")}; !slices.Equal(res.Accepted, want) {
					t.Errorf("got Accepted %v, want %v", res.Accepted, want)
				}
			}},
		{"kill of the job being killed", command{fsm.KillType, fsm.Kill{At: at(108), JobID: 5, By: "dave"}},
			func(t *testing.T, res *fsm.Result) {
				if res.Err != nil || res.Signaled != 1 {
					t.Errorf("got Err %v Signaled %d, want nil and 1", res.Err, res.Signaled)
				}
			}},
		{"the run-time queue's nq_maxmem", command{fsm.SubmitType, fsm.Submit{At: at(111), Owner: "gina", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Queue: "batch", MemoryMB: 4096}}},
			func(t *testing.T, res *fsm.Result) {
				if !errors.Is(res.Err, queue.ErrMemoryOverLimit) || res.JobID != 0 {
					t.Errorf("got Err %v JobID %d, want %v and 0", res.Err, res.JobID, queue.ErrMemoryOverLimit)
				}
			}},
		{"redeclaring the drained machine", command{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(109), Database: withQueue(richDatabase("m2", "m4"), batchQueue)}},
			func(t *testing.T, res *fsm.Result) {
				if res.Err != nil || len(res.Draining) != 0 {
					t.Errorf("got Err %v Draining %v, want nil and none", res.Err, res.Draining)
				}
			}},
		{"undrained machine takes work", command{fsm.PlaceType, fsm.Place{At: at(110), Assignments: []fsm.Assignment{asg(19, 0, "m4")}}},
			func(t *testing.T, res *fsm.Result) {
				if want := []fsm.Assignment{asg(19, 0, "m4")}; !slices.Equal(res.Accepted, want) {
					t.Errorf("got Accepted %v, want %v", res.Accepted, want)
				}
			}},
		{"restarted attempt placed within its memory", command{fsm.PlaceType, fsm.Place{At: at(111), Assignments: []fsm.Assignment{{JobID: 7, Instance: 0, Attempt: 2, Machine: "m4", Key: "*"}}}},
			func(t *testing.T, res *fsm.Result) {
				if len(res.Accepted) != 1 {
					t.Errorf("got Accepted %v, want one", res.Accepted)
				}
			}},
		{"dropping every other declaration drains the declared machines", command{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(112), Database: withQueue(fsm.Database{Queues: richDatabase().Queues}, batchQueue)}},
			func(t *testing.T, res *fsm.Result) {
				if want := []string{"m2", "m4"}; res.Err != nil || !slices.Equal(res.Draining, want) {
					t.Errorf("got Err %v Draining %v, want nil and %v", res.Err, res.Draining, want)
				}
			}},
		{"resume the suspended job", command{fsm.ResumeType, fsm.JobControl{At: at(114), JobID: 8, By: "gina"}},
			func(t *testing.T, res *fsm.Result) {
				if res.Err != nil || res.Affected != 1 {
					t.Errorf("got Err %v Affected %d, want nil and 1", res.Err, res.Affected)
				}
			}},
		{"the restart-requested attempt ends", command{fsm.ChildTermType, fsm.ChildTerm{At: at(115), JobID: 9, Instance: 0, Attempt: 1, Machine: "m5", ExitCode: -1, Signal: "TERM"}},
			func(t *testing.T, res *fsm.Result) {
				if res.Err != nil || res.Stale {
					t.Errorf("got Err %v Stale %v, want nil and false", res.Err, res.Stale)
				}
			}},
		{"another user inside a reservation", command{fsm.PlaceType, fsm.Place{At: at(250), Assignments: []fsm.Assignment{
			{JobID: 9, Instance: 0, Attempt: 2, Machine: "m5", Key: "*"}, {JobID: 9, Instance: 1, Attempt: 2, Machine: "m5", Key: "*"},
		}}},
			func(t *testing.T, res *fsm.Result) {
				if len(res.Accepted) != 0 || res.Dropped != 2 {
					t.Errorf("got Accepted %v Dropped %d, want none and 2", res.Accepted, res.Dropped)
				}
			}},
		{"between the reservations", command{fsm.PlaceType, fsm.Place{At: at(150), Assignments: []fsm.Assignment{
			{JobID: 9, Instance: 0, Attempt: 2, Machine: "m5", Key: "*"},
		}}},
			func(t *testing.T, res *fsm.Result) {
				if len(res.Accepted) != 1 {
					t.Errorf("got Accepted %v, want one", res.Accepted)
				}
			}},
		{"a reservation overlapping another user's", command{fsm.ReserveType, fsm.Reserve{At: at(116), Owner: "carol", Machines: []string{"m5"}, From: at(1000), Until: at(1001)}},
			func(t *testing.T, res *fsm.Result) {
				if res.Err == nil {
					t.Errorf("got nil error, want bob's open-ended reservation to refuse it")
				}
			}},
		{"reservation ids continue", command{fsm.ReserveType, fsm.Reserve{At: at(117), Owner: "carol", Machines: []string{"m2"}, From: at(100), Until: at(150)}},
			func(t *testing.T, res *fsm.Result) {
				if res.Err != nil || res.ReservationID != 4 {
					t.Errorf("got Err %v ReservationID %d, want nil and 4", res.Err, res.ReservationID)
				}
			}},
		{"a token ID stays taken", command{fsm.TokenIssueType, tokenIssue("0a1b2c3d", "carol", "root", 120, 60)},
			func(t *testing.T, res *fsm.Result) {
				if !errors.Is(res.Err, fsm.ErrTokenExists) {
					t.Errorf("got Err %v, want %v", res.Err, fsm.ErrTokenExists)
				}
			}},
		{"a token hash stays taken", command{fsm.TokenIssueType, fsm.TokenIssue{ID: "ffffffff", User: "carol", Hash: hashOf("nmt_1b2c3d4e"), IssuedAt: at(120), ExpiresAt: at(180)}},
			func(t *testing.T, res *fsm.Result) {
				if !errors.Is(res.Err, fsm.ErrTokenExists) {
					t.Errorf("got Err %v, want %v", res.Err, fsm.ErrTokenExists)
				}
			}},
		{"the revoked token stays revoked", command{fsm.TokenRevokeType, fsm.TokenRevoke{At: at(120), ID: "2c3d4e5f", By: "root"}},
			func(t *testing.T, res *fsm.Result) {
				if !errors.Is(res.Err, fsm.ErrNoSuchToken) {
					t.Errorf("got Err %v, want %v", res.Err, fsm.ErrNoSuchToken)
				}
			}},
		{"the expired token can be revoked", command{fsm.TokenRevokeType, fsm.TokenRevoke{At: at(121), ID: "1b2c3d4e", By: "root"}},
			func(t *testing.T, res *fsm.Result) {
				if res.Err != nil {
					t.Errorf("got Err %v, want nil", res.Err)
				}
			}},
		{"the revoked token's ID is free again", command{fsm.TokenIssueType, tokenIssue("2c3d4e5f", "carol", "root", 122, 60)},
			func(t *testing.T, res *fsm.Result) {
				if res.Err != nil {
					t.Errorf("got Err %v, want nil", res.Err)
				}
			}},
		{"the removed reservation stays removed", command{fsm.UnreserveType, fsm.Unreserve{At: at(118), IDs: []uint64{3, 1}}},
			func(t *testing.T, res *fsm.Result) {
				if !slices.Equal(res.Ended, []uint64{1}) {
					t.Errorf("got Ended %v, want [1]", res.Ended)
				}
			}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			resA := a.apply(st.cmd.typ, st.cmd.body)
			resB := b.apply(st.cmd.typ, st.cmd.body)
			st.check(t, resA)
			st.check(t, resB)
			if got, want := snapshotBytes(t, b.f), snapshotBytes(t, a.f); !bytes.Equal(got, want) {
				t.Errorf("restored FSM diverged:\ngot:  %s\nwant: %s", got, want)
			}
			if got, want := readIndexes(b.f), readIndexes(a.f); !got.equal(want) {
				t.Errorf("restored FSM's indexes diverged:\ngot  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestSnapshotIsolatedFromLaterApplies(t *testing.T) {
	a := richState(t)
	snap, err := a.f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer snap.Release()
	want := snapshotBytes(t, a.f)
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(200), JobID: 5, Instance: 0, Attempt: 1, Machine: "m1"})
	a.mustOK(fsm.PlaceType, fsm.Place{At: at(201), Assignments: []fsm.Assignment{asg(6, 0, "m1")}})
	a.mustOK(fsm.StubLeaveType, fsm.StubLeave{At: at(202), Machine: "m1", Reason: "gone"})
	a.mustOK(fsm.SubmitType, fsm.Submit{At: at(203), Owner: "x", Spec: spec("late", 1)})
	if got := persist(t, snap); !bytes.Equal(got, want) {
		t.Errorf("snapshot changed by later applies:\ngot:  %s\nwant: %s", got, want)
	}
}

// errSink fails every write.
type errSink struct{ cancelled, closed bool }

func (s *errSink) Write([]byte) (int, error) { return 0, errors.New("disk full") }
func (s *errSink) ID() string                { return "err" }
func (s *errSink) Cancel() error             { s.cancelled = true; return nil }
func (s *errSink) Close() error              { s.closed = true; return nil }

func TestPersistCancelsOnError(t *testing.T) {
	a := richState(t)
	snap, err := a.f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	sink := &errSink{}
	if err := snap.Persist(sink); err == nil {
		t.Errorf("got nil error, want one")
	}
	if !sink.cancelled || sink.closed {
		t.Errorf("got cancelled %v closed %v, want true and false", sink.cancelled, sink.closed)
	}
}

func TestRestoreRejects(t *testing.T) {
	tests := []struct {
		name       string
		data       string
		wantFormat bool // the error wraps ErrSnapshotFormat
	}{
		{"unknown format", `{"format":"other-db","version":1,"index":5,"next_job_id":1,"machines":0,"jobs":0}` + "\n", true},
		{"newer version", fmt.Sprintf(`{"format":"netmgr-fsm","version":%d,"index":5,"next_job_id":1,"machines":0,"jobs":0}`, fsm.SnapshotVersion+1) + "\n", true},
		{"version zero", `{"format":"netmgr-fsm","version":0,"index":5,"next_job_id":1,"machines":0,"jobs":0}` + "\n", true},
		{"no format", `{"version":1,"index":5}` + "\n", true},
		{"empty", "", false},
		{"not json", "hello\n", false},
		{"version 3, no longer read", `{"format":"netmgr-fsm","version":3,"index":5,"next_job_id":1,"machines":0,"jobs":0}` + "\n" + "{}\n", true},
		{"version 1, no longer read", `{"format":"netmgr-fsm","version":1,"index":5,"next_job_id":1,"machines":0,"jobs":0}` + "\n", true},
		{"version 4 without its database", v4Header(0, 0), false},
		{"version 4 with JSON records", v4Header(1, 0) + "{}\n" + `{"name":"m1","arch":"x86_64","cpus":1,"memory_mb":1,"addr":"","state":"up","joined_at":"2024-03-01T09:30:00Z","create_index":1,"modify_index":1}` + "\n", false},
		{"version 4 truncated record", v4Header(1, 0) + "{}\n" + "\x04m1\x0cx86_64\x02", false},
		{"version 4 negative count", v4Header(-1, 0) + "{}\n", false},
		{"version 4 data after the records", v4Header(0, 0) + "{}\n" + "\x00", false},
		{"version 4 undefined symbol", v4Header(1, 0) + "{}\n" + "\x05", false},
		{"version 4 huge list", v4Header(1, 0) + "{}\n" + "\x04m1\x02a\x02\x02\xff\xff\xff\xff\x0f", false},
		{"version 5 announcing tokens", `{"format":"netmgr-fsm","version":5,"index":5,"next_job_id":1,"machines":0,"jobs":0,"tokens":1}` + "\n{}\n" + "\x00", false},
		{"version 6 truncated token", `{"format":"netmgr-fsm","version":6,"index":5,"next_job_id":1,"machines":0,"jobs":0,"tokens":1}` + "\n{}\n" + "\x08abcd", false},
		{"version 12 holding fair share", `{"format":"netmgr-fsm","version":12,"index":5,"next_job_id":1,"machines":0,"jobs":0,"fair_share":{"start_index":3}}` + "\n{}\n", false},
		{"version 6 negative token count", `{"format":"netmgr-fsm","version":6,"index":5,"next_job_id":1,"machines":0,"jobs":0,"tokens":-1}` + "\n{}\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := richState(t)
			before := snapshotBytes(t, a.f)
			ixBefore := readIndexes(a.f)
			err := restoreInto(a.f, []byte(tc.data))
			if err == nil {
				t.Fatalf("got nil error, want one")
			}
			if got := errors.Is(err, fsm.ErrSnapshotFormat); got != tc.wantFormat {
				t.Errorf("got errors.Is(%v, ErrSnapshotFormat) = %v, want %v", err, got, tc.wantFormat)
			}
			if after := snapshotBytes(t, a.f); !bytes.Equal(after, before) {
				t.Errorf("failed restore changed the state:\ngot:  %s\nwant: %s", after, before)
			}
			if got := readIndexes(a.f); !got.equal(ixBefore) {
				t.Errorf("failed restore changed the indexes:\ngot  %+v\nwant %+v", got, ixBefore)
			}
		})
	}
}

// TestRestoreOldVersionSaysWhatToDo checks that a snapshot of a
// pre-release version is refused with an error that names the versions
// and the remedy.
func TestRestoreOldVersionSaysWhatToDo(t *testing.T) {
	data := `{"format":"netmgr-fsm","version":3,"index":5,"next_job_id":1,"machines":0,"jobs":0}` + "\n{}\n"
	err := restoreInto(fsm.New(), []byte(data))
	if !errors.Is(err, fsm.ErrSnapshotFormat) {
		t.Fatalf("got %v, want an error wrapping ErrSnapshotFormat", err)
	}
	for _, want := range []string{"snapshot version 3", "pre-release", "reads versions 4 to 15", "move the data directory aside"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to contain %q", err, want)
		}
	}
}

func TestRestoreEmptyState(t *testing.T) {
	empty := snapshotBytes(t, fsm.New())
	a := richState(t)
	if err := restoreInto(a.f, empty); err != nil {
		t.Fatalf("restore: %v", err)
	}
	ix := readIndexes(a.f)
	if ix.Index != 0 || len(ix.Machines) != 0 || len(ix.Jobs) != 0 || len(ix.Queued) != 0 || len(ix.Active) != 0 {
		t.Errorf("got %+v, want an empty database", ix)
	}
	if res := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "a", IdempotencyKey: "key-1", Spec: spec("", 1)}); res.JobID != 1 || res.Existing {
		t.Errorf("got JobID %d Existing %v, want 1 and false", res.JobID, res.Existing)
	}
}

func TestSnapshotGolden(t *testing.T) {
	golden := filepath.Join("testdata", "snapshot.golden")
	got := snapshotBytes(t, richState(t).f)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatalf("update golden: %v", err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatalf("update golden: %v", err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (run go test ./fsm -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("snapshot differs from %s (run go test ./fsm -update if the change is intended):\ngot:\n%s\nwant:\n%s",
			golden, jsonSnapshot(t, restored(t, got)), jsonSnapshot(t, restored(t, want)))
	}
	// An old snapshot must stay restorable: restoring the golden file and
	// snapshotting again gives the same bytes.
	if again := snapshotBytes(t, restored(t, want)); !bytes.Equal(again, want) {
		t.Errorf("golden does not round-trip:\ngot:\n%s\nwant:\n%s", jsonSnapshot(t, restored(t, again)), jsonSnapshot(t, restored(t, want)))
	}
}

// TestRestoreOldVersions restores the golden snapshots older builds
// wrote: version 4 (1.0's, whose machine records lack Unhealthy),
// version 5 (no token records), version 6 (no job dependencies),
// version 7 (machine records without Asleep) and version 8 (no cron
// jobs, no working directories, no mail, a database without owner-policy
// settings), version 9 (no job time limits) and version 10 (no gang
// jobs). Each state is the rich
// state without the
// commands added since, and a snapshot of it now is the current version
// and restores to the same state.
func TestRestoreOldVersions(t *testing.T) {
	for _, tc := range []struct {
		version int
		since   int // richCommands' last commands the version cannot hold
	}{{4, richSince1_0}, {5, richSinceV5}, {6, richSinceV6}, {7, richSinceV7}, {8, richSinceV8}, {9, richSinceV9}, {10, richSinceV10}, {11, richSinceV11}, {12, richSinceV12}, {13, richSinceV13}, {14, richSinceV14}} {
		t.Run(fmt.Sprintf("version %d", tc.version), func(t *testing.T) {
			file := fmt.Sprintf("snapshot_v%d.golden", tc.version)
			old, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatalf("read golden: %v", err)
			}
			if !bytes.HasPrefix(old, fmt.Appendf(nil, `{"format":"netmgr-fsm","version":%d,`, tc.version)) {
				t.Fatalf("testdata/%s is not a version %d snapshot", file, tc.version)
			}
			f := restored(t, old)
			a := newApplier(t)
			cmds := richCommands()
			for _, c := range cmds[:len(cmds)-tc.since] { // the rich state as that build had it
				a.apply(c.typ, c.body)
			}
			// The mail the replayed commands filed is left out: an older
			// build filed none, and a snapshot of its state holds none.
			// The replayed state goes through a snapshot too: a cron
			// job's empty instance list restores as none.
			if got, want := jsonSnapshotWithoutMail(t, f), jsonSnapshotWithoutMail(t, restored(t, snapshotBytes(t, a.f))); !bytes.Equal(got, want) {
				t.Errorf("version %d snapshot restored:\n%s\nwant:\n%s", tc.version, got, want)
			}
			again := snapshotBytes(t, f)
			if want := fmt.Appendf(nil, `{"format":"netmgr-fsm","version":%d,`, fsm.SnapshotVersion); !bytes.HasPrefix(again, want) {
				t.Errorf("a snapshot of a restored version %d state is not version %d: %.60s", tc.version, fsm.SnapshotVersion, again)
			}
			if got, want := jsonSnapshot(t, restored(t, again)), jsonSnapshot(t, f); !bytes.Equal(got, want) {
				t.Errorf("version %d state written as version %d and restored:\n%s\nwant:\n%s", tc.version, fsm.SnapshotVersion, got, want)
			}
		})
	}
}

// v4Header is a version 4 header line announcing machines and jobs.
func v4Header(machines, jobs int) string {
	return fmt.Sprintf(`{"format":"netmgr-fsm","version":4,"index":5,"next_job_id":1,"machines":%d,"jobs":%d}`+"\n", machines, jobs)
}

// jsonSnapshot renders f's state as JSON lines for people: the header
// line, the database, then one line per machine, job, reservation and
// token.
// Tests print it when two snapshots differ.
func jsonSnapshot(tb testing.TB, f *fsm.FSM) []byte {
	tb.Helper()
	return renderSnapshot(tb, f, true)
}

// mailCount is the header's count of mail records.
var mailCount = regexp.MustCompile(`,"mails":[0-9]+`)

// jsonSnapshotWithoutMail is jsonSnapshot without the pending mail.
func jsonSnapshotWithoutMail(tb testing.TB, f *fsm.FSM) []byte {
	tb.Helper()
	return renderSnapshot(tb, f, false)
}

func renderSnapshot(tb testing.TB, f *fsm.FSM, mail bool) []byte {
	tb.Helper()
	header, _, _ := bytes.Cut(snapshotBytes(tb, f), []byte("\n"))
	if !mail {
		header = mailCount.ReplaceAll(header, nil)
	}
	var b bytes.Buffer
	b.Write(header)
	b.WriteByte('\n')
	enc := json.NewEncoder(&b)
	var err error
	encode := func(v any) {
		if err == nil {
			err = enc.Encode(v)
		}
	}
	f.Read(func(v fsm.View) {
		db, _ := v.Database()
		encode(db)
		for _, m := range v.Machines() {
			encode(m)
		}
		for _, j := range v.Jobs() {
			encode(j)
		}
		for _, r := range v.Reservations() {
			encode(r)
		}
		for _, t := range v.Tokens() {
			encode(t)
		}
		if mail {
			for _, m := range v.PendingMail() {
				encode(m)
			}
		}
	})
	if err != nil {
		tb.Fatalf("render snapshot as JSON: %v", err)
	}
	return b.Bytes()
}

// TestRestoreCorrupt feeds Restore every prefix of the golden snapshot and
// the golden with each byte changed: it must fail or succeed, never panic,
// and a prefix must never restore.
func TestRestoreCorrupt(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "snapshot.golden"))
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	for n := range len(golden) {
		if err := restoreInto(newApplier(t).f, golden[:n]); err == nil {
			t.Fatalf("the first %d of %d bytes restored, want an error", n, len(golden))
		}
	}
	for i := range golden {
		bad := bytes.Clone(golden)
		bad[i] ^= 0xa5
		_ = restoreInto(newApplier(t).f, bad)
	}
}
