package fsm

import "errors"

// Rule violations returned in Result.Err. The proposer turns them into
// answers for the user; they never stop a replica.
var (
	// ErrNoSuchJob means the command named a job the database does not hold.
	ErrNoSuchJob = errors.New("no such job")
	// ErrNoSuchInstance means the command named an instance the job lacks.
	ErrNoSuchInstance = errors.New("no such instance")
	// ErrInvalidSpec means a Submit's spec cannot be run as given.
	ErrInvalidSpec = errors.New("invalid job spec")
	// ErrInvalidMachine means a StubJoin's facts cannot describe a machine.
	ErrInvalidMachine = errors.New("invalid machine")
	// ErrJobFinished means the command asked to change a job that has ended.
	ErrJobFinished = errors.New("job has already finished")
)

// ErrInvalidPolicy means a PolicyLoad cannot be applied: an empty
// script, or an op that is not load, clear or error.
var ErrInvalidPolicy = errors.New("invalid site policy")

// ErrInvalidDatabase means a LoadDatabase's declarations contradict
// themselves.
var ErrInvalidDatabase = errors.New("invalid database")

// Queue errors.
var (
	// ErrNoSuchQueue means a job or command named a queue that does not exist.
	ErrNoSuchQueue = errors.New("no such queue")
	// ErrQueueInUse means a queue cannot be removed: it is the default
	// queue, or it holds unfinished jobs.
	ErrQueueInUse = errors.New("queue cannot be removed")
	// ErrReserved means a machine is already reserved by someone else for
	// an overlapping window.
	ErrReserved = errors.New("already reserved")
	// ErrNoSuchMachine means a command named a machine the pool lacks.
	ErrNoSuchMachine = errors.New("no such machine")
	// ErrNotUp means a machine is not up, as what was asked of it needs.
	ErrNotUp = errors.New("machine is not up")
)

// Token errors.
var (
	// ErrNoSuchToken means a TokenRevoke named a token the database does
	// not hold: never issued, or already revoked.
	ErrNoSuchToken = errors.New("no such token")
	// ErrTokenExists means a TokenIssue reused the ID or hash of a token
	// the database holds.
	ErrTokenExists = errors.New("token already exists")
	// ErrInvalidToken means a TokenIssue lacks an ID, user, hash or a
	// lifetime that ends after it begins.
	ErrInvalidToken = errors.New("invalid token")
)
