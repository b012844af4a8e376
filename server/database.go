package server

import (
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/netmgr/netmgr/client/dblang"
	"github.com/netmgr/netmgr/fsm"
)

// parseDatabase parses declarations in the database language into the
// log's form. Errors name file:line:col.
func parseDatabase(filename string, text []byte) (fsm.Database, error) {
	db, err := dblang.Parse(filename, text)
	if err != nil {
		return fsm.Database{}, err
	}
	if err := checkWindows(db); err != nil {
		return fsm.Database{}, err
	}
	return databaseToLog(db), nil
}

// checkWindows parses the availability windows (available={...}) of the
// mtypes and machines as the stubs will, so that a window no stub could
// follow is refused at load time, at its declaration.
func checkWindows(db *dblang.Database) error {
	var list dblang.ErrorList
	check := func(what string, settings map[string]string, pos dblang.Pos) {
		for _, w := range dblang.OwnerWindows(settings[dblang.OwnerAvailable]) {
			if _, err := dblang.ParseWindow(w); err != nil {
				list = append(list, &dblang.Error{Pos: pos, Msg: fmt.Sprintf("window %q in %s: %v", w, what, err)})
			}
		}
	}
	for _, t := range db.MTypes {
		check("mtype "+t.Name, t.Owner, t.Pos)
	}
	for _, m := range db.Machines {
		check("machine "+m.Name, m.Owner, m.Pos)
	}
	if len(list) > 0 {
		return list
	}
	return nil
}

// readDatabaseFile reads and parses --database FILE.
func readDatabaseFile(path string) (fsm.Database, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return fsm.Database{}, fmt.Errorf("read database: %w", err)
	}
	return parseDatabase(path, text)
}

func databaseToLog(db *dblang.Database) fsm.Database {
	var out fsm.Database
	for _, k := range db.Keys {
		out.Keys = append(out.Keys, fsm.DeclaredKey{Name: k.Name, Comment: k.Comment})
	}
	for _, t := range db.MTypes {
		out.MTypes = append(out.MTypes, fsm.DeclaredMType{
			Name: t.Name, Keys: clone(t.Keys), Attrs: maps.Clone(t.Attrs), Mounts: clone(t.Mounts), Owner: maps.Clone(t.Owner),
		})
	}
	for _, m := range db.Machines {
		out.Machines = append(out.Machines, fsm.DeclaredMachine{
			Name: m.Name, MType: m.MType, Keys: clone(m.Keys), Attrs: maps.Clone(m.Attrs), Mounts: clone(m.Mounts), Owner: maps.Clone(m.Owner),
		})
	}
	for _, q := range db.Queues {
		out.Queues = append(out.Queues, fsm.DeclaredQueue{
			Name: q.Name, Priority: q.Priority, MaxSize: q.MaxSize, MaxActive: q.MaxActive,
			MaxRunSeconds: q.MaxRunSeconds, MaxMemMB: q.MaxMemMB, KillGraceSeconds: q.KillGraceSeconds, Owner: maps.Clone(q.Owner),
			Policy: q.Policy, MaxUserActive: q.MaxUserActive, MaxUserQueued: q.MaxUserQueued, Interactive: q.Interactive, Preempt: q.Preempt,
			Prime: primeToLog(q.Prime),
		})
	}
	out.Admins = clone(db.Admins)
	out.AllowRootJobs = db.AllowRootJobs
	for _, a := range db.Accounts {
		out.Accounts = append(out.Accounts, fsm.DeclaredAccount{Name: a.Name, Share: a.Share, Users: clone(a.Users)})
	}
	for _, sh := range db.Shares {
		out.Shares = append(out.Shares, fsm.DeclaredShare{User: sh.User, Share: sh.Share})
	}
	out.HalfLifeSeconds = db.HalfLifeSeconds
	for _, l := range db.Licenses {
		out.Licenses = append(out.Licenses, fsm.DeclaredLicense{Name: l.Name, Count: l.Count})
	}
	return out
}

