package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/session"
	"github.com/netmgr/netmgr/server/servertest"
)

// Interactive sessions (package client/session): how soon a keystroke
// comes back through netexec --pty's path, and how fast netexec -i moves
// bytes, both through a server of a loopback cluster to the stub.
const (
	keystrokes      = 300
	keystrokesQuick = 100
	pipeBytes       = 100 << 20
	pipeBytesQuick  = 20 << 20
)

// interactiveSuite measures keystroke-to-echo on a pseudo-terminal running
// cat (the terminal's own echo), one keystroke at a time, and the rate of
// 100 MB through `cat` over pipes, both ways at once.
func interactiveSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "interactive")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	spec := clusterSpec{suite: "interactive", servers: cfg.servers, stubs: 1}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
		return interactiveOn(ctx, cfg, cl)
	})
}

// interactiveOn is interactiveSuite on a ready cluster, through cl.
func interactiveOn(ctx context.Context, cfg config, cl *client.Client) ([]figure, error) {
	n, size := keystrokes, pipeBytes
	if cfg.quick {
		n, size = keystrokesQuick, pipeBytesQuick
	}
	echo, err := keystrokeEcho(ctx, cl, n)
	if err != nil {
		return nil, fmt.Errorf("interactive: keystrokes: %w", err)
	}
	rate, err := pipeRate(ctx, cl, size)
	if err != nil {
		return nil, fmt.Errorf("interactive: pipes: %w", err)
	}
	note := fmt.Sprintf("%d servers, one stub, loopback, TLS; through the Go client (what netexec runs)", cfg.servers)
	return []figure{
		{Name: "keystroke -> echo through --pty", Unit: "ms", Sample: summarize(echo), Target: "p50 <= 5 ms, p99 <= 20 ms", Note: note},
		{Name: fmt.Sprintf("%d MB through netexec -i cat", size>>20), Unit: "MB/s", Sample: summarize([]float64{rate}), Target: ">= 50 MB/s", Note: note},
	}, nil
}

// startSession submits binary with mode and returns the link of its
// session, attached, and a function that ends it.
func startSession(ctx context.Context, cl *client.Client, mode session.Mode, binary string, args ...string) (*session.Link, func(), error) {
	spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: binary}, Args: args, Env: []string{session.EnvVar + "=" + mode.String()}}
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: spec})
	if err != nil {
		return nil, nil, err
	}
	ref := strconv.FormatUint(sub.ID, 10)
	if _, err := cl.WaitJob(ctx, ref, client.WaitStarted); err != nil {
		return nil, nil, err
	}
	link := session.NewLink(0)
	served := make(chan error, 1)
	conn, err := cl.Session(ctx, ref, client.SessionQuery{})
	if err != nil {
		return nil, nil, err
	}
	go func() { served <- link.Serve(conn) }()
	stop := func() {
		link.Close()
		<-served
		_, _ = cl.Kill(context.WithoutCancel(ctx), ref, client.KillRequest{})
	}
	return link, stop, nil
}

// keystrokeEcho types n keys, one at a time, into cat on a terminal and
// returns the milliseconds each took to come back as the terminal's echo.
func keystrokeEcho(ctx context.Context, cl *client.Client, n int) ([]float64, error) {
	link, stop, err := startSession(ctx, cl, session.Mode{TTY: true, Rows: 24, Cols: 80, Grace: time.Minute}, "/bin/cat")
	if err != nil {
		return nil, err
	}
	defer stop()
	var out []float64
	for i := -warmup; i < n; i++ {
		key := []byte{'a' + byte((i+warmup)%26)}
		start := time.Now()
		if err := link.Send(session.Frame{Type: session.FrameStdin, Data: key}); err != nil {
			return nil, err
		}
		for {
			f, err := link.Recv()
			if err != nil {
				return nil, err
			}
			if f.Type == session.FrameStdout && bytes.Contains(f.Data, key) {
				break
			}
		}
		if i >= 0 {
			out = append(out, float64(time.Since(start).Microseconds())/1000)
		}
		if i%64 == 63 { // a newline now and then: cat's line buffer stays small
			if err := link.Send(session.Frame{Type: session.FrameStdin, Data: []byte("\r")}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// pipeRate sends size bytes through cat over pipes, reading them back as
// they come, and returns MB/s from the first byte sent to the last back.
func pipeRate(ctx context.Context, cl *client.Client, size int) (float64, error) {
	link, stop, err := startSession(ctx, cl, session.Mode{Grace: time.Minute}, "/bin/cat")
	if err != nil {
		return 0, err
	}
	defer stop()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), session.MaxData/16)
	start := time.Now()
	sent := make(chan error, 1)
	go func() {
		for left := size; left > 0; left -= len(chunk) {
			if err := link.Send(session.Frame{Type: session.FrameStdin, Data: chunk[:min(left, len(chunk))]}); err != nil {
				sent <- err
				return
			}
		}
		sent <- link.Send(session.Frame{Type: session.FrameStdinEOF})
	}()
	got := 0
	for got < size {
		f, err := link.Recv()
		if err != nil {
			return 0, err
		}
		switch f.Type {
		case session.FrameStdout:
			got += len(f.Data)
		case session.FrameExit:
			return 0, errors.New("cat ended after " + strconv.Itoa(got) + " bytes")
		}
	}
	secs := time.Since(start).Seconds()
	if err := <-sent; err != nil {
		return 0, err
	}
	return float64(size) / (1 << 20) / secs, nil
}
