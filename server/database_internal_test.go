package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/dblang"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/testwait"
)

const rootJobsDB = `key lic
machine alpha = {lic}
admin_id tclark
allow_root_jobs
`

// TestLoadDatabaseAllowRootJobs runs one real server: a --database file
// with allow_root_jobs sets the fsm's Database.AllowRootJobs when the
// group forms and admin show prints it back as the file's Format; a load
// without it over the API turns it off and show no longer prints it; a
// load with it turns it on again.
func TestLoadDatabaseAllowRootJobs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "root.db")
	if err := os.WriteFile(path, []byte(rootJobsDB), 0o644); err != nil {
		t.Fatalf("write: %v", err)
	}
	s, err := New(Config{
		Name: "solo", DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		GossipAddr: "127.0.0.1:0", BootstrapExpect: 1, DatabaseFile: path,
		Logger: slog.New(slog.DiscardHandler),
		TuneRaft: func(c *raft.Config) {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
		},
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	cl, err := client.New([]string{s.HTTPAddr()}, client.WithUser("tclark"))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	live := func() (allows bool, index uint64) {
		s.fsm.Read(func(v fsm.View) {
			db, i := v.Database()
			allows, index = db.AllowRootJobs, i
		})
		return allows, index
	}
	testwait.For(t, 10*time.Second, "the database file loaded", func() bool {
		_, index := live()
		return index != 0
	})
	shows := func() (string, bool) {
		t.Helper()
		shown, err := cl.Database(ctx)
		if err != nil {
			t.Fatalf("show: %v", err)
		}
		return shown.Text, slices.Contains(strings.Split(shown.Text, "\n"), "allow_root_jobs")
	}

	if allows, _ := live(); !allows {
		t.Errorf("after loading %s: fsm AllowRootJobs false, want true", path)
	}
	parsed, err := dblang.Parse(path, []byte(rootJobsDB))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if text, _ := shows(); text != string(dblang.Format(parsed)) {
		t.Errorf("admin show printed:\n%s\nwant the file's declarations:\n%s", text, dblang.Format(parsed))
	}

	without := strings.Replace(rootJobsDB, "allow_root_jobs\n", "", 1)
	if _, err := cl.LoadDatabase(ctx, client.DatabaseText{Filename: "noroot.db", Text: without}); err != nil {
		t.Fatalf("load without allow_root_jobs: %v", err)
	}
	if allows, _ := live(); allows {
		t.Errorf("after a load without allow_root_jobs: fsm AllowRootJobs true, want false")
	}
	if text, shown := shows(); shown {
		t.Errorf("admin show printed allow_root_jobs after a load without it:\n%s", text)
	}

	if _, err := cl.LoadDatabase(ctx, client.DatabaseText{Filename: "root.db", Text: rootJobsDB}); err != nil {
		t.Fatalf("load with allow_root_jobs: %v", err)
	}
	if allows, _ := live(); !allows {
		t.Errorf("after loading allow_root_jobs again: fsm AllowRootJobs false, want true")
	}
	if text, shown := shows(); !shown {
		t.Errorf("admin show lacks allow_root_jobs:\n%s", text)
	}
}
