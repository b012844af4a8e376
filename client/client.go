package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// UserHeader carries the requesting user's name in the insecure mode
// only (servers started with --insecure, which prove nothing). A server
// with TLS ignores it: a request acts as the identity it proves.
const UserHeader = "X-Netmgr-User"

// VouchedUserHeader carries the user a stub vouches for: the owner of the
// process that called the stub's Unix socket, as the kernel told the stub.
// A server believes it only from a connection with a stub certificate (or
// from a server passing on what it verified, ForwardedPrincipalHeader).
const VouchedUserHeader = "X-Netmgr-Vouched-User"

// ForwardedPrincipalHeader carries, from a follower to the leader, the
// identity the follower verified for a request it passes on. A server
// believes it only from a connection with a server certificate.
const ForwardedPrincipalHeader = "X-Netmgr-Principal"

// LeaderHeader names the API address (host:port) of the leader that
// answered a request, directly or through the follower that forwarded it
// or redirected the client. A client that knows that address among its
// servers sends to it from then on, saving the follower's hop.
const LeaderHeader = "X-Netmgr-Leader"

// IndexHeader carries the Raft index a server's answer reflects.
const IndexHeader = "X-Netmgr-Index"

// TotalCountHeader carries how many jobs a filtered or paged
// GET /v1/jobs?owner=&state=&queue=&name=&offset=&limit= selected in all.
const TotalCountHeader = "X-Netmgr-Total-Count"

// DefaultRetryFor is how long a request keeps retrying across servers while
// none answers or the group has no leader: long enough to ride through an
// election.
const DefaultRetryFor = 15 * time.Second

// Client talks to the server group. It is safe for concurrent use.
type Client struct {
	hc         *http.Client
	user       string
	scheme     string        // for addresses without one: "http://" or "https://"
	token      string        // sent as Authorization: Bearer, when set
	expect     *pki.Identity // the peer every answer must come from, when set
	socket     bool          // requests go over a stub's Unix socket (WithUnixSocket)
	socketPath string        // that socket, for messages
	vouched    string        // sent as VouchedUserHeader, when set
	stub       bool          // the peer is a stub (NewStub), for error messages
	retryFor   time.Duration
	tryTimeout time.Duration // per server tried; 0 = none beyond the request's
	hedge      time.Duration // WithHedge; 0 = one server at a time
	patience   time.Duration // WithLeaderPatience; 0 = the hedge delay

	leases           *leaseStreams    // WithLeaseStream; nil = plain requests only
	warm             *warmth          // WithWarmConnections; nil = none
	giveUpUnanswered time.Duration    // WithGiveUpUnanswered; 0 = the retry period
	noticeAfter      time.Duration    // WithWaitNotice
	notice           func(msg string) // WithWaitNotice; nil = none

	mu        sync.Mutex // guards addrs, preferred and leaderKnown
	addrs     []string
	preferred int
	// leaderKnown is set while the preferred server is the leader, as an
	// answer named it (LeaderHeader) or SetLeader hinted it.
	leaderKnown bool
}

// Option configures a Client.
type Option func(*Client)

// WithUser sets the identity sent with every request.
func WithUser(user string) Option { return func(c *Client) { c.user = user } }

// WithHTTPClient replaces the default HTTP client.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetryFor sets how long requests retry across servers (see DefaultRetryFor).
func WithRetryFor(d time.Duration) Option { return func(c *Client) { c.retryFor = d } }

// WithTryTimeout bounds each attempt on one server, so a server that hangs
// (cut off by a partition rather than refusing) costs only d before the
// next is tried. Zero means no bound beyond the request's context.
func WithTryTimeout(d time.Duration) Option { return func(c *Client) { c.tryTimeout = d } }

