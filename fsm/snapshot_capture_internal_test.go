package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fill sets every exported field reachable from v (a settable value) to
// something not zero: slices and maps of two elements, pointers to new
// values. n makes the values differ.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + strings.Repeat("x", *n%7))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(uint64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) / 2)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n)
			fill(e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(int64(*n)*1000, 0).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	}
}

// scribble changes, in place, every exported value reachable from v: what
// an Apply could do to a job through anything its copy shares.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "!")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(v.Int() + 1000)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(v.Uint() + 1000)
	case reflect.Float64:
		v.SetFloat(v.Float() + 1000)
	case reflect.Pointer:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			scribble(e)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Hour)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	}
}

// encodeJob is j's binary record.
func encodeJob(j *Job) []byte {
	e := newEncoder()
	e.job(j)
	return bytes.Join(e.finish(), nil)
}

// TestCloneJobSharesNothing fills every field of a job (a field added
// later too), copies it with cloneJob, then changes everything the job
// reaches but its spec (which never changes after Submit) in place: the
// copy must encode as before. A field whose slice, map or pointer
// cloneJob does not copy fails it.
func TestCloneJobSharesNothing(t *testing.T) {
	j := new(Job)
	n := 0
	fill(reflect.ValueOf(j).Elem(), &n)
	c := cloneJob(j)
	want := encodeJob(c)
	if !bytes.Equal(want, encodeJob(j)) {
		t.Fatalf("the copy encodes otherwise than the job")
	}
	v := reflect.ValueOf(j).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && f.Name != "Spec" {
			scribble(v.Field(i))
		}
	}
	if bytes.Equal(want, encodeJob(j)) {
		t.Fatalf("scribbling changed nothing the record holds: the test proves nothing")
	}
	if !bytes.Equal(want, encodeJob(c)) {
		t.Errorf("changing the job in place changed its copy: cloneJob shares a slice, map or pointer")
	}
}

// TestPersistRefusesUncopiedChange: a job changed after the snapshot's
// index without db.edit (an Apply path that forgot it) makes Persist fail
// rather than write a state no index had.
func TestPersistRefusesUncopiedChange(t *testing.T) {
	f := New()
	f.d.index = 10
	f.d.jobs[1] = &Job{ID: 1, Name: "a", ModifyIndex: 5, Instances: []Instance{{State: InstanceQueued, ModifyIndex: 5}}}
	f.d.jobs[2] = &Job{ID: 2, Name: "b", ModifyIndex: 6}
	f.d.nextJobID = 3
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer snap.Release()
	f.mu.Lock()
	f.d.index = 11
	f.d.jobs[1].Instances[0].ModifyIndex = 11 // no edit
	f.mu.Unlock()
	var buf bytes.Buffer
	err = snap.(*snapshot).write(&buf)
	if err == nil || !strings.Contains(err.Error(), "without a copy") {
		t.Fatalf("persist after an uncopied change: got %v, want an error saying so", err)
	}
	if err := snap.(*snapshot).write(&buf); !errors.Is(err, errSnapshotDone) {
		t.Errorf("a second Persist: got %v, want %v", err, errSnapshotDone)
	}
}
