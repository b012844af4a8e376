package dblang

import (
	"maps"
	"sort"
)

// Equal reports whether db and o declare the same things. It ignores Pos,
// treats nil and empty slices and maps alike, and compares the Keys and
// Mounts of an mtype or machine as sets, since their order in a list
// carries no meaning; declarations themselves compare in order.
func (db *Database) Equal(o *Database) bool {
	if db == nil || o == nil {
		return db == o
	}
	if len(db.Keys) != len(o.Keys) || len(db.MTypes) != len(o.MTypes) ||
		len(db.Machines) != len(o.Machines) || len(db.Queues) != len(o.Queues) ||
		!sliceEqual(db.Admins, o.Admins) || db.AllowRootJobs != o.AllowRootJobs || len(db.Licenses) != len(o.Licenses) {
		return false
	}
	for i, l := range db.Licenses {
		if l.Name != o.Licenses[i].Name || l.Count != o.Licenses[i].Count {
			return false
		}
	}
	for i, k := range db.Keys {
		if k.Name != o.Keys[i].Name || k.Comment != o.Keys[i].Comment {
			return false
		}
	}
	for i, t := range db.MTypes {
		u := o.MTypes[i]
		if t.Name != u.Name || !setEqual(t.Keys, u.Keys) || !attrsEqual(t.Attrs, u.Attrs) || !setEqual(t.Mounts, u.Mounts) || !ownerEqual(t.Owner, u.Owner) {
			return false
		}
	}
	for i, m := range db.Machines {
		n := o.Machines[i]
		if m.Name != n.Name || m.MType != n.MType || !setEqual(m.Keys, n.Keys) ||
			!attrsEqual(m.Attrs, n.Attrs) || !setEqual(m.Mounts, n.Mounts) || !ownerEqual(m.Owner, n.Owner) {
			return false
		}
	}
	for i, q := range db.Queues {
		r := o.Queues[i]
		if !ownerEqual(q.Owner, r.Owner) || !primeEqual(q.Prime, r.Prime) {
			return false
		}
		if q.Name != r.Name || q.Priority != r.Priority || q.MaxSize != r.MaxSize || q.MaxActive != r.MaxActive ||
			q.MaxRunSeconds != r.MaxRunSeconds || q.MaxMemMB != r.MaxMemMB || q.KillGraceSeconds != r.KillGraceSeconds ||
			q.Policy != r.Policy || q.MaxUserActive != r.MaxUserActive || q.MaxUserQueued != r.MaxUserQueued ||
			q.Interactive != r.Interactive ||
			q.Preempt != r.Preempt {
			return false
		}
	}
	return sharesEqual(db, o)
}

// Equal reports whether in and o say the same things; Keys and Mounts
// compare as sets, and nil and empty slices and maps alike.
func (in *Init) Equal(o *Init) bool {
	if in == nil || o == nil {
		return in == o
	}
	return in.MType == o.MType && setEqual(in.Keys, o.Keys) && attrsEqual(in.Attrs, o.Attrs) && setEqual(in.Mounts, o.Mounts) && ownerEqual(in.Owner, o.Owner)
}

// ownerEqual compares owner settings; nil and empty alike.
func ownerEqual(a, b map[string]string) bool { return maps.Equal(a, b) }

func sliceEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// setEqual compares a and b ignoring order (as multisets).
func setEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a = append([]string(nil), a...)
	b = append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return sliceEqual(a, b)
}

func attrsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v != w {
			return false
		}
	}
	return true
}
