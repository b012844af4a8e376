package main

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/server/servertest"
)

// scalePoolPerProcess is how many simulated machines one `netmgr sim`
// process runs. Each keeps a lease stream with every server, a
// connection to the leader and the leader's for Starts (5 open files a
// machine with --own-address), which for 10,000 in one process is 2.5
// times this host's hard limit of 20,000; 3,500 a process keep every
// machine's streams with the followers open, as a real stub's are, so a
// change of leader costs no handshakes.
const scalePoolPerProcess = 3500

// poolSim is the shared simulator of one pool, split over processes.
type poolSim struct {
	procs []*poolSimProc
}

// poolSimProc is one `netmgr sim` process, taking commands on its standard
// input.
type poolSimProc struct {
	*simProc
	in io.WriteCloser
}

// startPoolSim starts n machines named prefix-0 ... in as many `netmgr
// sim` processes as scalePoolPerProcess asks, each machine on a loopback
// address of its own (--own-address: 127.(77+ROUND).0.1 and up, each
// size's range its own), and returns once all have joined.
func startPoolSim(c *servertest.ProcCluster, bin, dir, prefix string, round, n int, joinRate float64) (*poolSim, error) {
	procs := (n + scalePoolPerProcess - 1) / scalePoolPerProcess
	base := netip.AddrFrom4([4]byte{127, byte(77 + round), 0, 1})
	sim := &poolSim{}
	for k := range procs {
		first := k * n / procs
		count := (k+1)*n/procs - first
		host := addrPlus(base, first)
		// The pace is the pool's: each process takes its share.
		p, err := startPoolSimProc(c, bin, dir, prefix, host, first, count, n > scalePoolPacedOver, joinRate/float64(procs))
		if err != nil {
			sim.stop()
			return nil, err
		}
		sim.procs = append(sim.procs, p)
	}
	for _, p := range sim.procs {
		if err := p.await(regexp.MustCompile(`(?m)^joined \d+ machines in `), 0, scalePoolJoinWait); err != nil {
			sim.stop()
			return nil, fmt.Errorf("%w; its log ends:\n%s", err, simLogs([]*simProc{p.simProc}, 3000))
		}
	}
	if err := sim.introduce(); err != nil {
		sim.stop()
		return nil, err
	}
	return sim, nil
}

// stubLine is a sim process's line for one of its machines.
var stubLine = regexp.MustCompile(`(?m)^stub (\S+) api https?://(\S+)$`)

// introduce tells each process of a pool split over several two
// machines of each other process (the first two it listed: the scale
// suite kills one machine, and a process must still reach the others),
// so that their outage rounds count the whole pool ('outage-peers'; a
// real pool's witness reaches every stub).
func (s *poolSim) introduce() error {
	if len(s.procs) < 2 {
		return nil
	}
	heads := make([]string, len(s.procs))
	for k, p := range s.procs {
		b, err := os.ReadFile(p.log)
		if err != nil {
			return fmt.Errorf("sim outage peers: %w", err)
		}
		var ms []string
		for _, m := range stubLine.FindAllSubmatch(b, 2) {
			ms = append(ms, string(m[1])+"@"+string(m[2]))
		}
		if len(ms) == 0 {
			return fmt.Errorf("sim outage peers: %s lists no machine", p.log)
		}
		heads[k] = strings.Join(ms, ",")
	}
	for k, p := range s.procs {
		others := slices.Delete(slices.Clone(heads), k, k+1)
		if err := p.command("outage-peers "+strings.Join(others, " "), "outage-peers "+strconv.Itoa(len(others))); err != nil {
			return err
		}
	}
	return nil
}

// addrPlus returns a plus i.
func addrPlus(a netip.Addr, i int) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// startPoolSimProc starts one `netmgr sim` of count machines from
// prefix-first, machine first on host.
func startPoolSimProc(c *servertest.ProcCluster, bin, dir, prefix string, host netip.Addr, first, count int, paced bool, joinRate float64) (*poolSimProc, error) {
	tag := prefix + "-from-" + strconv.Itoa(first)
	data := filepath.Join(simDataRoot(dir), tag)
	p := &poolSimProc{simProc: &simProc{log: filepath.Join(dir, "sim-"+tag+".log"), done: make(chan struct{})}}
	for i := range count {
		p.names = append(p.names, fmt.Sprintf("%s-%d", prefix, first+i))
	}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, fmt.Errorf("start sim %s: %w", tag, err)
	}
	args := append([]string{"sim", "--count", strconv.Itoa(count), "--prefix", prefix, "--first", strconv.Itoa(first),
		"--data-dir", data, "--join", strings.Join(gossipAddrs(c), ","), "--log-level", "warn", "--commands",
		"--own-address", "--http", host.String() + ":0", "--gossip", host.String() + ":0",
		"--run-time", scalePoolRunTime.String(), "--slots", strconv.Itoa(scalePoolSlots)},
		simTLSArgs(c)...)
	if paced && joinRate > 0 {
		args = append(args, "--join-rate", strconv.FormatFloat(joinRate, 'g', -1, 64))
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Many machines share one heap: collect it less often (the simulator
	// is not what is measured, and memory is plentiful).
	p.cmd.Env = append(os.Environ(), "GOGC="+simGOGC)
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start sim %s: %w", tag, err)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start sim %s: %w", tag, err)
	}
	// The simulator stands in for thousands of other hosts: while the
	// pool joins it yields the CPU to the servers, which on a real pool
	// it would not share (joining 5,000 machines at 25 a second, two
	// simulator processes took 0.85 of 2 cores, and the servers' Raft,
	// starved of the rest, changed leader every few seconds). Once every
	// machine is up it gets its priority back (poolSim.renice).
	p.renice(simJoinNice)
	go func() {
		// Say in its log how it ended: a simulator that dies mid-run
		// is otherwise only a log that stops.
		fmt.Fprintf(logf, "netmgr-bench: sim %s ended: %v\n", tag, p.cmd.Wait())
		logf.Close()
		_ = os.RemoveAll(data)
		_ = os.Remove(filepath.Dir(data))
		close(p.done)
	}()
	return p, nil
}

