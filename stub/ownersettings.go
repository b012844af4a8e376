package stub

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/dblang"
	"github.com/netmgr/netmgr/stub/owner"
)

// ownerSettings merges the owner policy's settings from their three
// sources, with the precedence the scheduler gives a machine's
// attributes: the stub's flags < its init file < the database's
// declaration of the machine (its mtype's, overridden by its own). For a
// machine the database does not declare, the settings of the mtype its
// init file claims come between the flags and the init file, as that
// mtype's attributes do. The flags set what nothing else does, and the
// sources (utmp, input devices, load average) are always the flags'.
// Each lease renewal brings the database's settings (see apply); they
// take effect at once. Safe for concurrent use.
type ownerSettings struct {
	watch  *owner.Watch
	policy *ownerPolicy
	log    *slog.Logger

	mu    sync.Mutex
	flags owner.Config
	// flagVacate and flagKeep are --vacate-after and --keep-suspended.
	flagVacate time.Duration
	flagKeep   bool
	init       map[string]string     // the init file's; nil without one
	db         *client.OwnerSettings // the last the servers sent; nil before any
}

// machineOwner is the owner policy's settings in force: the detectors'
// and what happens to suspended jobs.
type machineOwner struct {
	cfg           owner.Config
	vacateAfter   time.Duration
	keepSuspended bool
}

// effective merges the sources as the type's comment says. A setting
// that does not read (a window the watch cannot parse is caught by
// Check) is logged and left out.
func (s *ownerSettings) effective() machineOwner {
	var layers []map[string]string
	switch {
	case s.db == nil:
		layers = []map[string]string{s.init}
	case s.db.Declared:
		layers = []map[string]string{s.init, s.db.Settings}
	default:
		layers = []map[string]string{s.db.Settings, s.init}
	}
	m := machineOwner{cfg: s.flags, vacateAfter: s.flagVacate, keepSuspended: s.flagKeep}
	for name, v := range dblang.ResolveOwner(layers...) {
		if err := m.set(name, v); err != nil {
			s.log.Warn("owner policy: setting ignored", "setting", name, "value", v, "err", err)
		}
	}
	return m
}

// set applies one setting in the database language's canonical text.
func (m *machineOwner) set(name, v string) error {
	switch name {
	case dblang.OwnerSleepOnLogin, dblang.OwnerSleepOnInput, dblang.OwnerVacateAfter:
		d, ok := dblang.OwnerDuration(v)
		if !ok {
			return fmt.Errorf("read duration: %w", owner.ErrBadSetting)
		}
		switch name {
		case dblang.OwnerSleepOnLogin:
			m.cfg.SleepOnLogin = d
		case dblang.OwnerSleepOnInput:
			m.cfg.SleepOnInput = d
		default:
			m.vacateAfter = d
		}
	case dblang.OwnerSleepOnLoad:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("read load %q: %w", v, owner.ErrBadSetting)
		}
		m.cfg.SleepOnLoad = f
	case dblang.OwnerLoadMonitor:
		m.cfg.LoadMonitor = v
	case dblang.OwnerAvailable:
		ws := dblang.OwnerWindows(v)
		for _, w := range ws {
			if _, err := dblang.ParseWindow(w); err != nil {
				return err
			}
		}
		m.cfg.Available = ws
	case dblang.OwnerKeepSuspended:
		m.keepSuspended = dblang.OwnerYes(v)
	default:
		return fmt.Errorf("unknown setting %s: %w", name, owner.ErrBadSetting)
	}
	return nil
}

// current returns the settings in force.
func (s *ownerSettings) current() machineOwner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.effective()
}

// apply takes the database's settings from a lease renewal's answer; nil
// (a server that predates them) changes nothing. When the settings in
// force change, the watch and the policy follow at once.
func (s *ownerSettings) apply(db *client.OwnerSettings) {
	if db == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil && s.db.Declared == db.Declared && maps.Equal(s.db.Settings, db.Settings) {
		return
	}
	before := s.effective()
	s.db = &client.OwnerSettings{Settings: maps.Clone(db.Settings), Declared: db.Declared}
	after := s.effective()
	if err := s.watch.Reconfigure(after.cfg); err != nil {
		s.log.Warn("owner policy: the database's settings do not work; keeping the earlier ones", "err", err)
		return
	}
	s.policy.setMachine(after.vacateAfter, after.keepSuspended)
	if !sameOwner(before, after) {
		s.log.Info("owner policy: the database's settings apply", append(s.watch.Describe(),
			"vacate_after", after.vacateAfter.String(), "keep_suspended", after.keepSuspended)...)
	}
}

// sameOwner compares the settings a database may change.
func sameOwner(a, b machineOwner) bool {
	return a.vacateAfter == b.vacateAfter && a.keepSuspended == b.keepSuspended &&
		a.cfg.SleepOnLogin == b.cfg.SleepOnLogin && a.cfg.SleepOnInput == b.cfg.SleepOnInput &&
		a.cfg.SleepOnLoad == b.cfg.SleepOnLoad && a.cfg.LoadMonitor == b.cfg.LoadMonitor &&
		slices.Equal(a.cfg.Available, b.cfg.Available)
}

// queuePolicy is how an attempt is treated once suspended: the machine's
// vacateAfter and keepSuspended, overridden by its queue's settings
// (StartRequest.OwnerPolicy); suspend=no vacates at once and never keeps
// the job suspended.
func queuePolicy(vacateAfter time.Duration, keep bool, q map[string]string) (time.Duration, bool) {
	if v, ok := q[dblang.OwnerVacateAfter]; ok {
		if d, ok := dblang.OwnerDuration(v); ok {
			vacateAfter = d
		}
	}
	if v, ok := q[dblang.OwnerKeepSuspended]; ok {
		keep = dblang.OwnerYes(v)
	}
	if v, ok := q[dblang.OwnerSuspend]; ok && !dblang.OwnerYes(v) {
		vacateAfter, keep = 0, false
	}
	return vacateAfter, keep
}
