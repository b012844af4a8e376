package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// The stream figures' shape: uiPages open pages (Server-Sent Event
// streams), uiLatencyEvents events timed one at a time, then rounds of
// uiWindow windows: idle, a burst of events at uiEventRate, and polling.
const (
	uiPages              = 100
	uiLatencyEvents      = 30
	uiLatencyEventsQuick = 10
	uiCPURounds          = 3
	uiCPURoundsQuick     = 1
	uiWindow             = 4 * time.Second
	uiEventRate          = 50 // events a second in a burst
	// uiPollPath is what the jobs view reads, as a polling page would
	// each second.
	uiPollPath = "/v1/jobs?owner=&state=&queue=&name=&offset=0&limit=50&stale"
	// uiEventKind is the kind of the events the suite causes.
	uiEventKind = "job-submitted"
)

// pageClient is one page's HTTP client: its own connection to the page
// server, trusting the cluster's CA, with the session cookie a sign-in
// set (or, in an insecure cluster, the page's user header).
type pageClient struct {
	hc   *http.Client
	auth func(*http.Request)
}

// newPageClient signs a page in to base with token and returns its
// client. Each page has its own transport, as a hundred browsers have
// their own connections.
func newPageClient(ctx context.Context, c *servertest.ProcCluster, base, token, user string) (*pageClient, error) {
	tr := &http.Transport{ForceAttemptHTTP2: true}
	if c.Secure() {
		pem, err := os.ReadFile(c.CAFile())
		if err != nil {
			return nil, fmt.Errorf("page client: %w", err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	}
	pc := &pageClient{hc: &http.Client{Transport: tr}}
	if !c.Secure() {
		pc.auth = func(r *http.Request) { r.Header.Set("X-Netmgr-User", user) }
		return pc, nil
	}
	body, _ := json.Marshal(map[string]string{"token": token})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/ui/login", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("page sign-in: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Netmgr-Dashboard", "1")
	resp, err := pc.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("page sign-in: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode/100 != 2 || len(cookies) == 0 {
		return nil, fmt.Errorf("page sign-in: %s, %d cookies", resp.Status, len(cookies))
	}
	pc.auth = func(r *http.Request) {
		for _, ck := range cookies {
			r.AddCookie(ck)
		}
	}
	return pc, nil
}

// get sends GET base+path as the page and returns the response.
func (pc *pageClient) get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("page get: %w", err)
	}
	pc.auth(req)
	resp, err := pc.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("page get: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("page get %s: %s", url, resp.Status)
	}
	return resp, nil
}

// streamEvent is what a page reads of one event: its kind, job and when
// the leader stamped it.
type streamEvent struct {
	Kind string    `json:"kind"`
	Job  uint64    `json:"job"`
	At   time.Time `json:"at"`
}

// readSSE reads a Server-Sent Event stream, calling hello on its hello
// event and fn on every data line of an unnamed event, until r ends.
func readSSE(r io.Reader, hello func(), fn func(streamEvent)) error {
	sc := bufio.NewScanner(r)
	named := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			named = false
		case strings.HasPrefix(line, "event: "):
			named = true
			if line == "event: hello" {
				hello()
			}
		case strings.HasPrefix(line, "data: ") && !named:
			var e streamEvent
			if err := json.Unmarshal([]byte(line[len("data: "):]), &e); err == nil {
				fn(e)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read event stream: %w", err)
	}
	return nil
}

// arrivals records when each page saw each awaited job's event.
type arrivals struct {
	mu   sync.Mutex // guards the fields below
	want map[uint64]*arrival
}

// arrival is one awaited event: the leader's stamp and each page's time.
type arrival struct {
	at   time.Time
	seen []time.Time
	done chan struct{} // closed once every page has it
}

// get returns job's arrival, made on its first mention: a page may see
// the event before the submit that caused it has returned.
func (a *arrivals) get(job uint64, pages int) *arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.getLocked(job, pages)
}

