package main

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

const (
	// submitTryTimeout bounds one submit on one server during a failover.
	submitTryTimeout = 500 * time.Millisecond
	// submitPause is the pause between two submits during a failover.
	submitPause = 20 * time.Millisecond
	// selfTimeout bounds one status request to one server.
	selfTimeout = 200 * time.Millisecond
)

// submitTry is one submit made during a leader failover.
type submitTry struct {
	Start time.Duration // since the kill
	Took  time.Duration
	Err   error
}

// leaderRound is what one leader-kill round measured.
type leaderRound struct {
	Killed string // the leader killed
	Leader string // the one elected after it
	// Accepted is kill -> the return of the first submit accepted.
	Accepted time.Duration
	// Elected is kill -> a surviving server first reported itself leader.
	Elected time.Duration
	Tries   []submitTry
}

func (r leaderRound) String() string {
	s := fmt.Sprintf("%s killed, %s leader after %.2f s, submit %d accepted after %.2f s",
		r.Killed, r.Leader, r.Elected.Seconds(), len(r.Tries), r.Accepted.Seconds())
	var failed []submitTry
	for _, t := range r.Tries {
		if t.Err != nil {
			failed = append(failed, t)
		}
	}
	if len(failed) > 0 {
		first, last := failed[0], failed[len(failed)-1]
		s += fmt.Sprintf("; %d failed, the first at %.3f s: %v; the last at %.3f s: %v",
			len(failed), first.Start.Seconds(), first.Err, last.Start.Seconds(), last.Err)
	}
	return s
}

// leaderKillRound SIGKILLs the leader and submits /bin/true in a loop
// until a submit is accepted, while watching the other servers for the
// new leader; then it restarts the killed server and waits until it has
// caught up.
func leaderKillRound(ctx context.Context, c *servertest.ProcCluster) (leaderRound, error) {
	var res leaderRound
	if err := c.WaitLeader(settleTimeout); err != nil {
		return res, err
	}
	err := waitSteady(ctx, settleTimeout, func(ctx context.Context) (string, bool) {
		i, name := c.Leader()
		if i < 0 {
			return "", false
		}
		st, err := c.Self(ctx, i)
		if err != nil || st.Role != "leader" {
			return "", false
		}
		return fmt.Sprintf("%s in term %d", name, st.Term), true
	})
	if err != nil {
		return res, err
	}
	killed, name, err := leaderWithFollowersCaughtUp(c)
	if err != nil {
		return res, err
	}
	res.Killed = name
	elected := watchElection(ctx, c, killed)
	defer elected(0)
	at := time.Now()
	if err := c.KillServer(killed, syscall.SIGKILL); err != nil {
		return res, err
	}
	if res.Tries, err = submitUntilAccepted(ctx, c, at); err != nil {
		return res, fmt.Errorf("submit after killing %s: %w: %w", name, errFailover, err)
	}
	res.Accepted = time.Since(at)

	// A submit was accepted, so a leader was elected: its answer is due.
	e, ok := elected(settleTimeout)
	if !ok {
		return res, fmt.Errorf("no server reported itself leader after %s's death: %w", name, errFailover)
	}
	res.Leader, res.Elected = e.name, e.at.Sub(at)

	if err := c.RestartServer(killed); err != nil {
		return res, err
	}
	if err := c.WaitCaughtUp(killed, settleTimeout); err != nil {
		return res, err
	}
	return res, nil
}

// election is a server that reported itself leader, and when.
type election struct {
	name string
	at   time.Time
}

