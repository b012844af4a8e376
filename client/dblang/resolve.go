package dblang

import "sort"

// Resolve returns what the machine called name has once its mtype is merged
// in: the union of keys and of mounts, sorted, and the mtype's attributes
// overridden by the machine's. It reports false when db declares no such
// machine. Resolve does not change db and is safe for concurrent use.
func (db *Database) Resolve(name string) (Resolved, bool) {
	m := db.FindMachine(name)
	if m == nil {
		return Resolved{}, false
	}
	var r Resolved
	if t := db.FindMType(m.MType); m.MType != "" && t != nil {
		r = resolve(t.Name, t.Keys, t.Attrs, t.Mounts)
		r.Owner = ResolveOwner(t.Owner)
	} else {
		r = resolve(m.MType, nil, nil, nil)
	}
	r.Keys = union(r.Keys, m.Keys)
	for k, v := range m.Attrs {
		r.Attrs[k] = v
	}
	r.Mounts = union(r.Mounts, m.Mounts)
	r.Owner = ResolveOwner(r.Owner, m.Owner)
	return r, true
}

// ResolveMType returns what a machine of the mtype called name has: the
// mtype's keys and mounts, sorted, and its attributes. A stub that claims
// an mtype in its init file takes this. It reports false when db declares
// no such mtype.
func (db *Database) ResolveMType(name string) (Resolved, bool) {
	t := db.FindMType(name)
	if t == nil {
		return Resolved{}, false
	}
	r := resolve(t.Name, t.Keys, t.Attrs, t.Mounts)
	r.Owner = ResolveOwner(t.Owner)
	return r, true
}

func resolve(mtype string, keys []string, attrs map[string]float64, mounts []string) Resolved {
	r := Resolved{MType: mtype, Keys: union(nil, keys), Attrs: make(map[string]float64, len(attrs)), Mounts: union(nil, mounts)}
	for k, v := range attrs {
		r.Attrs[k] = v
	}
	return r
}

// union returns the sorted, duplicate-free union of a and b; nil when both
// are empty.
func union(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := append(append(make([]string, 0, len(a)+len(b)), a...), b...)
	sort.Strings(out)
	j := 0
	for i, s := range out {
		if i == 0 || s != out[j-1] {
			out[j] = s
			j++
		}
	}
	return out[:j]
}
