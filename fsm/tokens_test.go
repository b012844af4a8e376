package fsm_test

import (
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

func TestTokenIssue(t *testing.T) {
	valid := tokenIssue("0a1b2c3d", "alice", "root", 10, 3600)
	tests := []struct {
		name   string
		change func(c *fsm.TokenIssue)
		want   error
	}{
		{"valid", func(*fsm.TokenIssue) {}, nil},
		{"no ID", func(c *fsm.TokenIssue) { c.ID = "" }, fsm.ErrInvalidToken},
		{"no user", func(c *fsm.TokenIssue) { c.User = "" }, fsm.ErrInvalidToken},
		{"no hash", func(c *fsm.TokenIssue) { c.Hash = "" }, fsm.ErrInvalidToken},
		{"short hash", func(c *fsm.TokenIssue) { c.Hash = c.Hash[:63] }, fsm.ErrInvalidToken},
		{"upper-case hash", func(c *fsm.TokenIssue) { c.Hash = "A" + c.Hash[1:] }, fsm.ErrInvalidToken},
		{"expires when issued", func(c *fsm.TokenIssue) { c.ExpiresAt = c.IssuedAt }, fsm.ErrInvalidToken},
		{"expires before issued", func(c *fsm.TokenIssue) { c.ExpiresAt = c.IssuedAt.Add(-time.Second) }, fsm.ErrInvalidToken},
		{"ID taken", func(c *fsm.TokenIssue) { c.Hash = hashOf("other") }, fsm.ErrTokenExists},
		{"hash taken", func(c *fsm.TokenIssue) { c.ID = "ffffffff" }, fsm.ErrTokenExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newApplier(t)
			if tt.want == fsm.ErrTokenExists {
				a.mustOK(fsm.TokenIssueType, valid)
			}
			before := stateBytes(t, a.f)
			c := valid
			tt.change(&c)
			res := a.apply(fsm.TokenIssueType, c)
			wantErr(t, res.Err, tt.want)
			if tt.want != nil {
				assertUnchanged(t, a.f, before)
				return
			}
			var got *fsm.Token
			var ok bool
			a.f.Read(func(v fsm.View) { got, ok = v.TokenByHash(c.Hash) })
			want := fsm.Token{ID: c.ID, User: c.User, Hash: c.Hash, IssuedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt, IssuedBy: c.IssuedBy, CreateIndex: res.Index}
			if !ok || *got != want {
				t.Fatalf("TokenByHash: got %+v (found %v), want %+v", got, ok, want)
			}
		})
	}
}

func TestTokenRevoke(t *testing.T) {
	a := newApplier(t)
	alice := tokenIssue("0a1b2c3d", "alice", "root", 10, 3600)
	bob := tokenIssue("1b2c3d4e", "bob", "root", 11, 3600)
	a.mustOK(fsm.TokenIssueType, alice)
	a.mustOK(fsm.TokenIssueType, bob)
	a.mustOK(fsm.TokenRevokeType, fsm.TokenRevoke{At: at(20), ID: alice.ID, By: "root"})

	var ids []string
	var aliceFound, bobFound bool
	a.f.Read(func(v fsm.View) {
		for _, tk := range v.Tokens() {
			ids = append(ids, tk.ID)
		}
		_, aliceFound = v.TokenByHash(alice.Hash)
		_, bobFound = v.TokenByHash(bob.Hash)
	})
	if !slices.Equal(ids, []string{bob.ID}) || aliceFound || !bobFound {
		t.Errorf("after revoking alice's token: got tokens %v, alice's hash found %v, bob's %v; want [%s], false, true", ids, aliceFound, bobFound, bob.ID)
	}

	before := stateBytes(t, a.f)
	res := a.apply(fsm.TokenRevokeType, fsm.TokenRevoke{At: at(21), ID: alice.ID, By: "root"})
	wantErr(t, res.Err, fsm.ErrNoSuchToken)
	res = a.apply(fsm.TokenRevokeType, fsm.TokenRevoke{At: at(21), ID: "nosuch", By: "root"})
	wantErr(t, res.Err, fsm.ErrNoSuchToken)
	assertUnchanged(t, a.f, before)

	// The hash of a revoked token may be issued again (a new token with
	// the same secret is a bug of the proposer, but not the FSM's to
	// refuse): only tokens held count.
	a.mustOK(fsm.TokenIssueType, fsm.TokenIssue{ID: "2c3d4e5f", User: "alice", Hash: alice.Hash, IssuedAt: at(22), ExpiresAt: at(30)})
}

// TestTokenExpiryIsNotApplied: Apply keeps an expired token; Expired
// answers for the time a server asks about.
func TestTokenExpiryIsNotApplied(t *testing.T) {
	a := newApplier(t)
	a.mustOK(fsm.TokenIssueType, tokenIssue("0a1b2c3d", "alice", "root", 10, 60))
	a.mustOK(fsm.LeaderElectedType, fsm.LeaderElected{At: at(1000), Name: "s1", Term: 2})
	var tk *fsm.Token
	a.f.Read(func(v fsm.View) { tk, _ = v.Token("0a1b2c3d") })
	if tk == nil {
		t.Fatalf("expired token was dropped by Apply, want it kept")
	}
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{{at(10), false}, {at(69), false}, {at(70), true}, {at(1000), true}} {
		if got := tk.Expired(tc.at); got != tc.want {
			t.Errorf("Expired(%v) = %v, want %v", tc.at, got, tc.want)
		}
	}
}

