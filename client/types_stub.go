package client

import (
	"fmt"
	"time"
)

// StartRequest asks a stub to start one attempt of an instance. A stub
// treats a repeated (JobID, Instance, Attempt) as already done.
type StartRequest struct {
	JobID    uint64   `json:"job_id"`
	JobName  string   `json:"job_name"`
	Owner    string   `json:"owner"`
	Instance int      `json:"instance"`
	Attempt  uint64   `json:"attempt"`
	Binary   string   `json:"binary"`
	Args     []string `json:"args,omitempty"`
	Env      []string `json:"env,omitempty"`
	// Dir, when set, is the directory the job starts in (JobSpec.Dir);
	// the job's stdout and stderr stay in its exec dir.
	Dir string `json:"dir,omitempty"`
	// CopyInBlob, when set, is the sha256 of the archive of the job's
	// copy_in files, which the stub fetches from a server, checks and
	// unpacks into the exec dir before the job starts; CopyInSize is its
	// size. CopyOut are the paths (globs allowed) it takes from the exec
	// dir when the attempt ends, up to CopyOutMax bytes, and has the
	// servers keep (KeepOutputs) before it reports the end.
	CopyInBlob string   `json:"copy_in_blob,omitempty"`
	CopyInSize int64    `json:"copy_in_size,omitempty"`
	CopyOut    []string `json:"copy_out,omitempty"`
	CopyOutMax int64    `json:"copy_out_max,omitempty"`
	// Checkpoint are the paths (JobSpec.Checkpoint) the stub takes from
	// the exec dir when the attempt exits with CheckpointExit, and has
	// the servers keep (KeepCheckpoint) before it reports the end, up to
	// CopyOutMax bytes. CheckpointBlob, when set, is the sha256 of the
	// instance's newest kept checkpoint, of CheckpointSize bytes, which
	// the stub unpacks into the exec dir before the job starts, as it
	// does copy_in. CheckpointSignal is the signal (a name without SIG)
	// that asks the job to checkpoint and exit before the stub stops it
	// for the machine's owner, GraceMS before SIGKILL. A stub that
	// predates them ignores them.
	Checkpoint       []string `json:"checkpoint,omitempty"`
	CheckpointExit   int      `json:"checkpoint_exit,omitempty"`
	CheckpointBlob   string   `json:"checkpoint_blob,omitempty"`
	CheckpointSize   int64    `json:"checkpoint_size,omitempty"`
	CheckpointSignal string   `json:"checkpoint_signal,omitempty"`
	// Servers are HTTP addresses of the server group, a hint for where to
	// send CHILD events.
	Servers []string `json:"servers,omitempty"`
	// MaxRunSeconds, when positive, is the attempt's run limit, the
	// smaller of the queue's and the job's time limit: the stub sends
	// SIGTERM to the group when it passes and SIGKILL GraceMS later.
	MaxRunSeconds int64 `json:"max_run_seconds,omitempty"`
	// MaxMemMB, when positive, is the attempt's memory limit, the smaller
	// of the queue's and the memory the job asks: the stub kills the group
	// when its resident memory exceeds it.
	MaxMemMB int64 `json:"max_mem_mb,omitempty"`
	// GraceMS is the time between SIGTERM and SIGKILL for limits.
	GraceMS int64 `json:"grace_ms,omitempty"`
	// WarnSignal, when set, is the signal (a name without SIG, "USR1")
	// the stub sends the group WarnLeadMS before the run limit
	// (MaxRunSeconds) passes: the job's warning (signal=SIG@LEAD). A stub
	// that predates it ignores it.
	WarnSignal string `json:"warn_signal,omitempty"`
	WarnLeadMS int64  `json:"warn_lead_ms,omitempty"`
	// Restartable is set for jobs with a restart policy: the servers may
	// start this instance elsewhere once the stub's lease has expired, so
	// the stub must stop the attempt when its lease runs out.
	Restartable bool `json:"restartable,omitempty"`
	// OwnerPolicy is the job's queue's desktop policy (vacate_after,
	// keep_suspended, suspend in the database language's canonical text):
	// how the stub treats the job when the machine's owner returns,
	// overriding the machine's own; nil to follow the machine's. A stub
	// that predates it ignores it.
	OwnerPolicy map[string]string `json:"owner_policy,omitempty"`
	// MachineIndex is the Raft index that last changed the machine's
	// record (its ModifyIndex) when the leader sent this Start. A lease
	// expiry and its restoration both raise it, and lease renewals tell
	// the stub its current value (LeaseResponse.MachineIndex): a
	// restartable Start with an older index was sent before the machine
	// last lost its lease, and its instance may run elsewhere by now, so
	// the stub refuses it. The leader always sets it.
	MachineIndex uint64 `json:"machine_index,omitempty"`
	// GangHosts, for an instance of a gang job (JobSpec.Gang), names the
	// machine of every instance of the gang in instance order, this one's
	// at index Instance (its rank). The stub gives the job the list
	// (NETMGR_GANG_HOSTS, NETMGR_GANG_RANK, NETMGR_GANG_SIZE) and writes
	// it, one machine a line, to the host file in the exec dir
	// (NETMGR_GANG_HOSTFILE). Nil for other jobs; a stub that predates it
	// ignores it.
	GangHosts []string `json:"gang_hosts,omitempty"`
	// CPUs, when above 1, is how many CPUs the attempt may use: its
	// cgroup's cpu.max, or with ExclusiveCPUs a cpuset of that many.
	// GPUs are the indices of the machine's GPUs it holds: its
	// CUDA_VISIBLE_DEVICES and NETMGR_GPUS name exactly them, and the
	// stub lets it open no other GPU device where it can. DiskMB, when
	// positive, is the exec-dir space it may use: past it the stub kills
	// it with reason "disk: ...". A stub that predates them ignores them;
	// the leader sends them only once every server applies level 40.
	CPUs          int   `json:"cpus,omitempty"`
	ExclusiveCPUs bool  `json:"exclusive_cpus,omitempty"`
	GPUs          []int `json:"gpus,omitempty"`
	DiskMB        int64 `json:"disk_mb,omitempty"`
}

