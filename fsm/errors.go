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

// ErrInvalidDatabase means a LoadDatabase's declarations contradict
// themselves.
var ErrInvalidDatabase = errors.New("invalid database")
