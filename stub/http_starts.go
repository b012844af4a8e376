package stub

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
)

const (
	// maxBatchBody bounds the body of POST /v1/starts.
	maxBatchBody = 8 << 20
	// maxBatchStarts bounds the Starts of one POST /v1/starts (the leader
	// sends at most 256).
	maxBatchStarts = 1024
)

// handleStarts answers POST /v1/starts: it runs every Start of the batch
// concurrently (startOne; a Start may wait for its supervisor to come up,
// and must not hold up the others), and answers 200 with one result per
// Start, in order, once all have one. The results carry the attempts'
// CHILD_REGISTERs.
func (s *Stub) handleStarts(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	var batch client.StartBatchRequest
	if !decode(w, r, &batch, maxBatchBody) {
		return
	}
	if len(batch.Starts) > maxBatchStarts {
		writeError(w, http.StatusBadRequest, fmt.Errorf("start batch: %d starts, at most %d", len(batch.Starts), maxBatchStarts))
		return
	}
	resp := client.StartBatchResponse{Results: make([]client.StartResult, len(batch.Starts))}
	var wg sync.WaitGroup
	for i, req := range batch.Starts {
		wg.Go(func() { resp.Results[i] = s.startOne(received, req) })
	}
	wg.Wait()
	writeJSON(w, http.StatusOK, resp)
}