// StartBatchRequest asks a stub to start several attempts in one request,
// the body of POST /v1/starts. The stub runs them concurrently. Repeating
// a Start for the same (job, instance, attempt) is harmless: it starts
// nothing.
//
// The server commits each started attempt's CHILD_REGISTER from the
// answer (StartResult.Register); the stub sends it again only just before
// the attempt's CHILD_TERM. A stub answers a repeated Start of an attempt
// it runs or ran with its REGISTER again, so a server that lost the
// answer gets it by sending the Start again.
type StartBatchRequest struct {
	Starts []StartRequest `json:"starts"`
}

// StartBatchResponse answers POST /v1/starts: one result per Start of the
// request, in the same order.
type StartBatchResponse struct {
	Results []StartResult `json:"results"`
}

// StartResult is the outcome of one Start of a batch. Status is an HTTP
// status: 200 when the stub took it (Started is false when the attempt
// was already known), 400 for a request it cannot run, 409 when the
// attempt is restartable and the stub's lease has expired, 503 when the
// stub is shutting down, 500 for any other failure. Error says why when
// Status is not 200.
type StartResult struct {
	Status  int    `json:"status"`
	Started bool   `json:"started,omitempty"`
	Error   string `json:"error,omitempty"`
	// Register is the attempt's CHILD_REGISTER when a supervisor runs (or
	// ran) the attempt, whether this Start started it or an earlier one
	// did; nil when its exec failed.
	Register *ChildEvent `json:"register,omitempty"`
}

// AttemptRef names one attempt of one instance.
type AttemptRef struct {
	JobID    uint64 `json:"job_id"`
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
}

// String names the attempt as "job.instance.attempt", e.g. "12.0.1".
func (r AttemptRef) String() string {
	return fmt.Sprintf("%d.%d.%d", r.JobID, r.Instance, r.Attempt)
}