// New returns a client for the servers at addrs, each "host:port" or a URL.
func New(addrs []string, opts ...Option) (*Client, error) {
	c := &Client{
		hc:       &http.Client{Timeout: 70 * time.Second, Transport: newTransport()},
		retryFor: DefaultRetryFor,
		scheme:   "http://",
	}
	for _, o := range opts {
		o(c)
	}
	if c.socket {
		addrs = []string{"http://" + SocketHost}
	}
	if c.token != "" {
		c.keepTokenOnRedirect()
	}
	if err := c.SetAddrs(addrs); err != nil {
		return nil, err
	}
	return c, nil
}

func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

// keepTokenOnRedirect makes the client send its token again when a
// follower redirects a read to the leader at another host: Go's client
// drops Authorization across hosts, but the target is a server whose
// certificate the TLS transport checks, so the token may go there.
func (c *Client) keepTokenOnRedirect() {
	hc := *c.hc
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return fmt.Errorf("stopped after %d redirects", len(via))
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		return nil
	}
	c.hc = &hc
}

// SetAddrs replaces the server list, for callers that learn it from gossip.
func (c *Client) SetAddrs(addrs []string) error {
	var norm []string
	for _, a := range addrs {
		for _, part := range strings.Split(a, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if !strings.Contains(part, "://") {
				part = c.scheme + part
			}
			norm = append(norm, strings.TrimRight(part, "/"))
		}
	}
	if len(norm) == 0 {
		return ErrNoAddress
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Keep preferring the server preferred so far, the leader as an answer
	// named it, when it is still listed: a stub learns the servers one by
	// one from gossip, and starting over at the first each time would
	// send its next request to a follower (and, over TLS, make a
	// connection to it).
	keep := -1
	if c.preferred < len(c.addrs) {
		keep = slices.Index(norm, c.addrs[c.preferred])
	}
	c.addrs = norm
	if keep < 0 {
		c.preferred, c.leaderKnown = 0, false
	} else {
		c.preferred = keep
	}
	return nil
}

// SetLeader makes addr ("host:port" or a URL), when it is one of the
// client's servers, the one requests go to first, as the leader: a hint
// from outside the answers, such as the servers' gossip metadata. An
// address not among the servers is ignored.
func (c *Client) SetLeader(addr string) {
	if !strings.Contains(addr, "://") {
		addr = c.scheme + addr
	}
	addr = strings.TrimRight(addr, "/")
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := slices.Index(c.addrs, addr); k >= 0 {
		c.preferred, c.leaderKnown = k, true
	}
}

// Addrs returns the server URLs the client uses.
func (c *Client) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.addrs...)
}

// Submit submits a job. A request without an idempotency key gets one, so
// the client's own retries can never create a second job.
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (SubmitResponse, error) {
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = NewIdempotencyKey()
	}
	var resp SubmitResponse
	err := c.do(ctx, http.MethodPost, "/v1/jobs", req, &resp)
	return resp, err
}

// SubmitBatch submits several jobs in one request (see
// SubmitBatchRequest), filling in the idempotency keys not set, and
// returns their answers in order.
func (c *Client) SubmitBatch(ctx context.Context, reqs []SubmitRequest) ([]SubmitResponse, error) {
	body := SubmitBatchRequest{Jobs: make([]SubmitRequest, len(reqs))}
	for i, r := range reqs {
		if r.IdempotencyKey == "" {
			r.IdempotencyKey = NewIdempotencyKey()
		}
		body.Jobs[i] = r
	}
	var resp SubmitBatchResponse
	if err := c.do(ctx, http.MethodPost, "/v1/jobs/batch", body, &resp); err != nil {
		return nil, err
	}
	if len(resp.Jobs) != len(reqs) {
		return nil, fmt.Errorf("submit batch: %d answers for %d jobs", len(resp.Jobs), len(reqs))
	}
	return resp.Jobs, nil
}

// Jobs lists every job.
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	var jobs []Job
	err := c.do(ctx, http.MethodGet, "/v1/jobs", nil, &jobs)
	return jobs, err
}

// Job returns one job by id or name: a name's one live job, else its most
// recent; a name several live jobs share is an error that lists them.
func (c *Client) Job(ctx context.Context, ref string) (Job, error) {
	var job Job
	err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(ref), nil, &job)
	return job, err
}