func databaseFromLog(db *fsm.Database) *dblang.Database {
	out := &dblang.Database{}
	for _, k := range db.Keys {
		out.Keys = append(out.Keys, dblang.Key{Name: k.Name, Comment: k.Comment})
	}
	for _, t := range db.MTypes {
		out.MTypes = append(out.MTypes, dblang.MType{
			Name: t.Name, Keys: clone(t.Keys), Attrs: maps.Clone(t.Attrs), Mounts: clone(t.Mounts), Owner: maps.Clone(t.Owner),
		})
	}
	for _, m := range db.Machines {
		out.Machines = append(out.Machines, dblang.Machine{
			Name: m.Name, MType: m.MType, Keys: clone(m.Keys), Attrs: maps.Clone(m.Attrs), Mounts: clone(m.Mounts), Owner: maps.Clone(m.Owner),
		})
	}
	for _, q := range db.Queues {
		out.Queues = append(out.Queues, dblang.Queue{
			Name: q.Name, Priority: q.Priority, MaxSize: q.MaxSize, MaxActive: q.MaxActive,
			MaxRunSeconds: q.MaxRunSeconds, MaxMemMB: q.MaxMemMB, KillGraceSeconds: q.KillGraceSeconds, Owner: maps.Clone(q.Owner),
			Policy: q.Policy, MaxUserActive: q.MaxUserActive, MaxUserQueued: q.MaxUserQueued, Interactive: q.Interactive, Preempt: q.Preempt,
			Prime: primeFromLog(q.Prime),
		})
	}
	out.Admins = clone(db.Admins)
	out.AllowRootJobs = db.AllowRootJobs
	for _, a := range db.Accounts {
		out.Accounts = append(out.Accounts, dblang.Account{Name: a.Name, Share: a.Share, Users: clone(a.Users)})
	}
	for _, sh := range db.Shares {
		out.Shares = append(out.Shares, dblang.Share{User: sh.User, Share: sh.Share})
	}
	out.HalfLifeSeconds = db.HalfLifeSeconds
	for _, l := range db.Licenses {
		out.Licenses = append(out.Licenses, dblang.License{Name: l.Name, Count: l.Count})
	}
	return out
}

// checkShares refuses db when it declares fair share (accounts, shares,
// a half-life) or per-user queue limits and the group does not all apply
// fsm.FeatureFairShare's level: an older replica would load it without
// them, and enforce no per-user limit.
func checkShares(db fsm.Database, applies func(fsm.MessageType) bool) error {
	uses := len(db.Accounts) > 0 || len(db.Shares) > 0 || db.HalfLifeSeconds != 0
	for _, q := range db.Queues {
		uses = uses || q.MaxUserActive != 0 || q.MaxUserQueued != 0
	}
	if uses && !applies(fsm.FeatureFairShare.Level) {
		return fmt.Errorf("load a database with fair share or per-user limits: %w", errUpgradeFirst)
	}
	return nil
}

// hasOwnerSettings reports whether db sets an owner policy anywhere.
func hasOwnerSettings(db fsm.Database) bool {
	for _, m := range db.MTypes {
		if len(m.Owner) > 0 {
			return true
		}
	}
	for _, m := range db.Machines {
		if len(m.Owner) > 0 {
			return true
		}
	}
	for _, q := range db.Queues {
		if len(q.Owner) > 0 {
			return true
		}
	}
	return false
}

// checkOwnerSettings refuses db when it sets owner policies and the group
// (applies reports for a type whether every server applies it) does not
// all apply fsm.FeatureOwnerSettings' level: a LoadDatabase carries them
// in fields an older replica ignores, so it would apply the load without
// them, and its machines' policies would differ from the others'. The
// initial database (--database) is loaded by the first leader of a new
// group, whose servers were all started for it.
func checkOwnerSettings(db fsm.Database, applies func(fsm.MessageType) bool) error {
	if hasOwnerSettings(db) && !applies(fsm.FeatureOwnerSettings.Level) {
		return fmt.Errorf("load a database with owner-policy settings: %w", errUpgradeFirst)
	}
	return nil
}