// LeaseRequest renews a stub's lease, the body of POST /v1/lease. Running
// lists the attempts the stub runs now.
type LeaseRequest struct {
	Machine string       `json:"machine"`
	Running []AttemptRef `json:"running,omitempty"`
	// Load is the machine's load average. A stub sends it once a server's
	// answer said it takes it (LeaseResponse.TakesLoad), as every server
	// does; nil when the stub could not read it.
	Load *float64 `json:"load,omitempty"`
	// Token is the token of the last answer the stub received, echoed
	// unread: it proves to the leader that the stub holds the lease that
	// answer granted (see LeaseToken). Nil before the first answer.
	Token *LeaseToken `json:"token,omitempty"`
	// TokenAgeMS is how long before sending this request the answer that
	// carried Token arrived: the leader adds it to Token.Issued for a
	// later bound on when this request was sent.
	TokenAgeMS int64 `json:"token_age_ms,omitempty"`
	// Problem is why the stub drains its machine ("exec dir full: 0 B
	// free", "health check: ..."); empty while the machine is healthy.
	// The leader records a change (a MachineHealth command): the machine
	// takes no new work while it has a problem.
	Problem string `json:"problem,omitempty"`
	// Asleep is why the machine's owner policy puts it to sleep ("console
	// login", "load 3.2 > 2"); empty while it is awake, nil when the stub
	// does not report (the record stays as it is). The leader records a
	// change (a MachineAsleep command): the machine takes no new work
	// while it sleeps. A stub sends it only while the last answer said
	// the servers take it (LeaseResponse.TakesAsleep): a server that
	// predates it refuses a request with a field it does not know.
	Asleep *string `json:"asleep,omitempty"`
	// OwnLoad is the part of Load the stub's own jobs caused (their CPU,
	// averaged as the load average is); the leader's scheduler scores the
	// machine by Load less OwnLoad, plus the load its jobs impose. Sent
	// under the same condition as Asleep.
	OwnLoad *float64 `json:"own_load,omitempty"`
	// IdleS is how many seconds ago the machine's owner last used it (a
	// session in utmp, keyboard or mouse input); nil when the stub does
	// not watch for that. Jobs ask for idle machines with idle>=MINUTES.
	// Sent under the same condition as Asleep.
	IdleS *int64 `json:"idle_s,omitempty"`
	// Restarting asks for a restart lease: the stub is stopping to start
	// again, its jobs running on under the supervisor host. A leader that
	// grants it (LeaseResponse.Restarting) has recorded the machine
	// restarting and grants a lease of the server's restart grace; the
	// stub sends no renewal after it.
	Restarting bool `json:"restarting,omitempty"`
	// Facts are the machine's facts, as GET /v1/facts on its stub gives
	// them. A stub sends them with its first renewal and then while the
	// answers ask for them (LeaseResponse.WantFacts): the leader joins
	// the machine with them instead of fetching them over a connection
	// (a TLS handshake) of its own. A server that predates the field
	// refuses a request with it; the stub then stops sending it.
	Facts *Facts `json:"facts,omitempty"`
}

// LeaseToken is the leader's receipt for a lease it granted, which the
// stub echoes in its next renewal. Issued is when the leader granted it
// and Basis a time before which the granted request was not sent: the
// Issued of the token that request echoed plus its TokenAgeMS (0 when it
// echoed none of this leadership), both in nanoseconds of the
// leadership's own clock. A stub that echoes a token therefore holds a
// lease until at least Basis plus the lease duration, and tells no other
// stub that its lease ran out from when it sent the request until
// OutageVouchWithin before that (see OutageStatement, OutageVouchAfter).
type LeaseToken struct {
	Leadership uint64 `json:"leadership"`
	Issued     int64  `json:"issued"`
	Basis      int64  `json:"basis,omitempty"`
	// Pool and GraceMS are the PoolSize and OutageGraceMS of the answer
	// that carried the token.
	Pool    int   `json:"pool,omitempty"`
	GraceMS int64 `json:"grace_ms,omitempty"`
	// LeaseMS is the LeaseMS of the answer that carried the token: a
	// stub that echoes it held that long from the renewal that won it.
	LeaseMS int64 `json:"lease_ms,omitempty"`
}

