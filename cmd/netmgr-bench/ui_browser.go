package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/netmgr/netmgr/server/servertest"
)

// uiRounds is how often each view is loaded, timed, after one untimed
// round; quick runs fewer.
const (
	uiRounds      = 7
	uiRoundsQuick = 3
	// uiViewTimeout bounds one view's load.
	uiViewTimeout = 30 * time.Second
)

// uiView is one view the browser loads: its hash and the condition (a
// JavaScript expression) under which its rows are in the page.
type uiView struct {
	name, hash, cond string
}

// rowsCond is the condition of a view whose heading is heading and whose
// first table has at least rows rows.
func rowsCond(heading string, rows int) string {
	return fmt.Sprintf(`(document.querySelector('#main h2')||{}).textContent === %q && document.querySelectorAll('#main table tbody tr').length >= %d`,
		heading, rows)
}

// pagerCond is the condition of the jobs view showing the page whose
// pager text starts with prefix and ends with suffix ("51–100 of 10000").
func pagerCond(prefix, suffix string) string {
	return fmt.Sprintf(`(() => { const p = document.querySelector('#main .pager span'); const t = p ? p.textContent : '';
		return (document.querySelector('#main h2')||{}).textContent === 'Jobs' && t.startsWith(%q) && t.endsWith(%q) })()`, prefix, suffix)
}

// measureJS returns a JavaScript expression that does action, waits
// until cond holds (checked on every change of the page), for the layout
// and the next frame, and evaluates to the milliseconds that took.
func measureJS(action, cond string) string {
	return fmt.Sprintf(`(async () => {
	const main = document.getElementById('main');
	const cond = () => %s;
	const t0 = performance.now();
	%s;
	await new Promise((resolve, reject) => {
		let obs, timer;
		const check = () => { if (cond()) { obs.disconnect(); clearTimeout(timer); resolve(); } };
		obs = new MutationObserver(check);
		obs.observe(document.body, {childList: true, subtree: true, characterData: true});
		timer = setTimeout(() => { obs.disconnect(); reject(new Error('not rendered in time')); }, %d);
		check();
	});
	main.getBoundingClientRect();
	await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
	return performance.now() - t0;
})()`, cond, action, uiViewTimeout.Milliseconds()-1000)
}

// gotoJS is the action that opens hash.
func gotoJS(hash string) string { return fmt.Sprintf(`location.hash = %q`, hash) }