// watchElection polls every server but the killed one for its own view
// until one reports itself leader or ctx ends. The returned function
// waits up to timeout for that report, stops the polling and returns
// the report, if any; it may be called more than once.
func watchElection(ctx context.Context, c *servertest.ProcCluster, killed int) func(timeout time.Duration) (election, bool) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		found election
		ok    bool
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(jobPoll)
		defer t.Stop()
		for {
			if found, ok = askLeader(ctx, c, killed); ok {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func(timeout time.Duration) (election, bool) {
		select {
		case <-done:
		case <-time.After(timeout):
		}
		cancel()
		<-done
		return found, ok
	}
}

// askLeader asks every server but the killed one at once whether it leads.
func askLeader(ctx context.Context, c *servertest.ProcCluster, killed int) (election, bool) {
	ctx, cancel := context.WithTimeout(ctx, selfTimeout)
	defer cancel()
	var (
		mu     sync.Mutex // guards found
		found  election
		wg     sync.WaitGroup
		isLead bool
	)
	for i := range c.Servers {
		if i == killed {
			continue
		}
		wg.Go(func() {
			st, err := c.Self(ctx, i)
			if err != nil || st.Role != "leader" {
				return
			}
			now := time.Now()
			mu.Lock()
			if !isLead {
				found, isLead = election{name: st.Name, at: now}, true
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return found, isLead
}

// leaderFigure summarizes the leader-kill rounds as a figure.
func leaderFigure(rs []leaderRound, servers int) figure {
	var acc, elect []time.Duration
	var tries []float64
	for _, r := range rs {
		acc = append(acc, r.Accepted)
		elect = append(elect, r.Elected)
		tries = append(tries, float64(len(r.Tries)))
	}
	e := summarize(seconds(elect))
	t := summarize(tries)
	return figure{
		Name:   "leader SIGKILL -> next submit accepted",
		Unit:   "s",
		Sample: summarize(seconds(acc)),
		Target: "p50 <= 1.5",
		Note: fmt.Sprintf("%d servers, default settings (500 ms Raft timeouts); one client submits /bin/true "+
			"every %v, each submit one pass over the servers with %v per server; kill -> a server reports "+
			"itself leader (GET /v1/agent/self every %v): median %s s (%s-%s); submits per round: median %s (%s-%s)",
			servers, submitPause, submitTryTimeout, jobPoll, num(e.Median), num(e.Min), num(e.Max),
			num(t.Median), num(t.Min), num(t.Max)),
	}
}

// submitUntilAccepted submits /bin/true every submitPause, each submit
// one pass over the servers with submitTryTimeout for each, until one is
// accepted, and returns every try, timed from at.
func submitUntilAccepted(ctx context.Context, c *servertest.ProcCluster, at time.Time) ([]submitTry, error) {
	// The loop below does the retrying, so that every try is seen.
	cl, err := userClient(c, client.WithTryTimeout(submitTryTimeout), client.WithRetryFor(0))
	if err != nil {
		return nil, fmt.Errorf("failover client: %w", err)
	}
	req := client.SubmitRequest{
		Spec:           client.JobSpec{Binaries: map[string]string{client.AnyKey: trueBinary()}},
		IdempotencyKey: client.NewIdempotencyKey(),
	}
	var tries []submitTry
	err = waitFor(ctx, submitPause, failoverTimeout, func(ctx context.Context) bool {
		start := time.Now()
		sctx, cancel := context.WithTimeout(ctx, time.Duration(len(c.Servers))*submitTryTimeout)
		_, err := cl.Submit(sctx, req)
		cancel()
		tries = append(tries, submitTry{Start: start.Sub(at), Took: time.Since(start), Err: err})
		return err == nil
	})
	return tries, err
}

// leaderWithFollowersCaughtUp returns the leader's index and name once
// every other server has caught up with it.
func leaderWithFollowersCaughtUp(c *servertest.ProcCluster) (int, string, error) {
	leader, name := c.Leader()
	if leader < 0 {
		return -1, "", fmt.Errorf("no leader: %w", errFailover)
	}
	for i := range c.Servers {
		if i != leader {
			if err := c.WaitCaughtUp(i, settleTimeout); err != nil {
				return -1, "", err
			}
		}
	}
	return leader, name, nil
}