// LeaseResponse grants a lease: it holds for LeaseMS from when the stub
// sent the request; the stub renews every RenewMS.
type LeaseResponse struct {
	LeaseMS int64 `json:"lease_ms"`
	RenewMS int64 `json:"renew_ms"`
	// TakesLoad is set by servers that read LeaseRequest.Load: the stub
	// then reports its load with every renewal instead of gossiping each
	// change to the whole pool.
	TakesLoad bool `json:"takes_load,omitempty"`
	// TakesAsleep is set by a leader whose every fellow server records
	// LeaseRequest.Asleep (MachineAsleep): the stub then reports its owner
	// policy's verdict with its renewals.
	TakesAsleep bool `json:"takes_asleep,omitempty"`
	// MachineIndex is the machine record's ModifyIndex after this
	// renewal (see StartRequest.MachineIndex); 0 when the machine has not
	// joined yet.
	MachineIndex uint64 `json:"machine_index,omitempty"`
	// Token is the receipt to echo in the next renewal.
	Token *LeaseToken `json:"token,omitempty"`
	// PoolSize is how many machines the database knows, and Position the
	// machine's place among them in the order they first joined (from 1;
	// 0 when it has not joined). A stub whose lease ran out keeps its
	// restartable work only while a majority of those PoolSize machines
	// say their leases ran out too (see OutageStatement).
	PoolSize int `json:"pool_size,omitempty"`
	Position int `json:"position,omitempty"`
	// OutageGraceMS is how long past its lease a stub may keep
	// restartable work while a majority of the pool is cut off from the
	// servers too; 0 for no such grace, -1 for no limit.
	OutageGraceMS int64 `json:"outage_grace_ms,omitempty"`
	// Owner is the owner-policy settings the database gives the machine,
	// sent with every renewal so that a stub follows a database loaded
	// at run time. Nil from a server that predates them (the stub keeps
	// what it has); a stub that predates them ignores the field.
	Owner *OwnerSettings `json:"owner,omitempty"`
	// Restarting is set when the leader granted the restart lease a
	// LeaseRequest.Restarting asked for: LeaseMS is then the restart
	// grace. Unset, the stub got no restart lease and leaves the pool.
	Restarting bool `json:"restarting,omitempty"`
	// WantFacts asks the stub for its facts with the next renewal
	// (LeaseRequest.Facts): the leader holds none for it and does not
	// hold the machine up at the address it gossips.
	WantFacts bool `json:"want_facts,omitempty"`
	// Streams is set by a leader that takes renewals on a lease stream
	// (LeaseStreamPath): the stub's next renewals go there.
	Streams bool `json:"streams,omitempty"`
	// RenewVia is the API address (host:port) of a server that does not
	// lead, on whose lease stream the stub renews from now on: in a pool
	// of --lease-relay-from machines or more the leader spreads the
	// stubs' streams over its followers, which pass the renewals on to it
	// in batches (LeaseRelayPath), so that its sockets carry a few
	// batches a second instead of every stub's renewal. Empty: renew on
	// the leader's stream.
	RenewVia string `json:"renew_via,omitempty"`
	// Relayed is set on an answer that a server that does not lead passed
	// on from the leader: it is the leader's grant, but its stream is not
	// the leader's.
	Relayed bool `json:"relayed,omitempty"`
}

// LeaseRelayPath is where a server that does not lead passes the leader
// the renewals its lease streams took, in a batch: one LeaseRequest a
// line, as the stubs sent them, answered with a LeaseStreamAnswer a line
// in the same order. Only servers may call it; the relaying server has
// checked that each stub's certificate names the renewal's machine.
const LeaseRelayPath = "/v1/lease/relay"

// LeaseStreamPath is the lease stream: one long-lived POST from a stub
// to the leader whose body is the stub's LeaseRequests and whose answer
// is a LeaseStreamAnswer for each, one JSON document a line, in order.
// A renewal on it costs the leader a few frames instead of a request's
// setup, headers and middleware. Every server takes one: a server that
// does not lead holds a renewal until a leader is known (as it holds a
// plain one), then grants it if it leads, else passes it to the leader
// (LeaseRelayPath) and answers with the leader's grant, or 503 when it
// could not, and keeps the stream, so a stub keeps one open with each
// server and goes on with the new leader's when the leader changes
// (lease_standby.go), or renews on a follower's where the leader names
// one (LeaseResponse.RenewVia).
const LeaseStreamPath = "/v1/lease/stream"