// Wait conditions for WaitJob.
const (
	WaitStarted = "started" // every instance has registered (or ended)
	WaitDone    = "done"    // every instance has ended
)

// WaitJob blocks until the job reaches the condition (WaitStarted or
// WaitDone) or ctx ends. It long-polls the server, so it wakes as soon as
// the event is committed.
func (c *Client) WaitJob(ctx context.Context, ref, until string) (Job, error) {
	for {
		var job Job
		path := "/v1/jobs/" + url.PathEscape(ref) + "?wait=" + url.QueryEscape(until) + "&timeout=30s"
		if err := c.do(ctx, http.MethodGet, path, nil, &job); err != nil {
			return job, err
		}
		if JobReached(job, until) {
			return job, nil
		}
		if err := ctx.Err(); err != nil {
			return job, fmt.Errorf("wait for job %s %s: %w", ref, until, err)
		}
	}
}

// PollJob is one long-poll of WaitJob: it returns the job once it
// reaches the condition (WaitStarted or WaitDone) or, as it stands, once
// timeout (the server caps it at a minute) passes first; a caller that
// reports progress loops on it.
func (c *Client) PollJob(ctx context.Context, ref, until string, timeout time.Duration) (Job, error) {
	var job Job
	path := "/v1/jobs/" + url.PathEscape(ref) + "?wait=" + url.QueryEscape(until) + "&timeout=" + url.QueryEscape(timeout.String())
	err := c.do(ctx, http.MethodGet, path, nil, &job)
	return job, err
}

// JobReached reports whether job satisfies the wait condition.
func JobReached(job Job, until string) bool {
	for _, in := range job.Instances {
		if !InstanceReached(in.State, until) {
			return false
		}
	}
	return true
}

// InstanceReached reports whether an instance in state satisfies the wait
// condition: WaitStarted once it has registered (or ended), any other
// once it has ended.
func InstanceReached(state, until string) bool {
	if until == WaitStarted {
		return state != InstanceQueued && state != InstancePlaced && state != InstanceHeld
	}
	return Instance{State: state}.Finished()
}

// Kill kills every instance of a job.
func (c *Client) Kill(ctx context.Context, ref string, req KillRequest) (KillResponse, error) {
	var resp KillResponse
	err := c.do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(ref)+"/kill", req, &resp)
	return resp, err
}

// Machines lists the machines of the pool.
func (c *Client) Machines(ctx context.Context) ([]Machine, error) {
	var ms []Machine
	err := c.do(ctx, http.MethodGet, "/v1/machines", nil, &ms)
	return ms, err
}

// Servers lists the server group with each member's own view of its role.
func (c *Client) Servers(ctx context.Context) ([]Server, error) {
	var ss []Server
	err := c.do(ctx, http.MethodGet, "/v1/servers", nil, &ss)
	return ss, err
}

// Suspend stops every running instance of a job (SIGSTOP to its process
// group); the instances keep their slots.
func (c *Client) Suspend(ctx context.Context, ref string) (ControlResponse, error) {
	return c.control(ctx, ref, "suspend")
}

// Resume continues a suspended job (SIGCONT).
func (c *Client) Resume(ctx context.Context, ref string) (ControlResponse, error) {
	return c.control(ctx, ref, "resume")
}

// Restart ends every instance's current attempt and starts a new one.
func (c *Client) Restart(ctx context.Context, ref string) (ControlResponse, error) {
	return c.control(ctx, ref, "restart")
}

func (c *Client) control(ctx context.Context, ref, action string) (ControlResponse, error) {
	var resp ControlResponse
	err := c.do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(ref)+"/"+action, struct{}{}, &resp)
	return resp, err
}

// Queues lists the batch queues with their limits and contents.
func (c *Client) Queues(ctx context.Context) ([]Queue, error) {
	var qs []Queue
	err := c.do(ctx, http.MethodGet, "/v1/queues", nil, &qs)
	return qs, err
}

