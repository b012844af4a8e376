package server_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestJobRetentionOnCluster runs three servers with a 2 s retention and a
// stub: a job that finished leaves the database of every server at the
// same index, by one jobs-expired entry, while a running job stays; the
// API then lists it no more and says it was removed when asked by id.
func TestJobRetentionOnCluster(t *testing.T) {
	t.Parallel()
	const retention = 2 * time.Second
	c := servertest.NewClusterConfig(t, 3, func(_ int, cfg *server.Config) { cfg.JobRetention = retention })
	c.WaitLeader()
	c.AddStub("alpha")
	cl := c.Client()
	testwait.For(t, 15*time.Second, "stub up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})

	slow := submitNamed(t, cl, "slow", shSpec("sleep 60", 1))
	quick := submitNamed(t, cl, "quick", shSpec("exit 0", 1))
	done, err := cl.WaitJob(ctx(t), strconv.FormatUint(quick, 10), client.WaitDone)
	if err != nil || done.State != client.JobDone {
		t.Fatalf("quick job: %s %v, want done", done.State, err)
	}
	ended := time.Now()
	testwait.For(t, 20*time.Second, "slow running", func() bool {
		j, err := cl.Job(ctx(t), strconv.FormatUint(slow, 10))
		return err == nil && j.State == client.JobRunning
	})

	// Every server drops the finished job by the same entry.
	testwait.For(t, 20*time.Second, "the finished job removed on every server", func() bool {
		for _, s := range c.Servers {
			if _, ids := s.LocalJobs(); slices.Contains(ids, quick) {
				return false
			}
		}
		return true
	})
	if gone := time.Since(ended); gone < retention {
		t.Errorf("the job left %v after it ended, before the %v retention", gone, retention)
	}
	var index uint64
	for i, s := range c.Servers {
		evs := s.LocalEvents(fsm.EventJobsExpired)
		if len(evs) != 1 || !strings.HasPrefix(evs[0].Detail, "1 finished jobs removed") {
			t.Fatalf("server %d: jobs-expired events %+v, want one that removed one job", i, evs)
		}
		if i == 0 {
			index = evs[0].Index
		} else if evs[0].Index != index {
			t.Errorf("server %d removed the job at index %d, server 0 at %d", i, evs[0].Index, index)
		}
		if _, ids := s.LocalJobs(); !slices.Contains(ids, slow) {
			t.Errorf("server %d: the running job %d left too (jobs %v)", i, slow, ids)
		}
	}

	jobs, err := cl.Jobs(ctx(t))
	if err != nil {
		t.Fatalf("list jobs: %v", err)
	}
	if slices.ContainsFunc(jobs, func(j client.Job) bool { return j.ID == quick }) {
		t.Errorf("netstatus -j still lists the removed job")
	}
	_, err = cl.Job(ctx(t), strconv.FormatUint(quick, 10))
	if err == nil || !strings.Contains(err.Error(), "finished and was removed after the job retention") {
		t.Errorf("asking for the removed job: got %v, want it named removed after the retention", err)
	}
	if _, err := cl.Job(ctx(t), "quick"); err == nil {
		t.Errorf("the removed job is still found by name")
	}
}
