package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/server/ui"
)

// fakeGroup is one server as the page sees it, with the page's reads
// under the test's control: the hub's stream, the page's files, and jobs
// 1 and 2, whose instance state and answers the test sets. The page, its
// files and the hub are the real ones; the reads are not a real
// server's because the tests need answers held and released in a given
// order, which a real server gives only by chance (a slow history.db
// fsync in one CI run). TestDashboardEndToEnd runs the page against a
// real cluster.
type fakeGroup struct {
	hub  *ui.Hub
	done chan struct{} // closed at the end: held answers and streams end

	mu       sync.Mutex
	name     string           // the jobs' name, "j" and the id when empty
	instance string           // the instance's state GET /v1/jobs/ID answers
	jobReads int              // GET /v1/jobs/ID answered or held so far
	holdJob  func(n int) bool // whether the nth job read is held until done
	history  []chan struct{}  // the nth GET /v1/history waits for history[n-1], when there is one
	arrived  chan int         // each GET /v1/history's number, as it arrives
}

// newFakeGroup returns a fake whose job's instance is placed and whose
// answers are all given at once.
func newFakeGroup() *fakeGroup {
	return &fakeGroup{hub: ui.NewHub("s1"), done: make(chan struct{}), instance: "placed", arrived: make(chan int, 16)}
}

// setInstance sets the state the job's instance is answered in.
func (g *fakeGroup) setInstance(state string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.instance = state
}

// handler serves the page, its stream and the reads its job views make.
func (g *fakeGroup) handler() http.Handler {
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	notFound := func(w http.ResponseWriter, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	}
	historyReads := 0
	mux := http.NewServeMux()
	mux.Handle("GET /ui/", ui.Static())
	mux.HandleFunc("GET /ui/whoami", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, ui.Identity{User: "alice"}) })
	mux.HandleFunc("GET /ui/events", func(w http.ResponseWriter, r *http.Request) { g.hub.Stream(w, r, g.done) })
	mux.HandleFunc("GET /v1/servers", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, []any{}) })
	mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if id != "1" && id != "2" {
			notFound(w, "no job "+id)
			return
		}
		g.mu.Lock()
		g.jobReads++
		hold := g.holdJob != nil && g.holdJob(g.jobReads)
		name := "j" + id
		if g.name != "" {
			name = g.name
		}
		job := map[string]any{
			"id": id, "name": name, "owner": "alice", "state": "running", "submitted_at": "2026-01-01T00:00:00Z",
			"spec":      map[string]any{"binaries": map[string]string{"*": "/bin/sleep"}, "args": []string{"300"}},
			"instances": []map[string]any{{"index": 0, "attempt": 1, "state": g.instance, "machine": "m1"}},
		}
		g.mu.Unlock()
		if hold {
			<-g.done
			return
		}
		writeJSON(w, job)
	})
	mux.HandleFunc("GET /v1/history", func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		historyReads++
		n := historyReads
		var wait chan struct{}
		if n <= len(g.history) {
			wait = g.history[n-1]
		}
		g.mu.Unlock()
		select {
		case g.arrived <- n:
		default: // nobody waits for that many
		}
		if wait != nil {
			select {
			case <-wait:
			case <-g.done:
				return
			}
		}
		writeJSON(w, []any{})
	})
	return mux
}

// startPage opens the page at url in a headless Chromium and returns a
// context that drives it; the browser ends with the test.
func startPage(t *testing.T, url string) context.Context {
	t.Helper()
	bin, err := servertest.FindBrowser()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err.Error() + " (CI=true: the page's tests must run in CI)")
		}
		t.Skip("skipping: " + err.Error())
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first run starts the browser, which lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(nctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s in %s: %v", url, bin, err)
	}
	return ctx
}

