package server_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// TestCronOnCluster runs a cron job firing every second on three servers
// and a stub: each run is a job of its own, named tick.USER#N, listed by
// the cron job, that sees its scheduled time; the cron job shows its
// schedule and next firing; netkill --runs ends the schedule and its
// running run, after which nothing more fires.
func TestCronOnCluster(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 3, "alpha")
	ledger := filepath.Join(t.TempDir(), "ledger")
	spec := shSpec(`echo "$NETMGR_SCHEDULED_TIME" >> `+ledger+`; [ "$(wc -l < `+ledger+`)" -lt 3 ] || sleep 60`, 1)
	spec.Cron, spec.Overlap = "@every 1s", client.OverlapSkip
	id := submitNamed(t, cl, "tick", spec)

	var job client.Job
	testwait.For(t, 20*time.Second, "three runs", func() bool {
		var err error
		job, err = cl.Job(ctx(t), strconv.FormatUint(id, 10))
		return err == nil && job.Cron != nil && len(job.Cron.Runs) >= 3
	})
	if job.State != client.JobScheduled || job.Cron.Schedule != "@every 1s" || job.Cron.Catchup != client.CatchupLast || job.Cron.Overlap != client.OverlapSkip {
		t.Errorf("cron job: state %s cron %+v, want scheduled, @every 1s, last, skip", job.State, job.Cron)
	}
	if next := job.Cron.Next; next.IsZero() || next.Before(job.Cron.Through) {
		t.Errorf("next firing %v, want after %v", next, job.Cron.Through)
	}
	user := job.Owner
	for i, runID := range job.Cron.Runs[:3] {
		run, err := cl.Job(ctx(t), strconv.FormatUint(runID, 10))
		if err != nil {
			t.Fatalf("run %d: %v", runID, err)
		}
		if want := "tick." + user + "#" + strconv.Itoa(i+1); run.Name != want || run.CronJob != id || run.Scheduled.IsZero() {
			t.Errorf("run %d: name %q cron job %d scheduled %v, want %s of job %d", runID, run.Name, run.CronJob, run.Scheduled, want, id)
		}
	}
	// The third run sleeps: later firings are skipped for the overlap.
	testwait.For(t, 20*time.Second, "a firing skipped for the overlap", func() bool {
		j, err := cl.Job(ctx(t), strconv.FormatUint(id, 10))
		return err == nil && slices.ContainsFunc(j.Cron.Skips, func(s client.CronSkip) bool { return strings.HasPrefix(s.Reason, "overlap:") })
	})
	resp, err := cl.Kill(ctx(t), strconv.FormatUint(id, 10), client.KillRequest{Runs: true})
	if err != nil || resp.Signaled != 1 {
		t.Fatalf("kill --runs: got %+v %v, want the sleeping run signalled", resp, err)
	}
	job, err = cl.Job(ctx(t), strconv.FormatUint(id, 10))
	if err != nil || job.State != client.JobKilled || !job.Cron.Ended || !job.Cron.Next.IsZero() {
		t.Fatalf("after the kill: %s %+v %v, want killed, ended, no next firing", job.State, job.Cron, err)
	}
	third := strconv.FormatUint(job.Cron.Runs[2], 10)
	if run, err := cl.WaitJob(ctx(t), third, client.WaitDone); err != nil || run.State != client.JobKilled {
		t.Errorf("third run: %s %v, want killed", run.State, err)
	}
	runs := len(job.Cron.Runs)
	testwait.Holds(t, 2500*time.Millisecond, "no run after the kill (two firing times pass)", func() bool {
		job, err := cl.Job(ctx(t), strconv.FormatUint(id, 10))
		if err == nil && len(job.Cron.Runs) != runs {
			t.Fatalf("runs after the kill: %d, want %d", len(job.Cron.Runs), runs)
		}
		return true
	})
	data, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatalf("read ledger: %v", err)
	}
	lines := strings.Fields(string(data))
	for i, l := range lines {
		if _, err := time.Parse(time.RFC3339, l); err != nil {
			t.Errorf("ledger line %d: %q is not RFC 3339", i, l)
		}
	}
	if len(lines) != 3 || len(slices.Compact(slices.Clone(lines))) != 3 {
		t.Errorf("ledger %q: want three distinct times", lines)
	}
}

// TestCronRefusals checks the answers at submit.
func TestCronRefusals(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	for _, tc := range []struct {
		name string
		set  func(*client.JobSpec)
		want string
	}{
		{"bad expression", func(s *client.JobSpec) { s.Cron = "61 * * * *" }, `cron="61 * * * *"`},
		{"four fields", func(s *client.JobSpec) { s.Cron = "* * * *" }, "MIN HOUR DAY MONTH WEEKDAY"},
		{"bad zone", func(s *client.JobSpec) { s.Cron = "CRON_TZ=Mars/Olympus 0 3 * * *" }, "Mars/Olympus"},
		{"bad catchup", func(s *client.JobSpec) { s.Cron, s.Catchup = "@daily", "all" }, "catchup=all: want none or last"},
		{"bad overlap", func(s *client.JobSpec) { s.Cron, s.Overlap = "@daily", "queue" }, "overlap=queue: want skip or allow"},
		{"catchup without cron", func(s *client.JobSpec) { s.Catchup = "none" }, "apply to cron jobs only"},
		{"cron with after", func(s *client.JobSpec) { s.Cron, s.After = "@daily", []string{"1"} }, "cannot wait for other jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}}
			tc.set(&s)
			_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: s})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	daily := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, Cron: "CRON_TZ=Europe/Paris 30 2 * * 1-5"}
	id := submitNamed(t, cl, "nightly", daily)
	_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, After: []string{strconv.FormatUint(id, 10)}}})
	if err == nil || !strings.Contains(err.Error(), "is a cron job, which never ends") {
		t.Errorf("after= a cron job: got %v, want it refused", err)
	}
	job, err := cl.Job(ctx(t), "nightly")
	if err != nil || job.Cron == nil {
		t.Fatalf("nightly: %+v %v", job, err)
	}
	utc := submitNamed(t, cl, "utc", client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, Cron: "15 4 * * *"})
	if j, err := cl.Job(ctx(t), strconv.FormatUint(utc, 10)); err != nil || j.Cron == nil || j.Cron.Next.UTC().Hour() != 4 || j.Cron.Next.Minute() != 15 {
		t.Errorf("a schedule without a zone: next %v (%v), want 04:15 UTC", j.Cron, err)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	if n := job.Cron.Next.In(paris); n.Hour() != 2 || n.Minute() != 30 || n.Weekday() == time.Saturday || n.Weekday() == time.Sunday {
		t.Errorf("next firing %v, want 02:30 Paris time on a weekday", n)
	}
}
