package fsm

// declIndex finds a declaration of the database by name in one map
// lookup: the planner asks for every machine's on every pass, and the
// leader for a renewing machine's owner settings, and the database may
// declare thousands of machines. It is derived, never snapshotted: built
// with the database it indexes (applyLoadDatabase, reindex).
type declIndex struct {
	machines map[string]int // name -> position in Database.Machines
	mtypes   map[string]int // name -> position in Database.MTypes
}

// indexDeclarations indexes db's machine and mtype declarations. Names
// are unique (Database.check).
func indexDeclarations(db *Database) declIndex {
	x := declIndex{machines: make(map[string]int, len(db.Machines)), mtypes: make(map[string]int, len(db.MTypes))}
	for i := range db.Machines {
		x.machines[db.Machines[i].Name] = i
	}
	for i := range db.MTypes {
		x.mtypes[db.MTypes[i].Name] = i
	}
	return x
}

// indexedDB is the database of a db with its index: what the FSM's own
// lookups go through.
type indexedDB struct {
	db *Database
	x  *declIndex
}

// machine returns the machine's declaration.
func (d indexedDB) machine(name string) (*DeclaredMachine, bool) {
	if d.x == nil || d.x.machines == nil {
		return d.db.machine(name)
	}
	i, ok := d.x.machines[name]
	if !ok {
		return nil, false
	}
	return &d.db.Machines[i], true
}

// mtype returns the mtype's declaration.
func (d indexedDB) mtype(name string) (*DeclaredMType, bool) {
	if d.x == nil || d.x.mtypes == nil {
		return d.db.mtype(name)
	}
	i, ok := d.x.mtypes[name]
	if !ok {
		return nil, false
	}
	return &d.db.MTypes[i], true
}

// decl returns the database with its index.
func (d *db) decl() indexedDB { return indexedDB{db: &d.database, x: &d.declIdx} }

// OwnerSettings is Database.OwnerSettings for machine m of the view,
// through the database's index by name: a map lookup, not a scan of the
// declarations.
func (v View) OwnerSettings(m *Machine) (settings map[string]string, declared bool) {
	return v.d.decl().ownerSettings(&m.MachineFacts)
}
