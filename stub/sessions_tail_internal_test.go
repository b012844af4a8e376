package stub

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/session"
	"github.com/netmgr/netmgr/internal/testwait"
)

// testRelay stands for a server between a session's client and the stub:
// it copies the client's bytes to the stub, and at most toClient of the
// stub's back, after which it reads no more of them, as a server about to
// die that has stopped forwarding; kill ends it as SIGKILL would.
type testRelay struct {
	conns  []net.Conn
	dead   chan struct{}
	served chan error // the client's Serve over this relay
	once   sync.Once
}

// relayTo connects cl to js through a new testRelay.
func relayTo(cl *session.Link, js *jobSession, toClient int64) *testRelay {
	ca, ra := net.Pipe()
	rb, sb := net.Pipe()
	r := &testRelay{conns: []net.Conn{ca, ra, rb, sb}, dead: make(chan struct{}), served: make(chan error, 1)}
	go func() { _, _ = io.Copy(rb, ra) }()
	go func() {
		if toClient < 0 {
			_, _ = io.Copy(ra, rb)
			return
		}
		_, _ = io.CopyN(ra, rb, toClient)
		<-r.dead
	}()
	go js.attach(sb, "test")
	go func() { r.served <- cl.Serve(ca) }()
	return r
}

// kill ends the relay's connections both ways and waits until the
// client's Serve over it has returned.
func (r *testRelay) kill() {
	r.once.Do(func() {
		close(r.dead)
		for _, c := range r.conns {
			_ = c.Close()
		}
	})
	<-r.served
}

// TestSessionTailAfterRelaySwitch runs cat on the stub's end of a session
// (its FIFOs, pumps, input and end) with 6 MB through it. The relay the
// session starts on stops passing the stub's bytes halfway; cat reads all
// its input, writes the rest of its output into the session's log and
// ends, and its exit follows; only then does the relay die and the client
// come back through another. The client gets every byte, in order, then
// the exit, and the session closes once the client has it all.
func TestSessionTailAfterRelaySwitch(t *testing.T) {
	t.Parallel()
	ss := newSessions(slog.New(slog.DiscardHandler), nil)
	k := client.AttemptRef{JobID: 1, Instance: 0, Attempt: 1}
	js, stdio, err := ss.open(k, "", t.TempDir(), "", session.Mode{Grace: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.link.Close(); js.closeFiles() })

	// The job, as its supervisor would start it on the session's FIFOs.
	job := exec.Command("/bin/cat")
	var files []*os.File
	for _, o := range []struct {
		path string
		flag int
	}{{stdio.Stdin, os.O_RDONLY}, {stdio.Stdout, os.O_WRONLY}, {stdio.Stderr, os.O_WRONLY}} {
		f, err := os.OpenFile(o.path, o.flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	job.Stdin, job.Stdout, job.Stderr = files[0], files[1], files[2]
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = job.Process.Kill() })
	closeFiles(files)
	js.started()
	jobEnded := make(chan struct{})
	go func() {
		_ = job.Wait()
		js.ended(session.Exit{Code: job.ProcessState.ExitCode()})
		close(jobEnded)
	}()

	data := make([]byte, 6<<20)
	_, _ = rand.Read(data)
	cl := session.NewLink(0)
	defer cl.Close()
	go func() {
		for rest := data; len(rest) > 0; {
			n := min(len(rest), session.MaxData)
			if cl.Send(session.Frame{Type: session.FrameStdin, Data: rest[:n]}) != nil {
				return
			}
			rest = rest[n:]
		}
		_ = cl.Send(session.Frame{Type: session.FrameStdinEOF})
	}()
	var mu sync.Mutex
	var got []byte
	exit := make(chan session.Exit, 1)
	go func() {
		for {
			f, err := cl.Recv()
			if err != nil {
				return
			}
			switch f.Type {
			case session.FrameStdout, session.FrameStderr:
				mu.Lock()
				got = append(got, f.Data...)
				mu.Unlock()
			case session.FrameExit:
				e, err := session.ExitOf(f)
				if err != nil {
					e = session.Exit{Code: -2, Error: err.Error()}
				}
				exit <- e
				return
			}
		}
	}()
	received := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }

	// Half the stub's log gets through; the other half, and the exit,
	// stay in it while cat reads the rest of its input and ends.
	first := relayTo(cl, js, 3<<20)
	select {
	case <-jobEnded:
	case <-time.After(60 * time.Second):
		t.Fatalf("cat did not end with its input all sent and half its output taken (%d bytes back)", received())
	}
	js.pumps.Wait()
	if n := received(); n >= len(data) {
		t.Fatalf("the client has all %d bytes before the relay died; the test switched nothing at the end", n)
	}
	first.kill()
	before := received()
	t.Logf("the relay died with %d of %d bytes at the client; cat has ended", before, len(data))

	second := relayTo(cl, js, -1)
	defer second.kill()
	var e session.Exit
	select {
	case e = <-exit:
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit through the second relay; %d bytes back of %d", received(), len(data))
	}
	mu.Lock()
	if !bytes.Equal(got, data) {
		n := 0
		for n < min(len(got), len(data)) && got[n] == data[n] {
			n++
		}
		mu.Unlock()
		t.Fatalf("got %d bytes back of %d (%d before the switch); the first difference at %d", len(got), len(data), before, n)
	}
	mu.Unlock()
	if e.Code != 0 || e.Error != "" {
		t.Fatalf("exit %+v, want code 0", e)
	}
	if !cl.WaitAcked() {
		t.Fatal("the client's acknowledgement of the exit did not go")
	}
	testwait.Until(t, 30*time.Second, "the session closes once the client has it all", func() (bool, string) {
		return ss.get(k, "") == nil, fmt.Sprintf("%d bytes back before the switch", before)
	})
}
