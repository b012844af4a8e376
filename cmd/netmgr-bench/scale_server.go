package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
)

// errNotServing means a restarted server did not answer a consistent read
// in time, or exited.
var errNotServing = errors.New("server not serving")

// serveTimeout bounds how long a restarted server may take to serve; far
// beyond the target, it only catches one that never does.
const serveTimeout = 5 * time.Minute

// scaleServer is the command line of the one server of the fabricated
// group; its addresses stay the same across restarts, as the snapshot's
// configuration names its Raft address.
type scaleServer struct {
	bin, name, dataDir, logPath string
	http, raft, gossip          string
}

// newScaleServer picks free loopback ports for a server of the group.
func newScaleServer(bin, name, dataDir, logPath string) (*scaleServer, error) {
	var addrs [3]string
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a port: %w", err)
		}
		addrs[i] = ln.Addr().String()
		defer ln.Close() // held until all three are picked, so they differ
	}
	return &scaleServer{bin: bin, name: name, dataDir: dataDir, logPath: logPath,
		http: addrs[0], raft: addrs[1], gossip: addrs[2]}, nil
}

// restart is what one restart measured.
type restart struct {
	serving    time.Duration // exec to the first consistent read answered
	rssMiB     float64       // VmRSS just after that read
	peakRSSMiB float64       // VmHWM at the same moment
}

// run starts the server (no --bootstrap-expect: its Raft state is the
// snapshot), times it to the first consistent read of job lastJob, reads
// its memory, and stops it.
func (s *scaleServer) run(ctx context.Context, lastJob uint64) (restart, error) {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return restart{}, fmt.Errorf("server log: %w", err)
	}
	defer logf.Close()
	cl, err := client.New([]string{"http://" + s.http}, client.WithRetryFor(0), client.WithTryTimeout(5*time.Second))
	if err != nil {
		return restart{}, fmt.Errorf("client: %w", err)
	}
	cmd := exec.Command(s.bin, "server", "--name", s.name, "--data-dir", s.dataDir,
		"--http", s.http, "--raft", s.raft, "--gossip", s.gossip)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return restart{}, fmt.Errorf("start server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	defer stopServer(cmd, exited)

	var r restart
	deadline := time.Now().Add(serveTimeout)
	ref := strconv.FormatUint(lastJob, 10)
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		j, err := cl.Job(rctx, ref)
		cancel()
		if err == nil && j.ID == lastJob {
			r.serving = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%w after %v: %v (see %s)", errNotServing, serveTimeout, err, s.logPath)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-exited:
			return r, fmt.Errorf("%w: it exited (see %s)", errNotServing, s.logPath)
		case <-time.After(10 * time.Millisecond):
		}
	}
	mem, err := procMemory(cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	r.rssMiB, r.peakRSSMiB = mem["VmRSS"], mem["VmHWM"]
	return r, nil
}

// stopServer sends SIGTERM and waits for the exit, killing the server if
// it takes longer than 30 s.
func stopServer(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// procMemory reads the Vm* lines of /proc/PID/status, in MiB.
func procMemory(pid int) (map[string]float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("read memory of %d: %w", pid, err)
	}
	defer f.Close()
	out := make(map[string]float64)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasPrefix(name, "Vm") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("read memory of %d: %s: %w", pid, name, err)
		}
		out[name] = kb / 1024
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read memory of %d: %w", pid, err)
	}
	if _, ok := out["VmRSS"]; !ok {
		return nil, fmt.Errorf("read memory of %d: no VmRSS in /proc/%d/status", pid, pid)
	}
	return out, nil
}
