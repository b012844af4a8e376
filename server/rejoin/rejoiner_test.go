package rejoin

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// stubAt answers GET /v1/facts with facts, counting the requests, and
// returns its address.
func stubAt(t *testing.T, facts client.Facts, asked *atomic.Int32) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(facts)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// joins is a Config whose Join records the addresses joined.
type joins struct {
	mu    sync.Mutex
	addrs []string
}

func (j *joins) config() Config {
	hc := &http.Client{Timeout: 5 * time.Second}
	return Config{
		StubClient: func(_, addr string) (*client.StubClient, error) {
			return client.NewStub(addr, client.WithHTTPClient(hc))
		},
		Join: func(addrs []string) (int, error) {
			j.mu.Lock()
			defer j.mu.Unlock()
			j.addrs = append(j.addrs, addrs...)
			return len(addrs), nil
		},
		Members: func() int { return 1 },
	}
}

func (j *joins) got() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.addrs)
}

// A round joins the gossip address of a machine that answers as itself,
// and not one that answers as another machine or names no gossip
// address; a machine is tried again only after its backoff, and one no
// longer unseen loses it.
func TestRejoinerJoinsAndBacksOff(t *testing.T) {
	var asked atomic.Int32
	unseen := map[string]string{
		"a": stubAt(t, client.Facts{Name: "a", GossipAddr: "10.0.0.1:7946"}, &asked),
		"b": stubAt(t, client.Facts{Name: "other", GossipAddr: "10.0.0.2:7946"}, &asked),
		"c": stubAt(t, client.Facts{Name: "c"}, &asked),
	}
	var j joins
	r := New(slog.New(slog.DiscardHandler), j.config())
	ctx := context.Background()
	now := time.Now()
	r.Kick(ctx, unseen, now)
	r.Wait()
	if got := j.got(); !slices.Equal(got, []string{"10.0.0.1:7946"}) {
		t.Errorf("joined %v, want a's gossip address alone", got)
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("asked %d stubs for their facts, want 3", n)
	}

	r.Kick(ctx, unseen, now.Add(rejoinFirst/2))
	r.Wait()
	if n := asked.Load(); n != 3 {
		t.Errorf("a round within the backoff asked %d more stubs, want none", n-3)
	}
	r.Kick(ctx, unseen, now.Add(rejoinFirst))
	r.Wait()
	if n := asked.Load(); n != 6 {
		t.Errorf("a round after the backoff asked %d more stubs, want 3", n-3)
	}

	delete(unseen, "a")
	r.Kick(ctx, unseen, now.Add(rejoinFirst))
	r.Wait()
	r.mu.Lock()
	_, kept := r.tries["a"]
	r.mu.Unlock()
	if kept {
		t.Errorf("a machine gossip sees again kept its backoff")
	}
}

// One round tries at most rejoinBatch machines.
func TestRejoinerBatch(t *testing.T) {
	var asked atomic.Int32
	addr := stubAt(t, client.Facts{Name: "nobody"}, &asked)
	unseen := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		unseen[name] = addr
	}
	var j joins
	r := New(slog.New(slog.DiscardHandler), j.config())
	r.Kick(context.Background(), unseen, time.Now())
	r.Wait()
	if n := asked.Load(); n != rejoinBatch {
		t.Errorf("one round asked %d machines, want %d", n, rejoinBatch)
	}
	if got := j.got(); len(got) != 0 {
		t.Errorf("joined %v, want nothing", got)
	}
}