// Share returns the fair-share accounts and users (GET /v1/share).
func (c *Client) Share(ctx context.Context) (ShareReport, error) {
	var out ShareReport
	err := c.do(ctx, http.MethodGet, "/v1/share", nil, &out)
	return out, err
}

// Licenses lists the pool's licences with how many are held.
func (c *Client) Licenses(ctx context.Context) ([]License, error) {
	var ls []License
	err := c.do(ctx, http.MethodGet, "/v1/licenses", nil, &ls)
	return ls, err
}

// SetQueue creates a queue or replaces the limits of one (admins only).
func (c *Client) SetQueue(ctx context.Context, q Queue) (Queue, error) {
	var out Queue
	err := c.do(ctx, http.MethodPut, "/v1/queues/"+url.PathEscape(q.Name), q, &out)
	return out, err
}

// RemoveQueue removes an empty queue (admins only).
func (c *Client) RemoveQueue(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/queues/"+url.PathEscape(name), nil, nil)
}

// Reserve sets machines aside for the requesting user.
func (c *Client) Reserve(ctx context.Context, req ReserveRequest) (Reservation, error) {
	var r Reservation
	err := c.do(ctx, http.MethodPost, "/v1/reservations", req, &r)
	return r, err
}

// Unreserve ends reservations of the requesting user.
func (c *Client) Unreserve(ctx context.Context, req UnreserveRequest) (UnreserveResponse, error) {
	var r UnreserveResponse
	err := c.do(ctx, http.MethodPost, "/v1/reservations/end", req, &r)
	return r, err
}

// Reservations lists the reservations in force or yet to start.
func (c *Client) Reservations(ctx context.Context) ([]Reservation, error) {
	var rs []Reservation
	err := c.do(ctx, http.MethodGet, "/v1/reservations", nil, &rs)
	return rs, err
}

// Why explains why each queued instance of a job waits.
func (c *Client) Why(ctx context.Context, ref string) ([]WhyInstance, error) {
	var out []WhyInstance
	err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(ref)+"/why", nil, &out)
	return out, err
}

// LoadDatabase replaces the live database with the declarations in db, as
// one replicated command: all of it or, on any error, none of it.
func (c *Client) LoadDatabase(ctx context.Context, db DatabaseText) (LoadResponse, error) {
	var resp LoadResponse
	err := c.do(ctx, http.MethodPost, "/v1/admin/database", db, &resp)
	return resp, err
}

// Database returns the live database printed in the declaration language.
func (c *Client) Database(ctx context.Context) (DatabaseText, error) {
	var db DatabaseText
	err := c.do(ctx, http.MethodGet, "/v1/admin/database", nil, &db)
	return db, err
}

// RenewLease renews a stub's lease; it returns once the leader, having
// confirmed it still leads, has granted it.
//
// With WithLeaseStream it renews on a lease stream with the leader when
// it can (lease_stream.go); with WithWarmConnections it keeps a connection
// to every server (warm.go).
func (c *Client) RenewLease(ctx context.Context, req LeaseRequest) (LeaseResponse, error) {
	defer c.keepWarm()
	afterStream := false
	if c.leases != nil {
		resp, done, err := c.renewOnStream(ctx, req)
		if done {
			return resp, err
		}
		// The stream failed, or is stuck: it used the leader's patience,
		// so the plain request asks the other servers first. A stream
		// merely slow once (errStreamSlow) leaves the leader first: under
		// load, sending every stub to the followers, each to forward,
		// would add to the leader's work (2,000 simulated machines joining
		// on 2 cores: 47-51 leader changes in 7 minutes against 15). A
		// stream still opening (errStreamOpening) is a slow leader too.
		afterStream = err != nil && !errors.Is(err, errStreamSlow) && !errors.Is(err, errStreamLeaderNamed) &&
			!errors.Is(err, errStreamOpening)
	}
	var resp LeaseResponse
	body, err := json.Marshal(req)
	if err != nil {
		return resp, fmt.Errorf("encode lease request: %w", err)
	}
	err = c.doBodyFrom(ctx, http.MethodPost, "/v1/lease", body, &resp, afterStream)
	if c.leases != nil && err == nil {
		c.leases.mu.Lock()
		c.leases.offered = resp.Streams
		c.leases.renew = time.Duration(resp.RenewMS) * time.Millisecond
		c.leases.renewVia(c.scheme, resp)
		c.leases.mu.Unlock()
	}
	return resp, err
}