// simProcs returns the processes, for their logs.
func (s *poolSim) simProcs() []*simProc {
	var out []*simProc
	for _, p := range s.procs {
		out = append(out, p.simProc)
	}
	return out
}

// pids names each process ("sim0", "sim1", ...) with its pid.
func (s *poolSim) pids() map[string]int {
	out := make(map[string]int, len(s.procs))
	for k, p := range s.procs {
		out["sim"+strconv.Itoa(k)] = p.pid()
	}
	return out
}

// simJoinNice is the pool simulator's nice value while the pool joins.
const simJoinNice = 10

// renice sets the nice value of every simulator process, every thread
// of it (Linux's setpriority names a thread).
func (s *poolSim) renice(nice int) {
	for _, p := range s.procs {
		p.renice(nice)
	}
}

// renice sets the nice value of each of p's threads.
func (p *poolSimProc) renice(nice int) {
	pid := p.cmd.Process.Pid
	tids, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		fmt.Fprintf(os.Stderr, "scale: sim %d keeps its priority: %v\n", pid, err)
		return
	}
	for _, t := range tids {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
			fmt.Fprintf(os.Stderr, "scale: sim %d thread %d keeps its priority: %v\n", pid, tid, err)
		}
	}
}

// kill cuts simulated machine name off, in the process that runs it.
func (s *poolSim) kill(name string) error {
	for _, p := range s.procs {
		for _, have := range p.names {
			if have == name {
				return p.command("kill "+name, "killed "+name)
			}
		}
	}
	return fmt.Errorf("sim: no machine %s", name)
}

// stats adds up the processes' counts.
func (s *poolSim) stats() (simStats, error) {
	var sum simStats
	for _, p := range s.procs {
		st, err := p.stats()
		if err != nil {
			return sum, err
		}
		sum.machines += st.machines
		sum.killed += st.killed
		sum.refuted += st.refuted
		sum.stopped += st.stopped
		sum.peerMisses += st.peerMisses
		sum.bareRounds += st.bareRounds
	}
	return sum, nil
}

// stop stops every process.
func (s *poolSim) stop() {
	for _, p := range s.procs {
		p.stop()
	}
}

// await waits for the log to match re past offset.
func (p *poolSimProc) await(re *regexp.Regexp, offset int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(p.log)
		if int64(len(b)) > offset && re.Match(b[offset:]) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("sim: %w (see %s)", servertest.ErrExited, p.log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sim: no %q in %s after %v: %w", re, p.log, timeout, servertest.ErrTimeout)
		}
	}
}

// command sends cmd and waits for the line starting with answer.
func (p *poolSimProc) command(cmd, answer string) error {
	off := fileSize(p.log)
	if _, err := io.WriteString(p.in, cmd+"\n"); err != nil {
		return fmt.Errorf("sim command %q: %w", cmd, err)
	}
	return p.await(regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(answer)), off, 30*time.Second)
}

// simStats are the counts of the sim's "stats" command.
// stopped counts the restartable attempts the machines stopped when
// their leases ran out uncovered; peerMisses the witness rounds another
// process did not answer in time, bareRounds those near an outage that
// found no majority cut off.
type simStats struct{ machines, killed, refuted, stopped, peerMisses, bareRounds int64 }

var statsLine = regexp.MustCompile(`(?m)^stats machines=(\d+) killed=(\d+) refuted=(\d+) stopped=(\d+) peer-misses=(\d+) bare-rounds=(\d+)$`)

// stats asks the process for its counts.
func (p *poolSimProc) stats() (simStats, error) {
	off := fileSize(p.log)
	if err := p.command("stats", "stats "); err != nil {
		return simStats{}, err
	}
	b, err := os.ReadFile(p.log)
	if err != nil {
		return simStats{}, fmt.Errorf("sim stats: %w", err)
	}
	m := statsLine.FindAllSubmatch(b[off:], -1)
	if len(m) == 0 {
		return simStats{}, fmt.Errorf("sim stats: no stats line in %s", p.log)
	}
	last := m[len(m)-1]
	var s simStats
	s.machines, _ = strconv.ParseInt(string(last[1]), 10, 64)
	s.killed, _ = strconv.ParseInt(string(last[2]), 10, 64)
	s.refuted, _ = strconv.ParseInt(string(last[3]), 10, 64)
	s.stopped, _ = strconv.ParseInt(string(last[4]), 10, 64)
	s.peerMisses, _ = strconv.ParseInt(string(last[5]), 10, 64)
	s.bareRounds, _ = strconv.ParseInt(string(last[6]), 10, 64)
	return s, nil
}

// stop closes the process's input, then stops it.
func (p *poolSimProc) stop() {
	_ = p.in.Close()
	p.simProc.stop()
}