// getLocked is get with a.mu held.
func (a *arrivals) getLocked(job uint64, pages int) *arrival {
	if a.want == nil {
		a.want = make(map[uint64]*arrival)
	}
	w := a.want[job]
	if w == nil {
		w = &arrival{seen: make([]time.Time, 0, pages), done: make(chan struct{})}
		a.want[job] = w
	}
	return w
}

// saw records a page seeing e at t.
func (a *arrivals) saw(e streamEvent, t time.Time, pages int) {
	if e.Kind != uiEventKind {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.getLocked(e.Job, pages)
	if len(w.seen) == pages {
		return
	}
	w.at = e.At
	w.seen = append(w.seen, t)
	if len(w.seen) == pages {
		close(w.done)
	}
}

// spread returns how long after the stamp the first and the last page
// saw the event, in ms; call it once done is closed.
func (w *arrival) spread() (first, last float64) {
	for i, t := range w.seen {
		d := float64(t.Sub(w.at)) / float64(time.Millisecond)
		if i == 0 || d < first {
			first = d
		}
		last = max(last, d)
	}
	return first, last
}

// openStreams opens n pages' event streams on base and returns once
// every one has said hello; cancel closes them.
func openStreams(ctx context.Context, pages []*pageClient, base string, a *arrivals) (cancel func(), err error) {
	sctx, stop := context.WithCancel(ctx)
	var wg, ready sync.WaitGroup
	ready.Add(len(pages))
	errs := make(chan error, len(pages))
	for _, pc := range pages {
		wg.Go(func() {
			resp, err := pc.get(sctx, base+"/ui/events")
			if err != nil {
				errs <- err
				ready.Done()
				return
			}
			defer resp.Body.Close()
			var once sync.Once
			hello := func() { once.Do(ready.Done) }
			_ = readSSE(resp.Body, hello, func(e streamEvent) { a.saw(e, time.Now(), len(pages)) })
			hello()
		})
	}
	ready.Wait()
	cancel = func() { stop(); wg.Wait() }
	select {
	case err := <-errs:
		cancel()
		return nil, fmt.Errorf("open %d event streams: %w", len(pages), err)
	default:
	}
	return cancel, nil
}

// streamFigures measures what uiPages open pages cost page's server: an
// event's time from the leader's stamp to every page, the server's CPU
// per event with the pages open and without, and the CPU a hundred pages
// polling the jobs view each second would cost instead.
func streamFigures(ctx context.Context, cfg config, p *uiPool, page *servertest.Proc) ([]figure, error) {
	base := page.URL()
	pages, err := p.pages(ctx, base)
	if err != nil {
		return nil, err
	}
	nLat, rounds := uiLatencyEvents, uiCPURounds
	if cfg.quick {
		nLat, rounds = uiLatencyEventsQuick, uiCPURoundsQuick
	}
	var a arrivals
	fmt.Fprintf(os.Stderr, "ui: %d event streams on %s, then on the leader; %d events one at a time ...\n", uiPages, page.Name, nLat)
	first, last, err := p.latencies(ctx, pages, base, &a, nLat)
	if err != nil {
		return nil, err
	}
	li, _ := p.c.Leader()
	leader := p.c.Servers[li]
	leaderPages, err := p.pages(ctx, leader.URL())
	if err != nil {
		return nil, err
	}
	_, lastOnLeader, err := p.latencies(ctx, leaderPages, leader.URL(), &a, nLat)
	if err != nil {
		return nil, err
	}

	pid := page.PID()
	var idle0, idle100, burst0, burst100, extra, poll []float64
	for r := range rounds {
		fmt.Fprintf(os.Stderr, "ui: CPU round %d of %d: %v windows idle, %d events/s, polling, with %d pages open and without ...\n",
			r+1, rounds, uiWindow, uiEventRate, uiPages)
		closeStreams, err := openStreams(ctx, pages, base, &a)
		if err != nil {
			return nil, err
		}
		i100, err := p.window(ctx, pid, 0)
		if err == nil {
			var b100 float64
			b100, err = p.window(ctx, pid, uiEventRate)
			idle100, burst100 = append(idle100, i100), append(burst100, b100)
		}
		closeStreams()
		if err != nil {
			return nil, err
		}
		pl, err := pollWindow(ctx, pages, base, pid)
		if err != nil {
			return nil, err
		}
		poll = append(poll, pl)
		i0, err := p.window(ctx, pid, 0)
		if err != nil {
			return nil, err
		}
		b0, err := p.window(ctx, pid, uiEventRate)
		if err != nil {
			return nil, err
		}
		idle0, burst0 = append(idle0, i0), append(burst0, b0)
		extra = append(extra, perEvent(burst100[r]-idle100[r])-perEvent(b0-i0))
	}
	fan := summarize(extra).Median
	pollCost := summarize(poll).Median - summarize(idle0).Median
	note := fmt.Sprintf("%d Server-Sent Event streams of %d HTTP clients (one connection each, signed in with the token's cookie) on follower %s; "+
		"events are jobs submitted one at a time (each waits for all %d pages), timed from the leader's stamp on the event (one clock: every process runs here)",
		uiPages, uiPages, page.Name, uiPages)
	cpuNote := fmt.Sprintf("%s's CPU (/proc, 10 ms ticks) over %v windows at %d events/s (held jobs submitted), %d rounds; idle: %s ms/s with 0 pages open, %s with %d",
		page.Name, uiWindow, uiEventRate, rounds, fmtMedian(idle0), fmtMedian(idle100), uiPages)
	return []figure{
		{Name: fmt.Sprintf("%d open pages: an event, leader's stamp -> on all %d streams", uiPages, uiPages), Unit: "ms", Sample: summarize(last), Note: note},
		{Name: fmt.Sprintf("%d open pages: an event, leader's stamp -> on the first stream", uiPages), Unit: "ms", Sample: summarize(first),
			Note: "a follower applies an entry once the leader's next append or heartbeat tells it the commit index"},
		{Name: fmt.Sprintf("%d open pages on the leader: an event, stamp -> on all %d streams", uiPages, uiPages), Unit: "ms", Sample: summarize(lastOnLeader)},
		{Name: "page server CPU per event, 0 pages open", Unit: "ms", Sample: summarize(perEvents(burst0, idle0)), Note: cpuNote},
		{Name: fmt.Sprintf("page server CPU per event, %d pages open", uiPages), Unit: "ms", Sample: summarize(perEvents(burst100, idle100))},
		{Name: fmt.Sprintf("fan-out to %d pages: extra CPU per event", uiPages), Unit: "ms", Sample: summarize(extra)},
		{Name: fmt.Sprintf("%d pages polling GET /v1/jobs?limit=50 once a second: page server CPU", uiPages), Unit: "ms/s",
			Sample: summarize(poll),
			Note: fmt.Sprintf("the same %d clients, each its own connection; %.0f ms/s above idle, what %d pages' fan-out costs at %.0f events/s",
				uiPages, pollCost, uiPages, pollCost/max(fan, 0.001))},
	}, nil
}

// pages signs uiPages pages in to base.
func (p *uiPool) pages(ctx context.Context, base string) ([]*pageClient, error) {
	out := make([]*pageClient, uiPages)
	for i := range out {
		pc, err := newPageClient(ctx, p.c, base, p.token, p.user)
		if err != nil {
			return nil, err
		}
		out[i] = pc
	}
	return out, nil
}

// cpuSince returns process pid's CPU since start, when it had used c0,
// in ms per second of wall time.
func cpuSince(pid int, start time.Time, c0 time.Duration) (float64, error) {
	c1, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	return float64(c1-c0) / float64(time.Millisecond) / time.Since(start).Seconds(), nil
}

// fmtMedian formats the median of xs with one decimal.
func fmtMedian(xs []float64) string { return strconv.FormatFloat(summarize(xs).Median, 'f', 1, 64) }

// perEvent turns a window's CPU in ms/s into ms per event at uiEventRate.
func perEvent(msPerSecond float64) float64 { return msPerSecond / uiEventRate }

// perEvents is perEvent of each burst less its round's idle.
func perEvents(burst, idle []float64) []float64 {
	out := make([]float64, len(burst))
	for i := range burst {
		out[i] = perEvent(burst[i] - idle[i])
	}
	return out
}

// latencies opens the pages' streams on base, causes n events one at a
// time and returns, for each, how long after the leader's stamp the first
// and the last page had it, in ms.
func (p *uiPool) latencies(ctx context.Context, pages []*pageClient, base string, a *arrivals, n int) (first, last []float64, err error) {
	closeStreams, err := openStreams(ctx, pages, base, a)
	if err != nil {
		return nil, nil, err
	}
	defer closeStreams()
	for range n {
		f, l, err := p.oneEvent(ctx, a)
		if err != nil {
			return nil, nil, err
		}
		first, last = append(first, f), append(last, l)
	}
	return first, last, nil
}

// oneEvent submits one held job and waits until every page has its
// event; it returns how long after the leader's stamp the first and the
// last page had it, in ms.
func (p *uiPool) oneEvent(ctx context.Context, a *arrivals) (float64, float64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	id, err := p.submitHeld(ctx)
	if err != nil {
		return 0, 0, err
	}
	w := a.get(id, uiPages)
	select {
	case <-w.done:
	case <-ctx.Done():
		a.mu.Lock()
		n := len(w.seen)
		a.mu.Unlock()
		return 0, 0, fmt.Errorf("ui: job %d's event on %d of %d streams: %w", id, n, uiPages, ctx.Err())
	}
	f, l := w.spread()
	return f, l, nil
}

// submitHeld submits one job held after the first running one: one
// job-submitted event.
func (p *uiPool) submitHeld(ctx context.Context) (uint64, error) {
	sub, err := p.cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: trueBinary()},
		After:    []string{strconv.FormatUint(p.running[0], 10)},
	}})
	if err != nil {
		return 0, fmt.Errorf("ui: submit a held job: %w", err)
	}
	return sub.ID, nil
}