// LeaseStreamAnswer answers one LeaseRequest on a lease stream: Status
// is the HTTP status the plain request would have been answered with;
// Lease is set when it is 200, Error otherwise.
type LeaseStreamAnswer struct {
	Status int            `json:"status"`
	Lease  *LeaseResponse `json:"lease,omitempty"`
	Error  string         `json:"error,omitempty"`
	// Leader is the API address (host:port) of the leader, in a 503 from
	// a server that does not lead and knows which does, and in an answer
	// a server relayed from the leader (LeaseResponse.Relayed).
	Leader string `json:"leader,omitempty"`
}

// OwnerSettings is the owner-policy settings the database gives a
// machine (LeaseResponse.Owner).
type OwnerSettings struct {
	// Settings are by name (sleep_on_login, sleep_on_input,
	// sleep_on_load, load_monitor, available, vacate_after,
	// keep_suspended) in the database language's canonical text (see
	// dblang.OwnerDuration, OwnerWindows, OwnerYes); empty when the
	// database gives none.
	Settings map[string]string `json:"settings,omitempty"`
	// Declared is set when the database declares the machine: its
	// settings then win over the stub's init file's, as attributes do;
	// otherwise they are those of the mtype the init file claims, and the
	// init file's own win over them.
	Declared bool `json:"declared,omitempty"`
}

// The outage protocol's timing, which the leader's expiry rule counts on
// (expirable, server/lease/expiry). A stub says its lease ran out (OutageStatement)
// once less than OutageVouchFor its renewal interval is left, so stubs
// whose last renewals were a renewal interval apart agree that the
// servers are gone. It uses an OutageWitness answer only when it arrives
// within OutageAnswerWithin of asking (statements that come later might
// have been made after the servers came back), and one answer lets it
// keep restartable work for OutageCoverFor after it asked.
//
// OutageCoverFor is twice OutageAnswerWithin so that even an answer at
// the end of its time leaves the stub 0.4 s of cover, about four asks: a
// stub starved of CPU for a few hundred milliseconds (the server group
// coming back and electing a leader on the same cores) keeps its work.
// The leader pays for it in its window (server.statementWindow): a
// machine counts against an expiry only with a renewal that arrived in
// an interval LeaseDuration - OutageCoverFor - OutageAnswerWithin -
// OutageVouchFor(interval) long (0.9 s with renewals every 0.5 s), which
// the stubs' renewals fill (server/lease.TimingFor makes the lease long
// enough for any interval). OutageVouchWithin is the vouching of a
// stub renewing every 0.5 s, a pool of up to 1,666 machines.
const (
	OutageVouchWithin  = 900 * time.Millisecond
	OutageAnswerWithin = 400 * time.Millisecond
	OutageCoverFor     = 800 * time.Millisecond
)

// OutageVouchFor is how long before its lease runs out a stub renewing
// every renew says it did: the interval plus 0.4 s.
func OutageVouchFor(renew time.Duration) time.Duration {
	return renew + OutageVouchWithin - 500*time.Millisecond
}

// MaxRenewEvery is the longest renewal interval a leader grants
// (server/lease's TimingFor: a pool of 10,000 machines or more).
const MaxRenewEvery = 3 * time.Second

// LeaseRound returns how long a stub's renewal round lasts and how long
// it waits in it for the leader before it asks the other servers too
// (WithPatience), at renewal interval every, for a stub whose round and
// patience at 0.5 s renewals are round and patience: those, and at a
// larger pool's longer interval (with its longer lease) a patience of
// half the interval, at most MaxRenewEvery's, the others keeping the rest
// of the round as before. A leader of 10,000 machines that stalled up to
// a second lost their renewals to the followers, each first a TLS
// handshake there if the connection was cold.
func LeaseRound(every, round, patience time.Duration) (time.Duration, time.Duration) {
	long := max(patience, min(every, MaxRenewEvery)/2)
	return long + round - patience, long
}

// OutageVouchAfter is how long a stub that said its lease ran out goes on
// saying so after the renewal that ended it. The servers come back to
// the stubs over a second or more, not at one instant (a partition
// healing route by route, connections redialled, a leader answering a
// burst), and a stub still cut off keeps its work only while a majority
// says so: the stubs back first must not take its cover away at once.
// While it says so, a stub echoes no token in its renewals, so no lease
// proof the leader holds claims it silent meanwhile (see LeaseToken).
// It is the vouching of a stub renewing every 0.5 s; a larger pool's
// stubs vouch longer (OutageVouchAfterFor).
const OutageVouchAfter = 2 * time.Second

