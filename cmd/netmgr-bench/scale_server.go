package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
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
	// tls is the server's certificate files, keyring its gossip keyring
	// and reader the client material the benchmark reads with; all zero
	// with -insecure.
	tls     pki.Files
	keyring string
	reader  *pki.Material
	// extra is more of the server's flags, e.g. its job retention.
	extra []string
}

// scaleReader is the user the benchmark reads the scale server as.
const scaleReader = "bench"

// newScaleServer picks free loopback ports for a server of the group and,
// unless insecure, makes a throw-away CA in tlsDir with the server's
// certificate, a client certificate to read with and a gossip keyring.
func newScaleServer(bin, name, dataDir, logPath, tlsDir string, insecure bool) (*scaleServer, error) {
	var addrs [3]string
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a port: %w", err)
		}
		addrs[i] = ln.Addr().String()
		defer ln.Close() // held until all three are picked, so they differ
	}
	s := &scaleServer{bin: bin, name: name, dataDir: dataDir, logPath: logPath,
		http: addrs[0], raft: addrs[1], gossip: addrs[2]}
	if insecure {
		return s, nil
	}
	srvID, readerID := pki.Identity{Role: pki.RoleServer, Name: name}, pki.Identity{Role: pki.RoleClient, Name: scaleReader}
	files, err := pki.MakeCluster(tlsDir, 7*24*time.Hour, srvID, readerID)
	if err != nil {
		return nil, fmt.Errorf("scale server: %w", err)
	}
	if s.reader, err = pki.Load(files[readerID]); err != nil {
		return nil, fmt.Errorf("scale server: %w", err)
	}
	s.tls = files[srvID]
	s.keyring = filepath.Join(tlsDir, "gossip.keyring")
	if err := pki.WriteKeyring(s.keyring, [][]byte{pki.NewGossipKey()}, false); err != nil {
		return nil, fmt.Errorf("scale server: %w", err)
	}
	return s, nil
}

// args is the server's command line: no --bootstrap-expect, as its Raft
// state is the snapshot.
func (s *scaleServer) args() []string {
	a := []string{"server", "--name", s.name, "--data-dir", s.dataDir, "--http", s.http, "--raft", s.raft, "--gossip", s.gossip}
	a = append(a, s.extra...)
	if s.reader == nil {
		return append(a, "--insecure")
	}
	return append(a, "--ca-file", s.tls.CA, "--cert-file", s.tls.Cert, "--key-file", s.tls.Key, "--gossip-keyring", s.keyring)
}

// client returns a client of the server that tries once, for 5 s.
func (s *scaleServer) client() (*client.Client, error) {
	opts := []client.Option{client.WithRetryFor(0), client.WithTryTimeout(5 * time.Second)}
	if s.reader != nil {
		opts = append(opts, client.WithTLS(s.reader))
	}
	cl, err := client.New([]string{s.http}, opts...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return cl, nil
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
	cl, err := s.client()
	if err != nil {
		return restart{}, err
	}
	cmd := exec.Command(s.bin, s.args()...)
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

// procMemory reads the Vm* and Rss* lines of /proc/PID/status, in MiB:
// VmRSS is RssAnon (the heap, stacks) and RssFile (mapped files, such as
// raft.db, which bbolt maps whole) and RssShmem.
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
		if !ok || !strings.HasPrefix(name, "Vm") && !strings.HasPrefix(name, "Rss") {
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