// TestAdminEvents: every administrative change records who made it.
func TestAdminEvents(t *testing.T) {
	tests := []struct {
		name string
		cmd  command
		kind string
		want string
	}{
		{"database load", command{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(1), Source: "isis.db", By: "alice", Database: richDatabase("m2", "m4")}},
			fsm.EventDatabaseLoaded, "admin alice loaded the database from isis.db (2 machines, 1 queue)"},
		{"initial database", command{fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(1), Source: "/etc/netmgr/db", By: "server s1", Database: fsm.Database{}}},
			fsm.EventDatabaseLoaded, "server s1 loaded the database from /etc/netmgr/db (0 machines, 0 queues)"},
		{"queue added", command{fsm.SetQueueType, fsm.SetQueue{At: at(2), By: "alice", Queue: fsm.DeclaredQueue{Name: "batch", Priority: 1, MaxSize: 5, MaxActive: 2, MaxRunSeconds: 600, MaxMemMB: 2048}}},
			fsm.EventQueueAdded, "admin alice added queue batch: priority 1, max size 5, max active 2, max run 600s, max mem 2048 MB"},
		{"queue changed", command{fsm.SetQueueType, fsm.SetQueue{At: at(3), By: "bob", Queue: fsm.DeclaredQueue{Name: "NEW_Q", Priority: -1}}},
			fsm.EventQueueChanged, "admin bob changed queue NEW_Q: priority -1, no limits"},
		{"queue removed", command{fsm.RemoveQueueType, fsm.RemoveQueue{At: at(4), By: "bob", Name: "NEW_Q"}},
			fsm.EventQueueRemoved, "admin bob removed queue NEW_Q"},
		{"token issued", command{fsm.TokenIssueType, fsm.TokenIssue{ID: "3f9a12bc", User: "bob", Hash: hashOf("x"), IssuedBy: "root",
			IssuedAt: at(5), ExpiresAt: time.Date(2026, time.December, 24, 10, 0, 0, 0, time.UTC)}},
			fsm.EventTokenIssued, "admin root issued token 3f9a12bc for bob, expires 2026-12-24 10:00 UTC"},
		{"token revoked", command{fsm.TokenRevokeType, fsm.TokenRevoke{At: at(6), ID: "0a1b2c3d", By: "tclark"}},
			fsm.EventTokenRevoked, "admin tclark revoked token 0a1b2c3d of alice"},
		{"token swept", command{fsm.TokenRevokeType, fsm.TokenRevoke{At: at(6), ID: "0a1b2c3d", By: "server s1", Reason: "expired 2024-03-01 09:31 UTC"}},
			fsm.EventTokenRevoked, "server s1 revoked token 0a1b2c3d of alice (expired 2024-03-01 09:31 UTC)"},
		{"server removed", command{fsm.ServerRemovedType | fsm.IgnoreUnknownFlag, fsm.ServerRemoved{At: at(7), Name: "s3", By: "root"}},
			fsm.EventServerRemoved, "admin root removed server s3 from the raft group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newApplier(t)
			a.mustOK(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at(0), Database: richDatabase()})
			a.mustOK(fsm.TokenIssueType, tokenIssue("0a1b2c3d", "alice", "root", 0, 60))
			after := a.next - 1
			res := a.mustOK(tt.cmd.typ, tt.cmd.body)
			evs := a.events(after)
			if len(evs) != 1 {
				t.Fatalf("got events %+v, want one", evs)
			}
			want := fsm.Event{Index: res.Index, At: evs[0].At, Kind: tt.kind, Instance: -1, Detail: tt.want}
			if evs[0] != want {
				t.Errorf("got event %+v, want %+v", evs[0], want)
			}
		})
	}
}

// TestRefusedAdminChangeRecordsNoEvent: a change Apply refuses leaves no
// event claiming it happened.
func TestRefusedAdminChangeRecordsNoEvent(t *testing.T) {
	a := newApplier(t)
	for _, c := range []command{
		{fsm.RemoveQueueType, fsm.RemoveQueue{At: at(1), By: "bob", Name: "nosuch"}},
		{fsm.SetQueueType, fsm.SetQueue{At: at(2), By: "bob", Queue: fsm.DeclaredQueue{Name: "q", MaxActive: -1}}},
		{fsm.TokenRevokeType, fsm.TokenRevoke{At: at(3), ID: "nosuch", By: "bob"}},
		{fsm.TokenIssueType, fsm.TokenIssue{ID: "x", User: "bob", IssuedAt: at(4), ExpiresAt: at(5)}},
	} {
		if res := a.apply(c.typ, c.body); res.Err == nil {
			t.Errorf("%v: got nil error, want a refusal", c.typ)
		}
	}
	if evs := a.events(0); len(evs) != 0 {
		t.Errorf("got events %+v, want none", evs)
	}
}
