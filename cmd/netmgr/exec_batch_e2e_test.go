package main

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestE2EBatchSubmit runs netexec --batch against one server and one stub
// process (issue 20 point 11): the file's jobs are created by one request
// and printed in the file's order; a file with lines in error names each
// line and submits nothing, whether the CLI or the server finds the error.
func TestE2EBatchSubmit(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 2 processes")
	}
	t.Parallel() // its own process cluster, ports and directories; it sets no environment
	dir := t.TempDir()
	bin := netmgrBinary(t)
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(links, "netexec")); err != nil {
		t.Fatal(err)
	}
	c, cl := procCluster(t, dir, 1, 1)
	r := &e2eRunner{links: links, env: c.Env(), dir: dir}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	batchRoute := `route="POST /v1/jobs/batch"`
	const requests = "netmgr_server_http_requests_total"

	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// A file with errors on lines 3, 4 and 6: nothing is sent.
	bad := write("bad.txt", "# jobs\n/bin/true\n--bogus 1 /bin/true\n-n 0 /bin/true\n\n'binaries={*=/bin/sh},min=x'\n")
	res := r.run(t, "netexec", "--batch", bad)
	res.wantCode(t, exitUsage)
	for _, want := range []string{"bad.txt:3: flag provided but not defined: -bogus", "bad.txt:4: -n/--instances must be at least 1",
		"bad.txt:6: ", "3 lines in error: no job submitted"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, res)
		}
	}
	// The server refuses line 3's job (its dependency does not exist):
	// none of the batch is created.
	refused := write("refused.txt", "/bin/true\n\n--after no-such-job /bin/true\n")
	res = r.run(t, "netexec", "--batch", refused)
	res.wantCode(t, exitError)
	if !strings.Contains(res.stderr, "job 2: after=no-such-job") || !strings.Contains(res.stderr, "(job 2 is line 3)") {
		t.Errorf("the server's refusal does not name the job and its line\n%s", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if jobs, err := cl.Jobs(ctx); err != nil || len(jobs) != 0 {
		t.Fatalf("after refused batches: jobs %v (err %v), want none", jobs, err)
	}

	// A good file: three jobs in one request, printed in order.
	good := write("good.txt", "# three jobs\n"+
		"-n 2 --name b1 /bin/true\n"+
		"\n"+
		"   # an indented comment\n"+
		"'binaries={*=/bin/sh},args={-c,\"exit 0\"},symb_name=b2'\n"+
		"--name b3 --env 'GREETING=hello world' /bin/sh -c \"test \\\"\\$GREETING\\\" = 'hello world'\"\n")
	res = r.run(t, "netexec", "--batch", good)
	res.wantCode(t, 0)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, one per job\n%s", res)
	}
	for i, name := range []string{"b1", "b2", "b3"} {
		re := regexp.MustCompile(`^job ` + name + `\.` + regexp.QuoteMeta(me.Username) + ` id \d+ submitted$`)
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d is %q, want job %s", i+1, lines[i], name)
		}
	}
	if n := metric(t, c, c.Servers[0], requests, batchRoute); n != 2 {
		t.Errorf("%d batch requests, want 2: the refused batch and the good one, one each", int(n))
	}
	if n := metric(t, c, c.Servers[0], requests, `route="POST /v1/jobs"`); n != 0 {
		t.Errorf("%d single submits, want none", int(n))
	}
	for _, name := range []string{"b1", "b2", "b3"} {
		job, err := cl.WaitJob(ctx, name, "done")
		if err != nil {
			t.Fatalf("wait for %s: %v", name, err)
		}
		want := 1
		if name == "b1" {
			want = 2
		}
		if len(job.Instances) != want {
			t.Errorf("job %s has %d instances, want %d", name, len(job.Instances), want)
		}
		if bad := writeOutcomes(&strings.Builder{}, job); bad > 0 {
			t.Errorf("job %s: %d instances did not exit 0: %+v", name, bad, job.Instances)
		}
	}
}
