package fsm

import (
	"bytes"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// filler sets every exported field of a value, recursively, to a value
// that differs from the zero value and from every other field's.
type filler struct{ n int }

func (f *filler) next() int { f.n++; return f.n }

func (f *filler) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			n := f.next()
			t := time.Unix(1_700_000_000+int64(n), int64(n)).UTC()
			if n%3 == 0 { // some times keep a zone offset
				t = t.In(time.FixedZone("", 2*3600))
			}
			v.Set(reflect.ValueOf(t))
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

// TestRecordsRoundTrip writes records with every field set and reads them
// back: a field the record functions forget fails it.
func TestRecordsRoundTrip(t *testing.T) {
	var f filler
	var m Machine
	var j Job
	var r Reservation
	var tk Token
	f.fill(reflect.ValueOf(&m).Elem())
	f.fill(reflect.ValueOf(&j).Elem())
	f.fill(reflect.ValueOf(&r).Elem())
	f.fill(reflect.ValueOf(&tk).Elem())
	// The same strings again, as symbols already defined.
	var j2 Job
	f.n = 0
	f.fill(reflect.ValueOf(&j2).Elem())

	e := newEncoder()
	e.machine(&m)
	e.job(&j)
	e.job(&j2)
	e.reservation(&r)
	e.token(&tk)
	d := newDecoder(bytes.NewReader(bytes.Join(e.finish(), nil)))
	var gm Machine
	var gj, gj2 Job
	var gr Reservation
	var gt Token
	d.machine(&gm)
	d.job(&gj)
	d.job(&gj2)
	d.reservation(&gr)
	d.token(&gt)
	if d.err != nil || !d.atEnd() {
		t.Fatalf("decode: got error %v, at end %v, want nil and true", d.err, d.atEnd())
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{{"machine", gm, m}, {"job", gj, j}, {"job again", gj2, j2}, {"reservation", gr, r}, {"token", gt, tk}} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.name, c.got, c.want)
		}
	}
}

// TestRecordsZeroValues: zero and empty values read back as the JSON
// format read them: zero times, empty strings, nil lists and maps.
func TestRecordsZeroValues(t *testing.T) {
	j := Job{Instances: []Instance{{}}}
	e := newEncoder()
	e.job(&j)
	d := newDecoder(bytes.NewReader(bytes.Join(e.finish(), nil)))
	var got Job
	d.job(&got)
	if d.err != nil {
		t.Fatalf("decode: %v", d.err)
	}
	if !reflect.DeepEqual(got, j) {
		t.Errorf("got %+v, want %+v", got, j)
	}
}

// TestSymbolsShared: a repeated symbol reads back as one string, so a
// restored state holds each once.
func TestSymbolsShared(t *testing.T) {
	e := newEncoder()
	e.sym("node00001.cluster.example.org")
	e.sym("node00001.cluster.example.org")
	d := newDecoder(bytes.NewReader(bytes.Join(e.finish(), nil)))
	a, b := d.sym(), d.sym()
	if a != "node00001.cluster.example.org" || a != b {
		t.Fatalf("got %q and %q, want the name twice", a, b)
	}
	if len(d.syms) != 1 {
		t.Errorf("got %d symbols defined, want 1", len(d.syms))
	}
}

// TestBinariesShared: jobs naming the same binaries read back sharing one
// map; others get their own.
func TestBinariesShared(t *testing.T) {
	bins := func(kv ...string) *Job {
		j := &Job{Spec: JobSpec{Binaries: map[string]string{}}}
		for i := 0; i < len(kv); i += 2 {
			j.Spec.Binaries[kv[i]] = kv[i+1]
		}
		return j
	}
	in := []*Job{bins("*", "/bin/a"), bins("*", "/bin/a"), bins("*", "/bin/b"), bins("x86_64", "/bin/a", "sparc", "/bin/a.sparc"), bins("sparc", "/bin/a.sparc", "x86_64", "/bin/a")}
	e := newEncoder()
	for _, j := range in {
		e.job(j)
	}
	d := newDecoder(bytes.NewReader(bytes.Join(e.finish(), nil)))
	got := make([]Job, len(in))
	for i := range got {
		d.job(&got[i])
		if !reflect.DeepEqual(got[i].Spec.Binaries, in[i].Spec.Binaries) {
			t.Errorf("job %d: got binaries %v, want %v", i, got[i].Spec.Binaries, in[i].Spec.Binaries)
		}
	}
	if d.err != nil {
		t.Fatalf("decode: %v", d.err)
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	if !same(got[0].Spec.Binaries, got[1].Spec.Binaries) || !same(got[3].Spec.Binaries, got[4].Spec.Binaries) {
		t.Errorf("equal binaries were read as different maps")
	}
	if same(got[0].Spec.Binaries, got[2].Spec.Binaries) {
		t.Errorf("different binaries were read as one map")
	}
}

// TestLongListsRoundTrip: lists longer than presize grow as they are read,
// and the raw strings read into them before they move are kept.
func TestLongListsRoundTrip(t *testing.T) {
	n := presize + 10
	j := Job{Name: "long", Instances: make([]Instance, shortInstances+1)}
	for i := range n {
		j.Spec.Args = append(j.Spec.Args, "arg"+strconv.Itoa(i))
	}
	for i := range j.Instances {
		j.Instances[i].Error = "error " + strconv.Itoa(i)
	}
	j.Instances[0].History = make([]AttemptEnd, n)
	for i := range n {
		j.Instances[0].History[i].Reason = "reason " + strconv.Itoa(i)
	}
	e := newEncoder()
	e.job(&j)
	d := newDecoder(bytes.NewReader(bytes.Join(e.finish(), nil)))
	var got Job
	d.job(&got)
	if d.err != nil {
		t.Fatalf("decode: %v", d.err)
	}
	if !reflect.DeepEqual(got, j) {
		t.Errorf("the job with %d arguments and history entries did not read back", n)
	}
}