// window measures page pid's CPU over uiWindow while rate held jobs a
// second are submitted, and returns it in ms per second.
func (p *uiPool) window(ctx context.Context, pid, rate int) (float64, error) {
	start := time.Now()
	c0, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	if rate > 0 {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		var wg sync.WaitGroup
		var mu sync.Mutex // guards lastErr
		var lastErr error
		for time.Since(start) < uiWindow {
			<-tick.C
			wg.Go(func() {
				sctx, cancel := context.WithTimeout(ctx, opTimeout)
				defer cancel()
				if _, err := p.submitHeld(sctx); err != nil {
					mu.Lock()
					lastErr = err
					mu.Unlock()
				}
			})
		}
		tick.Stop()
		wg.Wait()
		if lastErr != nil {
			return 0, lastErr
		}
	} else {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(uiWindow):
		}
	}
	return cpuSince(pid, start, c0)
}

// pollWindow has every page GET uiPollPath once a second, the pages'
// polls spread over the second, for uiWindow after one untimed poll
// each, and returns page pid's CPU meanwhile in ms per second.
func pollWindow(ctx context.Context, pages []*pageClient, base string, pid int) (float64, error) {
	poll := func(pc *pageClient) error {
		pctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		resp, err := pc.get(pctx, base+uiPollPath)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(pages))
	for i, pc := range pages {
		wg.Go(func() { errs[i] = poll(pc) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("ui: poll: %w", err)
	}
	start := time.Now()
	c0, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	for i, pc := range pages {
		wg.Go(func() {
			next := start.Add(time.Duration(i) * time.Second / time.Duration(len(pages)))
			for next.Before(start.Add(uiWindow)) {
				time.Sleep(time.Until(next))
				if err := poll(pc); err != nil {
					errs[i] = err
					return
				}
				next = next.Add(time.Second)
			}
		})
	}
	wg.Wait()
	rate, err := cpuSince(pid, start, c0)
	if err != nil {
		return 0, err
	}
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("ui: poll: %w", err)
	}
	return rate, nil
}
