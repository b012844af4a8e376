// Package owner decides whether a workstation's owner has it back: the
// stub's owner policy, after the ISIS Resource Manager's stub, which went
// to sleep on a console login, keyboard or mouse use, a load above a
// threshold, or a plug-in load monitor's word, and after HTCondor's
// desktop policy (KeyboardIdle, ConsoleIdle, the non-HTCondor load).
//
// A Watch runs the detectors the Config turns on, one file each (login.go
// reads utmp, input.go the access times of input devices and terminals,
// load.go the load average less the stub's own jobs' share, monitor.go a
// site's load-monitor program) and keeps one verdict: the reason the
// machine is asleep ("console login", "load 3.2 > 2"), or "" while it is
// awake. The stub reports the verdict with its lease renewals and acts on
// its changes (suspending, resuming or vacating its jobs).
//
// What it is not: it never talks to the servers, and it decides nothing
// about jobs; it only says what the owner is doing. Its sources are
// settings (Config), so tests and unusual hosts can point them elsewhere.
//
// # Owner policies
//
// The stub decides; one log entry makes every server agree. owner.Watch
// (stub/owner/watch.go) looks every 500 ms at the detectors Config.Owner
// turns on, in order: outside every --available window (window.go over
// client/dblang's Window, the machine's local time), the --load-monitor's
// sleep (monitor.go, run every 5 s), a live USER_PROCESS entry in utmp or a
// logout less than --sleep-on-login ago (login.go, records read with
// encoding/binary; an entry whose pid is gone counts as closed), an input
// device or terminal read within --sleep-on-input (input.go, atimes as
// HTCondor's KeyboardIdle), and the load over --sleep-on-load (load.go:
// /proc/loadavg less the CPU the stub's jobs' process groups used since the
// last look, or the monitor's number). The first that holds is the verdict
// ("console login", "load 3.2 > 2", "outside window"); a source that fails
// counts as awake and is logged once.
//
// *Reporting.* The verdict rides on every lease renewal
// (LeaseRequest.Asleep, a pointer: nil means "not reported", so a renewal
// without it never wakes a machine). handleLease commits MachineAsleep when
// it differs from Machine.Asleep; so the change reaches the log within a
// renewal (0.5 s) plus a commit. A stub sends the field only while the last
// answer carried TakesAsleep, which a leader sets only when every server
// applies level 27 (an older server refuses unknown fields, rule 5); a
// failed renewal clears it until the next answer. applyStubJoin of a
// machine that was not up clears Asleep, as it clears Unhealthy: a stub
// that cannot report must not inherit a sleep it would never end.
//
// *No new work.* Machine.Accepts (checked by applyPlace) is `Usable() &&
// Asleep == ""`; the planner sets MachineView.Awake and AsleepReason, and
// the matcher's awake filter counts its rejections per distinct reason,
// sorted, so --why says "no matching machine is awake: 2 machines are
// asleep (console login)". Asleep, Draining and Unhealthy are independent:
// none clears another. `netstatus -m` shows state asleep with the reason; a
// draining machine shows draining whatever its verdict.
//
// *Running jobs* are the stub's business, not the log's: ownerPolicy
// (stub/ownerpolicy.go) reacts to the watch's change notice at once (the
// measured time from a utmp write to the job in state T is 10-45 ms in the
// tests, well inside the 1 s target) and sweeps every 250 ms while asleep
// (for Starts that arrived before the servers knew). It SIGSTOPs each job's
// process group and cgroup through its supervisor, skipping a job already
// stopped (netkill --suspend: the user's to resume), and SIGCONTs what it
// stopped when the machine wakes. "Stopped" is judged per process group
// (stopped): a member in state T and none in R or S, because a shell whose
// child was stopped between vfork and exec waits in D; while asleep the
// sweep stops again a group it finds running. After --vacate-after (10 min)
// asleep, a restartable job is SIGKILLed with its CHILD_TERM marked
// MachineFault and reason "owner returned", so applyChildTerm queues a new
// attempt at once without counting a restart (the asleep machine is not
// chosen again); the attempt number fences the old one as usual. A
// non-restartable job is killed with that reason, or with --keep-suspended
// stays stopped until the machine wakes. The stopped attempts are listed in
// DATA_DIR/owner-suspended, so a stub restarted meanwhile continues them on
// waking. The fsm's instance stays running while the owner has it stopped
// (its own suspended state is netkill's, whose SIGCONT the leader owes);
// the machine's state says why it does not progress.
//
// *The matcher's load and idle.* With every renewal (under the same
// TakesAsleep handshake) the stub sends OwnLoad, the CPU its jobs' process
// groups used, averaged like the 1-minute load average (owner.GroupsLoad +
// owner.SmoothLoad, time constant 60 s, so a job that just started has
// added little to either), and, when it watches utmp or input devices,
// IdleS, how long ago its owner last used the machine. The leader keeps
// both in its lease table beside the load (a renewal without them forgets
// them); Server.liveness gives the planner `Load − OwnLoad` (the matcher
// adds the load its jobs impose, which would count them twice otherwise)
// and IdleMinutes, which machineView adds as the attribute idle, so a job's
// idle>=30 is an ordinary requirement (a machine that does not watch its
// owner lacks it: "1 lacks attribute idle"). `netstatus -m` shows the whole
// load. Simulated stubs measure no own load.
//
// *Where the settings come from.* The owner policy's settings live in three
// places: the stub's flags, its init file, and the database (machine/mtype
// items sleep_on_login, sleep_on_input, sleep_on_load, load_monitor,
// available, vacate_after, keep_suspended; add_q items vacate_after,
// keep_suspended, suspend). dblang checks them with positions and keeps
// each as canonical text in an `Owner map[string]string` on the declaration
// (durations as nq_maxrun writes them, windows joined by "; "); the server
// also parses the windows at load time with dblang.ParseWindow
// (client/dblang/window.go), the parser the stubs follow them with. They
// are part of the database line of a snapshot (version 9).
//
// The stub learns the database's part from its lease: every renewal answer
// carries LeaseResponse.Owner = the settings of the machine's declaration
// merged over its mtype's (fsm.Database.OwnerSettings) and whether the
// machine is declared. The stub merges flags < init file < database, as the
// scheduler merges attributes (detected < init file < database); for an
// undeclared machine, the settings of the mtype its init file claims come
// below the init file's own, as that mtype's attributes do. A change
// reconfigures the watch in place (owner.Watch.Reconfigure: detectors whose
// setting did not change keep what they saw; the load monitor restarts) and
// the policy's machine-wide vacate_after/keep_suspended. The watch and the
// policy therefore run on every stub, idle when nothing is on. An older
// stub ignores the field; an older server sends none and the stub keeps
// what it has.
//
// *Per queue.* A Start carries its queue's policy
// (StartRequest.OwnerPolicy), kept in the attempt's outbox record so a
// restarted stub still applies it; ownerpolicy.go decides vacate per
// attempt: the machine's vacate_after/keep_suspended overridden by the
// queue's; suspend=no means vacate_after 0 and never kept. None of this is
// decided in the state machine: the queue's declaration is state, the
// decisions are the stub's.
//
// *Mixed versions.* No new command type: LoadDatabase and SetQueue carry
// the new fields, which a server that predates them would apply without. So
// an admin's load of a database with owner settings (`netmgr admin load`,
// handleLoadDatabase) is refused with 409 "upgrade them all first" until
// every server applies level 31 (fsm.FeatureOwnerSettings,
// server/database.go), the level they came with. The initial --database is
// loaded by the first leader of a new group, whose servers were all started
// for it.
//
// *Determinism.* The verdict, windows included, is decided on the stub from
// its own clock and files; the log holds only its result, stamped by the
// leader, and the settings as the database declares them. Apply reads no
// clock. idle>= takes minutes, as the job language takes plain numbers.
package owner
