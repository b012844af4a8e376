package stub

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// TestNoRestartableStartOutsideTheLease: a stub whose lease has run out
// (no server granted a renewal) refuses to start restartable attempts, the
// ones the servers may have started elsewhere, and still starts the rest.
func TestNoRestartableStartOutsideTheLease(t *testing.T) {
	s := newTestStub(t, Config{})
	s.lease.deadline.Store(int64(bootNow() - time.Second))
	c := stubClient(t, s)
	req := client.StartRequest{JobID: 1, Instance: 0, Attempt: 2, Binary: "/bin/true", Restartable: true}
	err := c.Start(t.Context(), req)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Fatalf("got %v, want 409: outside its lease", err)
	}
	req.JobID, req.Restartable = 2, false
	if err := c.Start(t.Context(), req); err != nil {
		t.Errorf("non-restartable start outside the lease: %v, want it started", err)
	}
}