// OutageVouchAfterFor is how long a stub renewing every `every` goes on
// saying its lease ran out after the renewal that ended it:
// OutageVouchAfter, plus four times what the interval exceeds 0.5 s by
// (6 s at 1.5 s, a pool of 5,000; 12 s at MaxRenewEvery). A larger pool
// comes back more slowly, over about four intervals after the election:
// a leader lets go of the renewals its followers held at half the pool's
// renewal rate (two intervals for all of them: server's leaseHold), a
// stub whose renewal failed tries again at a random point of up to an
// interval later (LeaseRetryWait), and its round lasts up to another.
// With a fixed 2 s, 5,000 simulated machines after a pause of every
// server lost their majority 2-3 s after the first were back, the last
// not renewed until 7.6 s after the resume. Vouching longer only delays
// the leader's next proofs of held leases, so the servers expire a
// machine that died during the outage later, never sooner.
func OutageVouchAfterFor(every time.Duration) time.Duration {
	return OutageVouchAfter + 4*max(every-500*time.Millisecond, 0)
}

// OutageStatement is a stub's answer to GET /v1/outage: whether its own
// lease has run out, or will within OutageVouchWithin, or did less than
// OutageVouchAfter before its last renewal's answer. A stub says
// Expired only when it knows its place in the pool (Position, PoolSize
// from its last renewal).
type OutageStatement struct {
	Machine  string `json:"machine"`
	Expired  bool   `json:"expired"`
	Position int    `json:"position,omitempty"`
	PoolSize int    `json:"pool_size,omitempty"`
	// ProvenPool is the pool size the leader knows this stub knows: that
	// of the token echoed in its last renewal the leader answered. Until
	// it reaches the pool's size, the leader does not declare this
	// machine's lease expired within the outage grace (the stub might be
	// counting a smaller pool).
	ProvenPool int `json:"proven_pool,omitempty"`
}

// OutageWitness is a stub's answer to POST /v1/outage/witness: what the
// stubs it could reach, in one round that began after the request
// arrived, said. In a pool of at most OutageFanOut stubs it holds their
// Statements; in a larger one a witness asks through a tree of stubs and
// holds only their Tally. A stub that predates the tally sends no Tally,
// and reads a large pool's answer as no statement at all: it stops its
// restartable work in an outage, as a stub cut off alone does.
type OutageWitness struct {
	Statements []OutageStatement `json:"statements"`
	Tally      *OutageTally      `json:"tally,omitempty"`
}

// OutageTally sums the statements of the stubs of a range of the pool
// (GET /v1/outage/tally) or of the whole pool (OutageWitness.Tally):
// Expired distinct machines said their leases ran out, each counted only
// within the pool as its own stub knew it (its position at most the
// PoolSize of its statement), and Pool is the largest pool a statement
// knew, so that every machine counted lies within Pool.
type OutageTally struct {
	Expired  int `json:"expired"`
	Pool     int `json:"pool"`
	Answered int `json:"answered"`
}

// Add sums o into t: the ranges must hold distinct machines.
func (t *OutageTally) Add(o OutageTally) {
	t.Expired += o.Expired
	t.Pool = max(t.Pool, o.Pool)
	t.Answered += o.Answered
}

// OutageFanOut bounds how many stubs one outage witness round asks
// itself: a pool of more is split, in name order, into at most this many
// ranges, each tallied by its first stub (GET /v1/outage/tally, split
// again past OutageFanOut squared), so a round costs every stub a bounded
// number of requests and the pool O(N) in all, where one witness asking
// every stub and answering every stub with every statement cost O(N^2).
const OutageFanOut = 128

// SignalRequest asks a stub to signal the process group of an attempt.
type SignalRequest struct {
	JobID    uint64 `json:"job_id"`
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
	// Signal is a name such as "TERM", "KILL", "INT"; "TERM" when empty.
	Signal string `json:"signal,omitempty"`
	// GraceMS, when positive, sends SIGKILL to the group if it is still
	// alive that many milliseconds after Signal.
	GraceMS int64 `json:"grace_ms,omitempty"`
}

// Child event kinds: the paper's CHILD_REGISTER and CHILD_TERM.
const (
	ChildRegister = "register"
	ChildTerm     = "term"
)

