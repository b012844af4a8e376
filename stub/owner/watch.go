package owner

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client/dblang"
)

// Watch keeps the owner policy's verdict: why the machine is asleep, ""
// while it is awake. New looks once, Run keeps looking. Verdict and
// Changed are safe for concurrent use.
type Watch struct {
	log *slog.Logger

	verdict atomic.Pointer[string]
	changed chan struct{} // one pending notice of a change
	reconf  chan struct{} // one pending notice of a new Config, for Run

	started time.Time // when New looked first

	mu      sync.Mutex // guards the fields below
	cfg     Config
	login   *loginDetector  // nil when off
	input   *inputDetector  // nil when off
	load    *loadDetector   // nil when off
	win     *windowDetector // nil when off
	monitor monitorWord     // what the load monitor said last
	noted   map[string]string
}

// New returns the watch the Config describes, having looked once, so
// that the first lease renewal already carries its verdict. log says
// each change of verdict and each failing source once.
func New(cfg Config, log *slog.Logger) (*Watch, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	w := &Watch{log: log, changed: make(chan struct{}, 1), reconf: make(chan struct{}, 1), noted: map[string]string{}, started: time.Now()}
	w.setConfig(cfg.withDefaults())
	w.verdict.Store(new(string))
	w.evaluate(time.Now())
	return w, nil
}

// Reconfigure replaces the detectors' settings with cfg's (as a database
// loaded at run time changes them) and looks again at once. A detector
// whose setting did not change keeps what it has seen; Run restarts the
// load monitor when its program or interval changed. Safe for concurrent
// use.
func (w *Watch) Reconfigure(cfg Config) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	w.mu.Lock()
	w.setConfig(cfg.withDefaults())
	w.mu.Unlock()
	select {
	case w.reconf <- struct{}{}:
	default:
	}
	w.evaluate(time.Now())
	return nil
}

// setConfig makes the detectors cfg describes, keeping those whose
// setting is unchanged. The caller holds mu, or is New.
func (w *Watch) setConfig(cfg Config) {
	old := w.cfg
	switch {
	case cfg.SleepOnLogin <= 0:
		w.login = nil
	case w.login == nil || old.SleepOnLogin != cfg.SleepOnLogin || old.Utmp != cfg.Utmp:
		w.login = &loginDetector{path: cfg.Utmp, hold: cfg.SleepOnLogin}
	}
	switch {
	case cfg.SleepOnInput <= 0:
		w.input = nil
	case w.input == nil || old.SleepOnInput != cfg.SleepOnInput || !slices.Equal(old.InputGlobs, cfg.InputGlobs):
		w.input = &inputDetector{globs: cfg.InputGlobs, hold: cfg.SleepOnInput}
	}
	switch {
	case cfg.SleepOnLoad <= 0:
		w.load = nil
	case w.load == nil || old.SleepOnLoad != cfg.SleepOnLoad || old.LoadAvg != cfg.LoadAvg:
		w.load = &loadDetector{path: cfg.LoadAvg, max: cfg.SleepOnLoad, own: cfg.OwnLoad}
	}
	w.win = nil
	if len(cfg.Available) > 0 {
		w.win = &windowDetector{loc: cfg.Location}
		for _, s := range cfg.Available {
			win, _ := dblang.ParseWindow(s) // Check parsed it
			w.win.windows = append(w.win.windows, win)
		}
	}
	if cfg.LoadMonitor != old.LoadMonitor {
		w.monitor = monitorWord{}
	}
	w.cfg = cfg
}

// config returns the settings in force.
func (w *Watch) config() Config {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cfg
}

// Verdict is why the machine is asleep now, "" while it is awake, or
// when w is nil (no policy). It does not block.
func (w *Watch) Verdict() string {
	if w == nil {
		return ""
	}
	return *w.verdict.Load()
}