// browserFigures signs a headless Chromium in on page's /ui and times
// every view's load and two actions on the jobs view. Without a browser,
// or when it fails, it says so in the one figure it returns: the other
// suites' figures and this suite's stream figures still count.
func browserFigures(ctx context.Context, cfg config, p *uiPool, page *servertest.Proc, dir string) []figure {
	notMeasured := func(err error) []figure {
		fmt.Fprintf(os.Stderr, "ui: view loads not measured: %v\n", err)
		return []figure{{Name: "dashboard: a view loads (any view)", Unit: "ms", Note: "not measured: " + err.Error()}}
	}
	bin, err := servertest.FindBrowser()
	if err != nil {
		return notMeasured(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.IgnoreCertErrors, // the cluster's throw-away CA
		chromedp.NoSandbox,        // the benchmark may run as root
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(filepath.Join(dir, "chromium")),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first run starts the browser; it lives as long as bctx.
	if err := chromedp.Do(bctx); err != nil {
		return notMeasured(fmt.Errorf("start %s: %w", bin, err))
	}
	b := &benchBrowser{ctx: bctx}
	if err := b.signIn(page.URL(), p.token); err != nil {
		return notMeasured(fmt.Errorf("%s: %w", bin, err))
	}
	rounds := uiRounds
	if cfg.quick {
		rounds = uiRoundsQuick
	}
	job := strconv.FormatUint(p.running[0], 10)
	total := strconv.Itoa(len(p.running) + len(p.held))
	views := []uiView{
		{"servers", "#/servers", rowsCond("Server group", 3)},
		{"machines", "#/machines", rowsCond("Machines", uiMachines)},
		{"jobs", "#/jobs", pagerCond("1–50 ", " of "+total)},
		{"one job's detail", "#/job/" + job, fmt.Sprintf(`(document.querySelector('#main h2')||{}).textContent.startsWith('Job %s ') && [...document.querySelectorAll('#main h3')].some((h) => h.textContent === 'History')`, job)},
		{"queues", "#/queues", rowsCond("Queues", len(uiQueues))},
	}
	fmt.Fprintf(os.Stderr, "ui: %s: %d views, %d rounds ...\n", bin, len(views), rounds)
	times := make(map[string][]float64)
	for r := range rounds + 1 {
		for _, v := range views {
			ms, err := b.measure(gotoJS(v.hash), v.cond)
			if err != nil {
				return notMeasured(fmt.Errorf("view %s: %w", v.name, err))
			}
			if r > 0 {
				times[v.name] = append(times[v.name], ms)
			}
		}
	}
	// The jobs view's actions, each from its first page.
	jobs := views[2]
	running := strconv.Itoa(len(p.running))
	actions := []struct{ name, action, cond string }{
		{"jobs: next page (click older →)", `document.querySelector('#main a[rel=next]').click()`, pagerCond("51–100 ", " of "+total)},
		{"jobs: filter state=running (Filter)", `(() => { const f = document.querySelector('#main form.filters'); f.querySelector('select[name=state]').value = 'running'; f.requestSubmit() })()`,
			pagerCond("1–50 ", " of "+running)},
	}
	for r := range rounds + 1 {
		for _, a := range actions {
			if _, err := b.measure(gotoJS("#/servers"), views[0].cond); err != nil {
				return notMeasured(err)
			}
			if _, err := b.measure(gotoJS(jobs.hash), jobs.cond); err != nil {
				return notMeasured(err)
			}
			ms, err := b.measure(a.action, a.cond)
			if err != nil {
				return notMeasured(fmt.Errorf("%s: %w", a.name, err))
			}
			if r > 0 {
				times[a.name] = append(times[a.name], ms)
			}
		}
	}
	var figs []figure
	for _, v := range views {
		figs = append(figs, figure{Name: "dashboard: load the " + v.name + " view", Unit: "ms", Sample: summarize(times[v.name]), Target: "< 1000"})
	}
	for _, a := range actions {
		figs = append(figs, figure{Name: "dashboard: " + a.name, Unit: "ms", Sample: summarize(times[a.name]), Target: "< 1000"})
	}
	figs[0].Note = fmt.Sprintf("headless %s, 1280x900, signed in with a token; from setting the hash (or the click) until the view's rows are in the DOM, laid out and a frame later; %d rounds after one untimed",
		strings.TrimSpace(b.version()), rounds)
	return figs
}

// benchBrowser is one signed-in headless Chromium tab.
type benchBrowser struct {
	ctx context.Context
}

// signIn opens base's /ui, signs in with token and waits for the live
// stream.
func (b *benchBrowser) signIn(base, token string) error {
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("signin"))); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	if _, err := b.measure("", `(document.getElementById('conn')||{}).textContent.startsWith('live: ')`); err != nil {
		return fmt.Errorf("sign in: wait for the live stream: %w", err)
	}
	return nil
}

// measure evaluates measureJS(action, cond) and returns its milliseconds.
func (b *benchBrowser) measure(action, cond string) (float64, error) {
	ctx, cancel := context.WithTimeout(b.ctx, uiViewTimeout)
	defer cancel()
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](measureJS(action, cond), chromedp.EvalAwaitPromise))
	if err != nil {
		return 0, fmt.Errorf("measure: %w", err)
	}
	return ms, nil
}

// version returns the browser's user agent's product, or "Chromium".
func (b *benchBrowser) version() string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	ua, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(navigator.userAgent.match(/(Headless)?Chrome\/[0-9.]+/)||['Chromium'])[0]`))
	if err != nil {
		return "Chromium"
	}
	return ua
}