// ChildEvent is a stub's report that an attempt started or ended, an event
// of POST /v1/children.
type ChildEvent struct {
	Kind     string    `json:"kind"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	At       time.Time `json:"at"`
	PID      int       `json:"pid,omitempty"`
	ExitCode int       `json:"exit_code"`
	Signal   string    `json:"signal,omitempty"`
	// Error is set when the binary could not be started at all.
	Error string `json:"error,omitempty"`
	// Reason is set when the stub ended the attempt itself: "timeout: run
	// limit of 3h20m0s exceeded", "memory: memory limit of 20 MB
	// exceeded".
	Reason   string `json:"reason,omitempty"`
	UserMS   int64  `json:"user_ms,omitempty"`
	SysMS    int64  `json:"sys_ms,omitempty"`
	MaxRSSKB int64  `json:"max_rss_kb,omitempty"`
	// Leftovers are the processes of the job still alive after its first
	// process ended (daemonized children, a forgotten `&`); the supervisor
	// killed them. Set on a CHILD_TERM only.
	Leftovers []Leftover `json:"leftovers,omitempty"`
	// MachineFault is set on a CHILD_TERM when the attempt ended because
	// of its machine, not its job: the stub could not make the attempt's
	// directory or output files, or its execution or data directory was
	// full (Error or Reason says which). The servers queue the instance
	// again without counting a restart, once every server knows the
	// field.
	MachineFault bool `json:"machine_fault,omitempty"`
}

// Leftover is a process that outlived its job's first process and was
// killed so that no orphan survives the job.
type Leftover struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"` // the process's name from /proc/PID/comm
}

// ReasonLeaseExpired is the Reason of an attempt its stub stopped because
// its lease ran out; the servers start such an instance again elsewhere.
const ReasonLeaseExpired = "lease expired: the servers may run it elsewhere"

// ChildEventBatch is the body of POST /v1/children: a stub's CHILD events,
// an attempt's in the order they happened.
type ChildEventBatch struct {
	Events []ChildEvent `json:"events"`
}

// ChildEventBatchResponse answers POST /v1/children with one result per
// event, in the order sent.
type ChildEventBatchResponse struct {
	Results []ChildEventResult `json:"results"`
}

// ChildEventResult is the outcome of one event of a batch: committed at
// Index, or refused with Error, in which case resending it cannot help.
// Stale is true when the event was for an attempt that is no longer
// current: it was recorded and changed nothing, and the stub should not
// resend it.
type ChildEventResult struct {
	Index uint64 `json:"index,omitempty"`
	Stale bool   `json:"stale,omitempty"`
	Error string `json:"error,omitempty"`
}

// Roles carried in gossip metadata.
const (
	RoleServer = "server"
	RoleStub   = "stub"
)

// NodeMeta is the memberlist metadata every server and stub gossips.
// Encoded as JSON it must stay under memberlist's 512-byte limit.
type NodeMeta struct {
	Role string `json:"r"`
	HTTP string `json:"h"`
	// Raft and Expect are set by servers: the Raft address and the
	// --bootstrap-expect value.
	Raft   string `json:"ra,omitempty"`
	Expect int    `json:"e,omitempty"`
	// Load is the stub's load average, refreshed as it changes.
	Load float64 `json:"l,omitempty"`
	// Leader is set by the server that leads, from when it wins an
	// election until it loses leadership: a hint that lets a stub that
	// joins send its first lease renewal to the leader rather than
	// through a follower. Answers (client.LeaderHeader) correct it.
	Leader bool `json:"ld,omitempty"`
	// Level is set by servers: the highest Raft command type the server
	// applies. Every server sets it; a member that gossips none counts as
	// 1.0 (21).
	Level int `json:"cl,omitempty"`
	// Leaving is set by a stub shutting down cleanly, just before it
	// leaves the pool, so that the servers log its departure as news,
	// not as a failure.
	Leaving bool `json:"lv,omitempty"`
	// ExecUsed is set by stubs: the bytes the files in the exec dir
	// take, gossiped when it changes by a tenth or more and at least
	// 1 MiB (so 0 until it reaches 1 MiB), since a change goes to every
	// member of the pool.
	ExecUsed int64 `json:"xu,omitempty"`
}