// Idle returns how long ago the owner last used the machine at now: the
// last session open or closed in utmp, the last input, whichever is later
// (since the watch started, when neither was ever seen); false when
// neither --sleep-on-login nor --sleep-on-input is on, or w is nil. Jobs
// ask for idle machines with idle>=MINUTES.
func (w *Watch) Idle(now time.Time) (time.Duration, bool) {
	if w == nil || (w.login == nil && w.input == nil) {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	if w.login != nil {
		last = later(last, w.login.active)
	}
	if w.input != nil {
		last = later(last, w.input.active)
	}
	if last.IsZero() {
		last = w.started
	}
	return max(now.Sub(last), 0), true
}

// Changed receives after each change of the verdict; changes that come
// while one notice waits share it.
func (w *Watch) Changed() <-chan struct{} { return w.changed }

// Describe says what the watch looks at, for the stub's log at start.
func (w *Watch) Describe() []any {
	c := w.config()
	return []any{"sleep_on_login", c.SleepOnLogin.String(), "utmp", c.Utmp, "sleep_on_input", c.SleepOnInput.String(),
		"input_globs", c.InputGlobs, "sleep_on_load", c.SleepOnLoad, "load_monitor", c.LoadMonitor,
		"available", c.Available, "time_zone", c.Location.String()}
}

// Run looks every Interval while a detector is on, and runs the load
// monitor every MonitorEvery, until ctx ends; after Reconfigure it
// follows the new settings. With every detector off it only waits for
// a Reconfigure: a stub with no owner policy wakes for none.
func (w *Watch) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	stopMonitor := func() {}
	defer func() { stopMonitor() }()
	var program string
	var every time.Duration
	startMonitor := func() {
		c := w.config()
		if c.LoadMonitor == program && c.MonitorEvery == every {
			return
		}
		stopMonitor()
		program, every = c.LoadMonitor, c.MonitorEvery
		if program == "" {
			stopMonitor = func() {}
			return
		}
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		wg.Go(func() { defer close(done); w.runMonitor(mctx, program, every) })
		stopMonitor = func() { cancel(); <-done }
	}
	startMonitor()
	var tick *time.Ticker
	var ticks <-chan time.Time
	retick := func() {
		if tick != nil {
			tick.Stop()
			tick, ticks = nil, nil
		}
		if c := w.config(); c.Enabled() {
			tick = time.NewTicker(c.Interval)
			ticks = tick.C
		}
	}
	retick()
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.reconf:
			startMonitor()
			retick()
		case <-ticks:
		}
		w.evaluate(time.Now())
	}
}

// runMonitor runs the load monitor program at once and then every
// interval, keeping what it said and looking again at once, until ctx
// ends.
func (w *Watch) runMonitor(ctx context.Context, program string, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		word, err := runMonitor(ctx, program, every)
		if ctx.Err() != nil {
			return
		}
		w.note("load monitor", err)
		w.mu.Lock()
		if err == nil {
			w.monitor = word
		} else {
			w.monitor = monitorWord{} // a failing monitor says nothing
		}
		w.mu.Unlock()
		w.evaluate(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// evaluate works out the verdict at now: outside the windows first, then
// the load monitor's sleep, a login, input, and the load. A source that
// fails counts as awake (and is logged once).
func (w *Watch) evaluate(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := ""
	if w.win != nil {
		v = w.win.check(now)
	}
	if v == "" {
		v = w.monitor.sleep
	}
	if v == "" && w.login != nil {
		r, err := w.login.check(now)
		w.noteLocked("utmp", err)
		v = r
	}
	if v == "" && w.input != nil {
		r, err := w.input.check(now)
		w.noteLocked("input devices", err)
		v = r
	}
	if v == "" && w.load != nil {
		r, err := w.load.check(w.monitor.load, w.monitor.hasLoad)
		w.noteLocked("load", err)
		v = r
	}
	if v == *w.verdict.Load() {
		return
	}
	w.verdict.Store(&v)
	if v != "" {
		w.log.Info("owner policy: asleep, no new work", "reason", v)
	} else {
		w.log.Info("owner policy: awake, taking new work")
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *Watch) note(source string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noteLocked(source, err)
}

// noteLocked logs a source's failure when it differs from the last one
// logged, and its recovery. The caller holds mu.
func (w *Watch) noteLocked(source string, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if w.noted[source] == msg {
		return
	}
	w.noted[source] = msg
	if err != nil {
		w.log.Warn("owner policy: a source fails; it counts as awake", "source", source, "err", err)
	} else {
		w.log.Info("owner policy: source works again", "source", source)
	}
}
