package owner

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Watch keeps the owner policy's verdict: why the machine is asleep, ""
// while it is awake. New looks once, Run keeps looking. Verdict and
// Changed are safe for concurrent use.
type Watch struct {
	cfg   Config
	log   *slog.Logger
	login *loginDetector  // nil when off
	input *inputDetector  // nil when off
	load  *loadDetector   // nil when off
	win   *windowDetector // nil when off

	verdict atomic.Pointer[string]
	changed chan struct{} // one pending notice of a change

	started time.Time // when New looked first

	mu      sync.Mutex  // guards the fields below
	monitor monitorWord // what the load monitor said last
	noted   map[string]string
}

// New returns the watch the Config describes, having looked once, so
// that the first lease renewal already carries its verdict. log says
// each change of verdict and each failing source once.
func New(cfg Config, log *slog.Logger) (*Watch, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	w := &Watch{cfg: cfg, log: log, changed: make(chan struct{}, 1), noted: map[string]string{}, started: time.Now()}
	if cfg.SleepOnLogin > 0 {
		w.login = &loginDetector{path: cfg.Utmp, hold: cfg.SleepOnLogin}
	}
	if cfg.SleepOnInput > 0 {
		w.input = &inputDetector{globs: cfg.InputGlobs, hold: cfg.SleepOnInput}
	}
	if cfg.SleepOnLoad > 0 {
		w.load = &loadDetector{path: cfg.LoadAvg, max: cfg.SleepOnLoad, own: cfg.OwnLoad}
	}
	if len(cfg.Available) > 0 {
		w.win = &windowDetector{loc: cfg.Location}
		for _, s := range cfg.Available {
			win, _ := ParseWindow(s) // Check parsed it
			w.win.windows = append(w.win.windows, win)
		}
	}
	w.verdict.Store(new(string))
	w.evaluate(time.Now())
	return w, nil
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
	c := w.cfg
	return []any{"sleep_on_login", c.SleepOnLogin.String(), "utmp", c.Utmp, "sleep_on_input", c.SleepOnInput.String(),
		"input_globs", c.InputGlobs, "sleep_on_load", c.SleepOnLoad, "load_monitor", c.LoadMonitor,
		"available", c.Available, "time_zone", c.Location.String()}
}

// Run looks every Interval, and runs the load monitor every MonitorEvery,
// until ctx ends.
func (w *Watch) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if w.cfg.LoadMonitor != "" {
		wg.Go(func() { w.runMonitor(ctx) })
	}
	defer wg.Wait()
	tick := time.NewTicker(w.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.evaluate(time.Now())
	}
}

// runMonitor runs the load monitor at once and then every MonitorEvery,
// keeping what it said and looking again at once.
func (w *Watch) runMonitor(ctx context.Context) {
	tick := time.NewTicker(w.cfg.MonitorEvery)
	defer tick.Stop()
	for {
		word, err := runMonitor(ctx, w.cfg.LoadMonitor, w.cfg.MonitorEvery)
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