// checkKillGrace refuses db when a queue sets kill_grace and the group
// does not all apply fsm.FeatureQueueKillGrace's level: an older replica
// would load the queue without it.
func checkKillGrace(db fsm.Database, applies func(fsm.MessageType) bool) error {
	for _, q := range db.Queues {
		if q.KillGraceSeconds != 0 && !applies(fsm.FeatureQueueKillGrace.Level) {
			return fmt.Errorf("load a database with kill_grace on queue %s: %w", q.Name, errUpgradeFirst)
		}
	}
	return nil
}

// checkPolicy refuses db when a queue sets a placement policy and the
// group does not all apply fsm.FeatureQueuePolicy's level: an older
// replica would load the queue without it and place its jobs one by one.
func checkPolicy(db fsm.Database, applies func(fsm.MessageType) bool) error {
	for _, q := range db.Queues {
		if q.Policy != "" && !applies(fsm.FeatureQueuePolicy.Level) {
			return fmt.Errorf("load a database with policy=%s on queue %s: %w", q.Policy, q.Name, errUpgradeFirst)
		}
	}
	return nil
}

// checkPreempt refuses db when a queue sets preempt= and the group does
// not all apply fsm.FeatureQueuePreempt's level: an older replica would
// load the queue without it and refuse the Preempt entries.
func checkPreempt(db fsm.Database, applies func(fsm.MessageType) bool) error {
	for _, q := range db.Queues {
		if q.Preempt != "" && !applies(fsm.FeatureQueuePreempt.Level) {
			return fmt.Errorf("load a database with preempt=%s on queue %s: %w", q.Preempt, q.Name, errUpgradeFirst)
		}
	}
	return nil
}

// checkLicenses refuses db when it declares licences and the group does
// not all apply fsm.FeatureLicenses' level: an older replica would load
// the database without them and place licensed jobs without counting.
func checkLicenses(db fsm.Database, applies func(fsm.MessageType) bool) error {
	if len(db.Licenses) > 0 && !applies(fsm.FeatureLicenses.Level) {
		return fmt.Errorf("load a database with license %s: %w", db.Licenses[0].Name, errUpgradeFirst)
	}
	return nil
}

// checkInteractive refuses db when it marks a queue interactive=yes and
// the group does not all apply fsm.FeatureInteractiveQueue's level: an
// older replica would load the queue as a plain one and, as leader, start
// interactive work after the rest.
func checkInteractive(db fsm.Database, applies func(fsm.MessageType) bool) error {
	if q := db.InteractiveQueue(); q != "" && !applies(fsm.FeatureInteractiveQueue.Level) {
		return fmt.Errorf("load a database with interactive=yes on queue %s: %w", q, errUpgradeFirst)
	}
	return nil
}

// loadInitialDatabase applies --database FILE when the group has never had
// a database: the first leader of a new group does it, once.
func (s *Server) loadInitialDatabase() {
	if s.initialDB == nil {
		return
	}
	var loaded uint64
	s.fsm.Read(func(v fsm.View) { _, loaded = v.Database() })
	if loaded != 0 {
		return
	}
	res, err := s.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{
		At: time.Now().UTC(), Source: s.cfg.DatabaseFile, By: "server " + s.cfg.Name, Database: *s.initialDB,
	})
	switch {
	case err != nil:
		s.log.Error("load initial database failed", "file", s.cfg.DatabaseFile, "err", err)
	case res.Err != nil:
		s.log.Error("initial database refused", "file", s.cfg.DatabaseFile, "err", res.Err)
	default:
		s.log.Info("initial database loaded", "file", s.cfg.DatabaseFile, "index", res.Index)
	}
}
