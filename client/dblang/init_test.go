package dblang

import (
	"errors"
	"testing"
)

func TestParseInit(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want *Init
	}{
		{"empty", "", &Init{}},
		{"one line", "mtype=sparc2, mem=64, rating=8.0, nprocs=4", &Init{
			MType: "sparc2", Attrs: map[string]float64{"mem": 64, "rating": 8, "nprocs": 4},
		}},
		{"one item per line", "mtype=sparc2\nmem=64\n\nkeys={mathlab,fpu}\nmounts={/data,/scratch}\n", &Init{
			MType: "sparc2", Keys: []string{"mathlab", "fpu"}, Attrs: map[string]float64{"mem": 64},
			Mounts: []string{"/data", "/scratch"},
		}},
		{"commas and newlines", "mem=1,\nrating=2,\r\nkeys={a},", &Init{
			Keys: []string{"a"}, Attrs: map[string]float64{"mem": 1, "rating": 2},
		}},
		{"comments and continuations", "/* stub on flute */\nkeys={a, /* licensed */ \\\n b} /* end */\n", &Init{
			Keys: []string{"a", "b"},
		}},
		{"undeclared keys and any attribute", "keys={gpu, tpu}, disk_gb=512.5, licences=-1", &Init{
			Keys: []string{"gpu", "tpu"}, Attrs: map[string]float64{"disk_gb": 512.5, "licences": -1},
		}},
		{"quoted mount", `mounts={"/my data"}`, &Init{Mounts: []string{"/my data"}}},
		{"empty lists", "keys={}, mounts={}", &Init{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseInit("init", []byte(tt.src))
			if err != nil {
				t.Fatalf("ParseInit: %v", err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			back, err := ParseInit("formatted", FormatInit(got))
			if err != nil {
				t.Fatalf("ParseInit(FormatInit): %v\n%s", err, FormatInit(got))
			}
			if !back.Equal(got) {
				t.Errorf("ParseInit(FormatInit): got %+v, want %+v", back, got)
			}
		})
	}
}

func TestFormatInit(t *testing.T) {
	in := &Init{
		MType: "sparc2", Keys: []string{"mathlab", "fpu"},
		Attrs:  map[string]float64{"rating": 8, "mem": 64, "nprocs": 4},
		Mounts: []string{"/scratch", "/data", "/my data"},
	}
	want := "mtype=sparc2\nkeys={mathlab, fpu}\nmem=64\nnprocs=4\nrating=8\nmounts={/data, \"/my data\", /scratch}\n"
	if got := string(FormatInit(in)); got != want {
		t.Errorf("FormatInit:\ngot  %s\nwant %s", got, want)
	}
	if got := FormatInit(nil); got != nil {
		t.Errorf("FormatInit(nil): got %q, want nil", got)
	}
}

func TestParseInitErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"bad number", "mem=lots", `init:1:5: bad number "lots" for attribute mem; write a number such as 16 or 8.5`},
		{"number out of range", "mem=1e400", "init:1:5: number 1e400 for attribute mem is out of range"},
		{"attribute given a list", "mem={1}", "init:1:5: attribute mem wants a number, not a list (only keys, mounts, gpus and gres take lists)"},
		{"mtype wants a name", "mtype={sparc2}", "init:1:7: mtype wants an mtype name, found a {...} list"},
		{"keys wants a list", "keys=fpu", `init:1:6: keys wants a {key, ...} list, found "fpu"`},
		{"keys holds names", "keys={fpu, /x}", "init:1:12: keys holds names, found path /x; write keys={fpu, mathlab}"},
		{"key twice", "keys={fpu, fpu}", "init:1:12: key fpu is listed twice in keys (first at 1:7); remove one"},
		{"mounts wants a list", "mounts=/data", "init:1:8: mounts wants a {/path, ...} list, found path /data"},
		{"mount not absolute", "mounts={data}", `init:1:9: mount "data" in the init file is not an absolute path; write it starting with /`},
		{"given twice", "mem=1\nmem=2", "init:2:1: mem is given twice (first at 1:1); remove one"},
		{"missing equals", "mem 64", `init:1:5: expected '=' after mem, found "64"; write mem=value`},
		{"not a name", "=64", "init:1:1: expected name=value, found '='"},
		{"two commas", "mem=1,,rating=2", "init:1:7: expected name=value after ',', found ','"},
		{"missing separator", "mem=1 rating=2", `init:1:7: unexpected "rating" after mem=...; separate items with ',' or a new line`},
		{"missing value", "mem=\nrating=2", "init:1:5: expected a value after mem=, found end of line"},
		{"unterminated list", "keys={a,\nb}\nmem=1", `init:1:6: unterminated list: this { has no closing } on its line; close it, or end the line with \ to continue the list on the next`},
		{"unterminated comment", "mem=1 /* x", "init:1:7: unterminated comment: this /* has no closing */; close it"},
		{"unterminated string", `mounts={"/a}`, `init:1:9: unterminated string: close it with " before the end of the line`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ParseInit("init", []byte(tt.src))
			if in != nil {
				t.Errorf("got an Init, want nil")
			}
			if err == nil {
				t.Fatalf("got no error, want %q", tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var list ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("got %#v, want an ErrorList of one", err)
			}
		})
	}
}
