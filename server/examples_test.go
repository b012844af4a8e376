package server_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/spec"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// paperPool starts a server with the paper's database (testdata/isis.db)
// and stubs that claim the paper's machines: flute, viola and bongo as
// declared there, plus two undeclared machines whose init files claim an
// mtype (a sun3 and a sparc2). The init files of flute and viola say they
// mount /usr/u/fred/data, and nprocs=1 gives every machine one slot, as the
// paper's workstations had.
func paperPool(t *testing.T) *client.Client {
	t.Helper()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	cl := c.Client()
	text, err := os.ReadFile("../testdata/isis.db")
	if err != nil {
		t.Fatalf("read database: %v", err)
	}
	// The tests run as root, on a machine of the pool.
	text = append(text, "allow_root_jobs\n"...)
	if _, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Filename: "isis.db", Text: string(text)}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	stubs := map[string]string{
		"flute":  "nprocs=1, mounts={/usr/u/fred/data}",
		"viola":  "nprocs=1, mounts={/usr/u/fred/data}",
		"bongo":  "nprocs=1",
		"tuba":   "mtype=sun3, nprocs=1",
		"cornet": "mtype=sparc2, nprocs=1",
	}
	for _, name := range slices.Sorted(maps.Keys(stubs)) {
		c.AddStubInit(name, stubs[name])
	}
	testwait.For(t, 15*time.Second, "5 machines up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 5
	})
	return cl
}

// script writes an executable that records its machine and arguments and
// then sleeps, so instances hold their slots while the test looks.
func script(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	body := "#!/bin/sh\necho \"$NETMGR_MACHINE $*\" > " + dir + "/ran.$NETMGR_JOB_ID.$NETMGR_INSTANCE\nexec sleep 600\n"
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatalf("write script: %v", err)
	}
	return path
}

func submitSpec(t *testing.T, cl *client.Client, text string) (client.SubmitResponse, error) {
	t.Helper()
	s, err := spec.Parse(text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return cl.Submit(ctx(t), client.SubmitRequest{Spec: s})
}

func waitRunning(t *testing.T, cl *client.Client, ref string, n int) client.Job {
	t.Helper()
	var job client.Job
	testwait.For(t, 10*time.Second, ref+" running", func() bool {
		var err error
		job, err = cl.Job(ctx(t), ref)
		if err != nil {
			return false
		}
		running := 0
		for _, in := range job.Instances {
			if in.State == client.InstanceRunning {
				running++
			}
		}
		return running == n
	})
	return job
}

// TestPaperExample1 runs the paper's Example 1: 3 copies of a binary on
// sparc machines with more than 10 MB of memory, mail on completion
// (accepted: the group files the mail, which this pool, having no relay,
// leaves pending). The copies run on flute, bongo and cornet (sparc, mem
// 16, 32, 16) and never on tuba (a sun3, mem 8) or viola (mips).
func TestPaperExample1(t *testing.T) {
	t.Parallel()
	cl := paperPool(t)
	dir := t.TempDir()
	bin := script(t, dir, "test")

	resp, err := submitSpec(t, cl, "binaries={sparc="+bin+"},min=3,mem>10,mail")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job := waitRunning(t, cl, resp.Name, 3)
	var where []string
	for _, in := range job.Instances {
		where = append(where, in.Machine)
	}
	slices.Sort(where)
	if want := []string{"bongo", "cornet", "flute"}; !slices.Equal(where, want) {
		t.Errorf("Example 1 ran on %v, want %v", where, want)
	}
}

// TestPaperExample2 runs the paper's Example 2: four copies of the sparc or
// mips binary with argument 4 on machines that mount /usr/u/fred/data, as
// job test1. Only flute (sparc) and viola (mips) mount it and each has one
// slot, so two instances run, one per binary, and two wait — the paper's
// Example 3 table.
func TestPaperExample2(t *testing.T) {
	t.Parallel()
	cl := paperPool(t)
	dir := t.TempDir()
	sparc := script(t, dir, "sparc-test")
	mips := script(t, dir, "mips-test")

	resp, err := submitSpec(t, cl, "binaries={sparc="+sparc+",mips="+mips+"},min=4,args={4},mounts={/usr/u/fred/data},symb_name=test1")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if resp.Name != "test1" {
		t.Errorf("job name %q, want test1", resp.Name)
	}
	job := waitRunning(t, cl, "test1", 2)
	got := map[string]string{}
	for _, in := range job.Instances {
		switch in.State {
		case client.InstanceRunning:
			got[in.Machine] = in.Binary
			// Running means forked; the script writes its record moments later.
			var ran []byte
			record := filepath.Join(dir, "ran."+strconv.FormatUint(job.ID, 10)+"."+strconv.Itoa(in.Index))
			testwait.For(t, 10*time.Second, "instance "+strconv.Itoa(in.Index)+"'s record", func() bool {
				var err error
				ran, err = os.ReadFile(record)
				return err == nil && strings.HasSuffix(string(ran), "\n")
			})
			if want := in.Machine + " 4"; strings.TrimSpace(string(ran)) != want {
				t.Errorf("instance %d recorded %q, want %q", in.Index, strings.TrimSpace(string(ran)), want)
			}
		case client.InstanceQueued:
		default:
			t.Errorf("instance %d is %s, want running or queued", in.Index, in.State)
		}
	}
	if want := map[string]string{"flute": sparc, "viola": mips}; !maps.Equal(got, want) {
		t.Errorf("Example 2 ran %v, want %v", got, want)
	}

	why, err := cl.Why(ctx(t), "test1")
	if err != nil {
		t.Fatalf("why: %v", err)
	}
	if len(why) != 2 {
		t.Fatalf("got %d queued instances explained, want 2: %+v", len(why), why)
	}
	for _, w := range why {
		for _, want := range []string{"lack mount /usr/u/fred/data", "no free slot"} {
			if !strings.Contains(w.Reason, want) {
				t.Errorf("instance %d waits because %q, want it to mention %q", w.Instance, w.Reason, want)
			}
		}
	}
}