// evalJS evaluates expr in the page.
func evalJS[T any](ctx context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// waitFor polls expr in the page until it is true.
func waitFor(t *testing.T, ctx context.Context, what, expr string, timeout time.Duration) {
	t.Helper()
	var err error
	if !testwait.Poll(timeout, func() bool {
		var ok bool
		ok, err = evalJS[bool](ctx, expr)
		return err == nil && ok
	}) {
		main, _ := evalJS[string](ctx, `document.querySelector('main').innerText`)
		t.Fatalf("%s: not within %v (last error %v); the page shows:\n%s", what, timeout, err, main)
	}
}

// instancesText is the text of the job view's instances table.
const instancesText = `((document.querySelector('main table')||{}).innerText||'')`

// A view's answer that arrives after a newer answer was drawn is not
// drawn over it. The job view's first load reads the job while its
// instance is placed and then waits for its history; meanwhile the
// instance starts, the page hears of it, redraws with the running
// instance; then the first load's history answers. The page must still
// show the instance running (a clean-clone CI run saw the job's page
// keep "placed" for 20 s this way). The settle redraw's read is held,
// so only the two loads decide what the page shows.
func TestPageKeepsTheNewerAnswer(t *testing.T) {
	g := newFakeGroup()
	firstHistory := make(chan struct{})
	g.history = []chan struct{}{firstHistory}
	g.holdJob = func(n int) bool { return n >= 3 }
	srv := httptest.NewServer(g.handler())
	defer srv.Close()
	defer close(g.done)
	ctx := startPage(t, srv.URL+"/ui/#/job/1")

	// The first load has read the job (placed) and waits for its history.
	select {
	case n := <-g.arrived:
		if n != 1 {
			t.Fatalf("history read %d came first", n)
		}
	case <-time.After(30 * time.Second):
		main, err := evalJS[string](ctx, `document.body.innerText`)
		t.Fatalf("the job view never read the job's history; the page (%v) shows:\n%s", err, main)
	}
	g.setInstance("running")
	g.hub.Publish(ui.Event{Key: "i7", Kind: "instance-started", Text: "instance started job 1.0 on m1", Index: 7, Job: 1, Machine: "m1", At: time.Now()})

	// The event's redraw reads the job again (running) and draws it.
	waitFor(t, ctx, "the redraw shows the instance running", `/\srunning\s/.test(`+instancesText+`)`, 20*time.Second)
	// Now the first load's history answers; once that load has ended
	// (two routes ended: the first load and the redraw; the settle
	// redraw's read is held), the page shows what it shows for good.
	close(firstHistory)
	waitFor(t, ctx, "the first load ends", `state.routed >= 2`, 20*time.Second)
	got, err := evalJS[string](ctx, instancesText)
	if err != nil {
		t.Fatalf("read the instances: %v", err)
	}
	if !regexp.MustCompile(`\srunning\s`).MatchString(got) {
		t.Errorf("after the first load's late answer the instances table shows\n%s\nwant the instance running (the newer answer)", got)
	}
}

// A view's late answer is not drawn over the view opened after it: the
// page opens job 1, whose load waits for its history, then job 2, which
// loads and draws; job 1's history answers last. The page must still
// show job 2.
func TestPageKeepsTheViewOpenedLast(t *testing.T) {
	g := newFakeGroup()
	firstHistory := make(chan struct{})
	g.history = []chan struct{}{firstHistory}
	srv := httptest.NewServer(g.handler())
	defer srv.Close()
	defer close(g.done)
	ctx := startPage(t, srv.URL+"/ui/#/job/1")

	select {
	case <-g.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the view of job 1 never read its history")
	}
	if _, err := evalJS[string](ctx, `location.hash = '#/job/2'`); err != nil {
		t.Fatalf("open job 2: %v", err)
	}
	heading := `((document.querySelector('main h2')||{}).innerText||'')`
	waitFor(t, ctx, "the view of job 2 shows", heading+`.startsWith('Job 2 ')`, 20*time.Second)
	close(firstHistory)
	waitFor(t, ctx, "the load of job 1 ends", `state.routed >= 2`, 20*time.Second)
	if got, err := evalJS[string](ctx, heading); err != nil || !strings.HasPrefix(got, "Job 2 ") {
		t.Errorf("after job 1's late answer the view's heading is %q (%v), want job 2's", got, err)
	}
}

// A job's name is a user's text: the page shows markup in it as text and
// runs none of it (it sets text with textContent, never innerHTML).
func TestPageShowsMarkupInANameAsText(t *testing.T) {
	const name = `<img src=x onerror="document.title='pwned'"><b>bold</b>`
	g := newFakeGroup()
	g.name = name
	srv := httptest.NewServer(g.handler())
	defer srv.Close()
	defer close(g.done)
	ctx := startPage(t, srv.URL+"/ui/#/job/1")
	waitFor(t, ctx, "the job view to show the name as text", "document.body.innerText.includes("+strconv.Quote("<b>bold</b>")+")", 30*time.Second)
	n, err := evalJS[int](ctx, `document.querySelectorAll('img[src="x"], b').length`)
	if err != nil {
		t.Fatal(err)
	}
	title, err := evalJS[string](ctx, `document.title`)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || title == "pwned" {
		t.Errorf("the name's markup became %d elements of the page (title %q); want it shown as text only", n, title)
	}
}
