package client

import (
	"net/url"
	"strconv"
)

// The streams of an attempt that netmgr logs reads (LogRequest.Stream,
// LogsQuery.Stream): its standard output and standard error, the files
// "stdout" and "stderr" of its exec dir.
const (
	LogStdout = "stdout"
	LogStderr = "stderr"
)

// LogRequest asks a stub for one attempt's standard output or error,
// from byte Offset on (GET /v1/logs, servers only). With Follow the stub
// goes on sending what the attempt writes until the attempt has ended
// and the file is drained; without it the answer ends at the file's end.
// The stub answers 404 for an attempt it does not know and 410 when the
// attempt's exec dir was removed after the exec retention.
type LogRequest struct {
	AttemptRef
	Stream string
	Offset int64
	Follow bool
}

// query is the request's URL query.
func (r LogRequest) query() string {
	q := url.Values{}
	q.Set("job", strconv.FormatUint(r.JobID, 10))
	q.Set("instance", strconv.Itoa(r.Instance))
	q.Set("attempt", strconv.FormatUint(r.Attempt, 10))
	q.Set("stream", r.Stream)
	if r.Offset > 0 {
		q.Set("offset", strconv.FormatInt(r.Offset, 10))
	}
	if r.Follow {
		q.Set("follow", "1")
	}
	return q.Encode()
}

// LogsQuery says which output of a job netmgr logs reads
// (GET /v1/jobs/{ref}/logs): instance Instance's standard output, or
// its standard error when Stream is LogStderr, of its current attempt
// (or its last one, when it runs no more). With Follow the answer goes
// on as the attempt writes and ends when the attempt has ended.
type LogsQuery struct {
	Instance int
	Stream   string
	Follow   bool
}

// query is the request's URL query.
func (q LogsQuery) query() string {
	v := url.Values{}
	v.Set("instance", strconv.Itoa(q.Instance))
	if q.Stream != "" {
		v.Set("stream", q.Stream)
	}
	if q.Follow {
		v.Set("follow", "1")
	}
	return v.Encode()
}
