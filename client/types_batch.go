package client

// MaxBatchJobs bounds the jobs of one batched submit (netexec --batch):
// the servers refuse a larger batch, whose jobs would make one Raft log
// entry too large to replicate promptly.
const MaxBatchJobs = 1000

// SubmitBatchRequest is the body of POST /v1/jobs/batch: several jobs
// submitted in one request. The servers check every job before creating
// any: one refused job refuses the batch, its error naming the job by its
// place in Jobs ("job 3: ..."). The jobs that need nothing of their own
// (no cron schedule, working directory or dependencies) are then created
// together, in one log entry; after them the others, one after another in
// their order.
// Each job's IdempotencyKey makes a retried batch return the jobs the
// first try created.
type SubmitBatchRequest struct {
	Jobs []SubmitRequest `json:"jobs"`
}

// SubmitBatchResponse answers a batched submit: one answer per job, in
// the order of the request.
type SubmitBatchResponse struct {
	Jobs []SubmitResponse `json:"jobs"`
}
