package stub

import (
	"context"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// BenchmarkStart measures one Start of /bin/true through the stub's API
// (a batch of one): the supervisor launched, the job forked and its
// attempt record durable in the outbox, which is when the Start is
// answered, with its CHILD_REGISTER. It is the stub's share of
// submit->running.
func BenchmarkStart(b *testing.B) {
	srv := newFakeServer(b, 0)
	s := newTestStub(b, Config{Servers: []string{srv.addr()}})
	c := stubClient(b, s)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		req := client.StartRequest{JobID: uint64(i + 1), JobName: "true", Attempt: 1, Binary: "/bin/true"}
		if _, err := startAlone(ctx, c, req); err != nil {
			b.Fatalf("Start: %v", err)
		}
	}
	b.StopTimer()
	srv.waitTerm(b, client.AttemptRef{JobID: uint64(b.N), Attempt: 1})
}
