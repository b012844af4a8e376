package server

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The translators between the wire (client), log (fsm) and history
// (server/history) types copy field by field; a field added to one type
// and not to its translator is silently lost. The parity tests fill
// every field of a translator's source with a distinct value (filler),
// translate it, and check with checkParity that each source field
// arrived, under its own name or one a crossing lists, and that each
// destination field got its value from some source field; the fields
// that deliberately do not cross are listed with the reason. As in
// fsm/snapshot_codec_test.go.

// filler sets every exported field of a value, recursively, to a value
// that differs from the zero value and from every other field's.
type filler struct{ n int }

func (f *filler) next() int { f.n++; return f.n }

// fillNew returns a T with every exported field set.
func fillNew[T any](f *filler) T {
	var v T
	f.fill(reflect.ValueOf(&v).Elem())
	return v
}

func (f *filler) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			n := f.next()
			v.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(n), int64(n)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.String:
		v.SetString("s" + strconv.Itoa(f.next()))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(f.next()))
	case reflect.Uint64:
		v.SetUint(uint64(f.next()))
	case reflect.Float64:
		v.SetFloat(float64(f.next()) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			f.fill(v.Index(i))
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(k)
			f.fill(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem())
	default:
		panic("filler: no rule for " + v.Type().String())
	}
}

// A crossing says how one translator's fields cross, beyond the rule
// that a field arrives in the destination's field of the same path. Its
// keys are field paths with list indexes left out ("Instances[].PID");
// a key names the field and everything under it. Each list, but renamed,
// gives the reason for every entry.
type crossing struct {
	// renamed maps a source path to the destination path it arrives at.
	renamed map[string]string
	// dropped lists the source fields that deliberately do not cross.
	dropped map[string]string
	// derived lists the destination fields that no source field of the
	// same path sets: computed, taken from elsewhere, or set later.
	derived map[string]string
}

// leaf is a field checkParity compares as a whole: not a struct (but
// time.Time), nor a pointer to or a list of structs.
type leaf struct {
	path string // with list indexes: "Instances[1].PID"
	v    reflect.Value
}

var indexes = regexp.MustCompile(`\[\d+\]`)

// pattern is path with its list indexes left out, as crossings name it.
func pattern(path string) string { return indexes.ReplaceAllString(path, "[]") }

// leaves lists the exported leaf fields of v under prefix. Embedded
// structs' fields count as the outer struct's, as Go promotes them.
func leaves(v reflect.Value, prefix string) []leaf {
	switch {
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return []leaf{{prefix, v}}
		}
		return leaves(v.Elem(), prefix)
	case v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]():
		var out []leaf
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if !sf.IsExported() {
				continue
			}
			p := prefix
			if !sf.Anonymous {
				p = join(prefix, sf.Name)
			}
			out = append(out, leaves(v.Field(i), p)...)
		}
		return out
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct && v.Type().Elem() != reflect.TypeFor[time.Time]():
		var out []leaf
		for i := range v.Len() {
			out = append(out, leaves(v.Index(i), fmt.Sprintf("%s[%d]", prefix, i))...)
		}
		if v.Len() == 0 {
			out = append(out, leaf{prefix, v})
		}
		return out
	}
	return []leaf{{prefix, v}}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// listed returns the entry of m that names path (its pattern, or a field
// above it) and whether there is one.
func listed(m map[string]string, path string) (key string, ok bool) {
	p := pattern(path)
	for k := range m {
		if p == k || strings.HasPrefix(p, k+".") || strings.HasPrefix(p, k+"[") {
			return k, true
		}
	}
	return "", false
}

// renamedPath is where path arrives under c.renamed, its list indexes
// kept.
func (c crossing) renamedPath(path string) string {
	k, ok := listed(c.renamed, path)
	if !ok {
		return path
	}
	// The renamed key covers a prefix of path's pattern: keep the
	// indexes of path in that prefix and of the rest.
	idx := indexes.FindAllString(path, -1)
	to := c.renamed[k] + pattern(path)[len(k):]
	i := 0
	return regexp.MustCompile(`\[\]`).ReplaceAllStringFunc(to, func(string) string {
		if i < len(idx) {
			i++
			return idx[i-1]
		}
		return "[]"
	})
}

// checkParity checks that dst, translated from src, holds every field of
// src (filled by filler) under the path c gives it, with an equal value,
// and that every field of dst got its value from src, but for the fields
// c lists as dropped and derived.
func checkParity(t *testing.T, src, dst any, c crossing) {
	t.Helper()
	got := make(map[string]reflect.Value)
	for _, l := range leaves(reflect.ValueOf(dst), "") {
		got[l.path] = l.v
	}
	reached := make(map[string]bool)
	srcType, dstType := reflect.TypeOf(src), reflect.TypeOf(dst)
	// errorf reports one failure per field, not one per list element.
	said := make(map[string]bool)
	errorf := func(path, format string, args ...any) {
		t.Helper()
		if !said[pattern(path)] {
			said[pattern(path)] = true
			t.Errorf(format, args...)
		}
	}
	for _, l := range leaves(reflect.ValueOf(src), "") {
		if _, ok := listed(c.dropped, l.path); ok {
			continue
		}
		if l.v.IsZero() {
			errorf(l.path, "%s.%s is zero: the filler has no value for it", srcType, l.path)
		}
		to := c.renamedPath(l.path)
		v, ok := got[to]
		switch {
		case !ok:
			errorf(l.path, "%s.%s has no field %s in %s: translate it, or list it as dropped with the reason", srcType, l.path, to, dstType)
			continue
		case !sameValue(l.v, v):
			errorf(l.path, "%s.%s = %v arrived in %s.%s as %v", srcType, l.path, l.v, dstType, to, v)
		}
		reached[to] = true
	}
	for _, l := range leaves(reflect.ValueOf(dst), "") {
		if _, ok := listed(c.derived, l.path); ok || reached[l.path] {
			continue
		}
		errorf("dst:"+l.path, "%s.%s = %v comes from no field of %s: translate one into it, or list it as derived with the reason", dstType, l.path, l.v, srcType)
	}
	// Every entry of the lists names a field there is, so none outlives
	// a rename.
	for _, check := range []struct {
		what string
		m    map[string]string
		of   reflect.Type
	}{{"renamed", c.renamed, srcType}, {"dropped", c.dropped, srcType}, {"derived", c.derived, dstType}} {
		for k := range check.m {
			if !hasPath(check.of, k) {
				t.Errorf("%s lists %s, which %s does not have", check.what, k, check.of)
			}
		}
	}
}

// hasPath reports whether type typ has the field path p ("[]" steps into
// a list).
func hasPath(typ reflect.Type, p string) bool {
	for _, name := range strings.Split(strings.ReplaceAll(p, "[]", ""), ".") {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return false
		}
		f, ok := typ.FieldByName(name)
		if !ok {
			return false
		}
		typ = f.Type
	}
	return true
}

// sameValue reports whether a and b hold the same value, b's type being
// one a converts to (times compare as instants).
func sameValue(a, b reflect.Value) bool {
	if ta, ok := a.Interface().(time.Time); ok {
		tb, ok := b.Interface().(time.Time)
		return ok && ta.Equal(tb)
	}
	if a.Type() != b.Type() {
		// Only a string converts to a string: Go would make an int a rune.
		if !a.Type().ConvertibleTo(b.Type()) || (b.Kind() == reflect.String) != (a.Kind() == reflect.String) {
			return false
		}
		a = a.Convert(b.Type())
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
