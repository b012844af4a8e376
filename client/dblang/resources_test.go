package dblang

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseLicensesAndResources(t *testing.T) {
	src := "key fpu\n" +
		"mtype gpunode = {fpu, gpus={a100=4, t4=1}, gpu_mem=40960, gres={fpga=2}}\n" +
		"machine g1 = {gpunode, gres={ssd=1}, disk=100000}\n" +
		"machine g2 = {gpus=2}\n" +
		"license matlab = 10\n" +
		"license sas = 1\n"
	db, err := Parse("r.db", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got, want := db.MTypes[0].Attrs, map[string]float64{"gpus.a100": 4, "gpus.t4": 1, "gpu_mem": 40960, "gres.fpga": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("mtype attrs %v, want %v", got, want)
	}
	if got, want := db.Machines[0].Attrs, map[string]float64{"gres.ssd": 1, "disk": 100000}; !reflect.DeepEqual(got, want) {
		t.Errorf("g1 attrs %v, want %v", got, want)
	}
	if got := db.Machines[1].Attrs["gpus"]; got != 2 {
		t.Errorf("g2 gpus %v, want 2", got)
	}
	if len(db.Licenses) != 2 || db.Licenses[0].Name != "matlab" || db.Licenses[0].Count != 10 || db.Licenses[1].Count != 1 {
		t.Errorf("licences %+v", db.Licenses)
	}
	out := Format(db)
	if !strings.Contains(string(out), "license matlab = 10\nlicense sas = 1\n") {
		t.Errorf("Format lost the licences:\n%s", out)
	}
	again, err := Parse("again.db", out)
	if err != nil {
		t.Fatalf("Parse(Format): %v\n%s", err, out)
	}
	if !db.Equal(again) {
		t.Errorf("round trip changed the database:\n%s", out)
	}
}

func TestLicenseAndResourceErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"license matlab = 0\n", "license matlab = 0: the count must be from 1"},
		{"license matlab = ten\n", `bad number "ten" for license matlab`},
		{"license matlab = 2\nlicense matlab = 3\n", "license matlab is declared twice"},
		{"machine m = {gres={fpga}}\n", `gres in machine m holds NAME=COUNT items, found "fpga"`},
		{"machine m = {gres={fpga=1.5}}\n", "wants a whole number"},
		{"machine m = {gpus={a100=1, a100=2}}\n", "a100 is listed twice in gpus"},
	} {
		_, err := Parse("e.db", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
	in, err := ParseInit("init", []byte("gpus={a100=2}\ngres={fpga=1}\n"))
	if err != nil {
		t.Fatalf("ParseInit: %v", err)
	}
	if want := map[string]float64{"gpus.a100": 2, "gres.fpga": 1}; !reflect.DeepEqual(in.Attrs, want) {
		t.Errorf("init attrs %v, want %v", in.Attrs, want)
	}
}
