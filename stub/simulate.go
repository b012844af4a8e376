package stub

import (
	"maps"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/dblang"
)

// Simulation makes a stub simulate its jobs instead of running them, so
// that many stubs fit in one process for tests and benchmarks at scale
// (`netmgr sim`). Everything above the fork is the real stub's: the API,
// Start handling and its lease check, the exec dir, the outbox, the
// sender, the lease keeper, gossip and facts. Only the supervisor host is
// replaced by simulated supervisors in the stub's process
// (supervisor.Simulator), in the same supervisor directories, which push
// each job's end to the stub as the host does on its lifeline and take
// signals by a call instead of on a socket: the job a simulated
// supervisor pretends to run gets a fake but unique pid (above the
// kernel's largest pid, so it names no process), runs for RunTime and
// exits 0. A signal ends it at once with the signal's exit status
// (128+signal), as the default disposition would: STOP, TSTP, TTIN and TTOU pause it and CONT resumes
// it (time stopped does not count towards RunTime), CHLD, URG and WINCH
// are ignored; a grace SIGKILLs it later as the real supervisor does. A
// run limit (MaxRunSeconds) ends it with SIGTERM and its Reason; memory
// limits and the supervisor's own lease guard are not simulated (the
// stub's lease keeper still stops restartable jobs). The binary must
// exist and be executable, or the attempt fails as an exec would.
//
// A simulated supervisor leaves result.json but no state.json, so a stub
// restarted on the same DataDir reports the attempts that had ended and
// reports those still running as lost (exit code -1, "lost: supervisor
// gone"): there is no process to reattach to. Simulated supervisors
// outlive their stub's Shutdown as real ones do, until their job ends.
//
// A simulated stub runs no cgroups: Config.CgroupParent is set to
// NoCgroups.
type Simulation struct {
	// RunTime is how long every simulated job runs before it exits 0;
	// 0 ends it at once.
	RunTime time.Duration
	// Slots, when positive, is the machine's nprocs claim (how many
	// instances it runs at once), made as an init file makes it: the
	// init file's own nprocs is overridden, and the servers' database
	// still overrides both.
	Slots int
	// MemoryMB, when positive, is the machine's mem claim in MB, in the
	// same way.
	MemoryMB int64
}

// simulate makes s's facts carry sim's claims when sim is not nil (its
// runner got a supervisor.Simulator from newRunner). New calls it before
// anything runs.
func (s *Stub) simulate(sim *Simulation) {
	if sim == nil || (sim.Slots <= 0 && sim.MemoryMB <= 0) {
		return
	}
	s.facts.init = sim.claims(s.facts.init)
}

// claims returns init (nil without an init file) with sim's claims made,
// leaving init unchanged.
func (sim *Simulation) claims(init *dblang.Init) *dblang.Init {
	out := &dblang.Init{}
	if init != nil {
		c := *init
		out = &c
	}
	out.Attrs = maps.Clone(out.Attrs)
	if out.Attrs == nil {
		out.Attrs = make(map[string]float64)
	}
	if sim.Slots > 0 {
		out.Attrs["nprocs"] = float64(sim.Slots)
	}
	if sim.MemoryMB > 0 {
		out.Attrs["mem"] = float64(sim.MemoryMB)
	}
	return out
}

// SimulatedFacts returns the facts a simulated machine of this host
// reports, its name and addresses left empty: the host's, with the init
// file's (initFile, "" for none) and sim's claims, as a simulated stub
// reports them. package stub/simpool's machines share them.
func SimulatedFacts(initFile string, sim Simulation) (client.Facts, error) {
	f := newFactSource()
	if initFile != "" {
		init, err := readInit(initFile)
		if err != nil {
			return client.Facts{}, err
		}
		f.init = init
	}
	if sim.Slots > 0 || sim.MemoryMB > 0 {
		f.init = sim.claims(f.init)
	}
	return f.facts("", "")
}
