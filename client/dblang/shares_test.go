package dblang

import (
	"strings"
	"testing"
)

func TestParseShares(t *testing.T) {
	src := `add_q q = {nq_maxuser_active=2, nq_maxuser_queued=20}
account physics = {share=10, users={alice, bob}}
account chem = {users={carol}}
share alice = 2
fairshare_halflife = 36h
`
	db, err := Parse("site.db", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if q := db.Queues[0]; q.MaxUserActive != 2 || q.MaxUserQueued != 20 {
		t.Errorf("queue %+v", q)
	}
	if len(db.Accounts) != 2 || db.Accounts[0].Name != "physics" || db.Accounts[0].Share != 10 ||
		strings.Join(db.Accounts[0].Users, ",") != "alice,bob" || db.Accounts[1].Share != 0 {
		t.Errorf("accounts %+v", db.Accounts)
	}
	if len(db.Shares) != 1 || db.Shares[0].User != "alice" || db.Shares[0].Share != 2 {
		t.Errorf("shares %+v", db.Shares)
	}
	if db.HalfLifeSeconds != 36*3600 {
		t.Errorf("half-life %d", db.HalfLifeSeconds)
	}
	out := Format(db)
	for _, want := range []string{"nq_maxuser_active=2, nq_maxuser_queued=20", "account physics = {share=10, users={alice, bob}}",
		"account chem = {users={carol}}", "share alice = 2", "fairshare_halflife = 36h"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("Format lacks %q:\n%s", want, out)
		}
	}
	again, err := Parse("again.db", out)
	if err != nil || !again.Equal(db) {
		t.Errorf("Format does not read back equal (%v):\n%s", err, out)
	}
}

func TestParseSharesErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"account a = {users={x}}\naccount b = {users={x}}\n", "2:21: user x is already in account a; a user is in at most one account"},
		{"share alice = 0\n", "1:15: share alice = 0 must be 1 or more"},
		{"share alice = 1\nshare alice = 2\n", "2:7: share alice is given twice (first at line 1); remove one"},
		{"fairshare_halflife = 7w\n", "1:22: bad fairshare_halflife \"7w\"; write a whole number with a unit s, m, h or d, from 1m to 3650d, such as 7d"},
		{"fairshare_halflife = 7d\nfairshare_halflife = 1d\n", "2:1: fairshare_halflife is given twice (first at line 1); remove one"},
		{"account a = {share=0}\n", "1:20: share=0 in account a must be 1 or more"},
		{"account a = {shares=2}\n", "1:14: unknown item \"shares\" in account a; write {share=N, users={USER, ...}}"},
	} {
		_, err := Parse("", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
}
