package spec

import (
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// survives Format then Parse unchanged. The seed corpus lives in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add(`binaries={x86_64=/bin/sh},min=3,symb_name=job1,env={"A=b"},args={-c,"echo hi"}`)
	f.Add(`binaries={sparc=/usr/u/isis/bin/test},min=3,symb_name=job1,env={"DISPLAY=flute"},args={4}`)
	f.Add(`binaries={sparc=/usr/u/fred/test},min=3,mem>10,mail`)
	f.Add(`binaries={x=/a},keys={fpu},rating>=8,mounts={/d},machines={flute},unique,load=0.5,memory=64,queue=q,restart=always,max_restarts=2,cron="* * * * *",after=1,copy_in={a},copy_out={b}`)
	f.Fuzz(func(t *testing.T, in string) {
		first, err := Parse(in)
		if err != nil {
			return
		}
		out := Format(first)
		second, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but Parse(Format()=%q): %v", in, out, err)
		}
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("round trip of %q through %q: got %#v, want %#v", in, out, second, first)
		}
		if err := Validate(first); err != nil {
			t.Fatalf("Parse(%q) ok, but Validate: %v", in, err)
		}
	})
}