// ReportChildren sends a batch of CHILD events; it returns once a server
// has committed each (or refused it, per event). An attempt's events must
// be in the order they happened.
func (c *Client) ReportChildren(ctx context.Context, evs []ChildEvent) ([]ChildEventResult, error) {
	var resp ChildEventBatchResponse
	if err := c.do(ctx, http.MethodPost, "/v1/children", ChildEventBatch{Events: evs}, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(evs) {
		return nil, fmt.Errorf("report child events: %d results for %d events", len(resp.Results), len(evs))
	}
	return resp.Results, nil
}

// NewIdempotencyKey returns a random key for SubmitRequest.IdempotencyKey.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// do sends one request, failing over across servers and retrying while the
// group has no leader, until c.retryFor has passed or ctx ends.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
	}
	return c.doBody(ctx, method, path, body, out)
}

// doBody is do with the request's body already encoded.
func (c *Client) doBody(ctx context.Context, method, path string, body []byte, out any) error {
	return c.doBodyFrom(ctx, method, path, body, out, false)
}

// doBodyFrom is doBody, beginning its first round after the preferred
// server, with no leader patience, when skip is set and there is another.
func (c *Client) doBodyFrom(ctx context.Context, method, path string, body []byte, out any, skip bool) error {
	c.mu.Lock()
	addrs := append([]string(nil), c.addrs...)
	start, leader := c.preferred, c.leaderKnown
	c.mu.Unlock()
	if skip && len(addrs) > 1 {
		start, leader = (start+1)%len(addrs), false
	}

	clock := c.newRetryClock()
	backoff := 25 * time.Millisecond
	var last error
	var slow throttle
	for {
		var done bool
		var err error
		if c.hedge > 0 {
			done, err = c.hedged(ctx, method, path, body, addrs, start, leader, out, clock)
		} else {
			done, err = c.sequentialRound(ctx, method, path, body, addrs, start, out, clock)
		}
		if done {
			return err
		}
		var th *throttled
		if errors.As(err, &th) {
			if err := slow.wait(ctx, th); err != nil {
				return err
			}
			clock.progress()
			c.mu.Lock()
			start, leader = c.preferred, c.leaderKnown
			c.mu.Unlock()
			continue
		}
		last = err
		wait, ok := clock.next(Jittered(backoff), addrs, last)
		if !ok {
			return &unreachableError{tried: addrs, last: last, stub: c.stub}
		}
		select {
		case <-ctx.Done():
			return &unreachableError{tried: addrs, last: ctx.Err(), stub: c.stub}
		case <-time.After(wait):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// sequentialRound tries the servers one after another, from index start,
// each for at most the try timeout. It returns done with the request's
// outcome once a server answered it (or ctx ended), else the last error.
func (c *Client) sequentialRound(ctx context.Context, method, path string, body []byte, addrs []string, start int, out any, clock *retryClock) (done bool, last error) {
	for i := range addrs {
		n := (start + i) % len(addrs)
		tctx, cancel := ctx, context.CancelFunc(func() {})
		if c.tryTimeout > 0 {
			tctx, cancel = context.WithTimeout(ctx, c.tryTimeout)
		}
		leader, err := c.try(tctx, method, addrs[n]+path, body, out)
		cancel()
		if err == nil {
			c.answered(addrs, n, leader)
			return true, nil
		}
		var apiErr *APIError
		var th *throttled
		switch {
		case errors.As(err, &apiErr) || ctx.Err() != nil:
			return true, err
		case errors.As(err, &th):
			return false, err // wait, then ask the same server again
		}
		last = err
		clock.failed(err)
		c.skip(n, len(addrs)) // prefer the next server from now on
	}
	return false, last
}

// answered makes the server that answered (the leader it named, when that
// is one of addrs; else server n) the one the next request goes to first.
func (c *Client) answered(addrs []string, n int, leader string) {
	known := false
	if k := slices.Index(addrs, c.scheme+leader); leader != "" && k >= 0 {
		n, known = k, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// The list may have changed since the request began (SetAddrs).
	if k := slices.Index(c.addrs, addrs[n]); k >= 0 {
		c.preferred, c.leaderKnown = k, known
	}
}

// retryable is a server's answer that another server, or a later try, may
// answer differently: no leader, shutting down, overloaded.
type retryable struct{ msg string }

func (e *retryable) Error() string { return e.msg }

// try sends one request to one server and returns the leader its answer
// named (LeaderHeader), if any.
func (c *Client) try(ctx context.Context, method, u string, body []byte, out any) (leader string, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return "", &APIError{Status: 0, Message: fmt.Sprintf("build request %s: %v", u, err)}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.setIdentity(req)
	if c.expect != nil {
		req = req.WithContext(context.WithValue(ctx, expectKey{}, *c.expect))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if c.expect != nil && resp.TLS != nil {
		// A pooled connection was dialed for whoever was at this address
		// then; check the one that answered.
		if err := checkPeer(resp.TLS, *c.expect, u); err != nil {
			return "", err
		}
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read answer of %s: %w", u, err)
	}
	if resp.StatusCode >= 300 {
		var e ErrorResponse
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if th := throttledBy(resp, msg); th != nil {
			return "", th
		}
		if resp.StatusCode >= 500 {
			return "", &retryable{msg: fmt.Sprintf("%s: %s: %s", u, resp.Status, msg)}
		}
		return "", &APIError{Status: resp.StatusCode, Message: msg}
	}
	leader = resp.Header.Get(LeaderHeader)
	if out == nil {
		return leader, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return "", fmt.Errorf("decode answer of %s: %w", u, err)
	}
	return leader, nil
}

// setIdentity sets the headers that say who req acts for: the insecure
// mode's user, a token, or the user a stub vouches for.
func (c *Client) setIdentity(req *http.Request) {
	if c.user != "" {
		req.Header.Set(UserHeader, c.user)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.vouched != "" {
		req.Header.Set(VouchedUserHeader, c.vouched)
	}
}

// ParseIndex reads IndexHeader from a response header; 0 when absent.
func ParseIndex(h http.Header) uint64 {
	n, _ := strconv.ParseUint(h.Get(IndexHeader), 10, 64)
	return n
}

// RemoveServer removes a stopped server from the Raft configuration
// (admins only). The servers refuse the leader, an unknown name and a
// server that is still alive in the gossip pool.
func (c *Client) RemoveServer(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/raft/servers/"+url.PathEscape(name), nil, nil)
}

// With returns a copy of c with opts applied on top of its options; the
// copy starts with c's server list and preferred server.
func (c *Client) With(opts ...Option) *Client {
	c.mu.Lock()
	cp := &Client{
		hc: c.hc, user: c.user, scheme: c.scheme, token: c.token, expect: c.expect, socket: c.socket, socketPath: c.socketPath, vouched: c.vouched,
		retryFor: c.retryFor, tryTimeout: c.tryTimeout,
		giveUpUnanswered: c.giveUpUnanswered, noticeAfter: c.noticeAfter, notice: c.notice,
		hedge: c.hedge, patience: c.patience,
		addrs: append([]string(nil), c.addrs...), preferred: c.preferred, leaderKnown: c.leaderKnown,
	}
	c.mu.Unlock()
	for _, o := range opts {
		o(cp)
	}
	return cp
}
