package spec

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestGolden parses each testdata/golden/NAME.spec (the paper's Examples 1
// and 2, the xnmgr form's string, and one spec with every option) and
// compares the JobSpec, as JSON, with NAME.json; -update rewrites the JSON.
// Each spec must also survive Format then Parse.
func TestGolden(t *testing.T) {
	specs, err := filepath.Glob(filepath.Join("testdata", "golden", "*.spec"))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) == 0 {
		t.Fatal("no testdata/golden/*.spec files")
	}
	for _, path := range specs {
		name := strings.TrimSuffix(filepath.Base(path), ".spec")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(strings.TrimSpace(string(src)))
			if err != nil {
				t.Fatalf("Parse(%s): %v", path, err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(got); err != nil {
				t.Fatal(err)
			}
			js := buf.Bytes()
			jsonPath := strings.TrimSuffix(path, ".spec") + ".json"
			if *update {
				if err := os.WriteFile(jsonPath, js, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				want, err := os.ReadFile(jsonPath)
				if err != nil {
					t.Fatalf("read golden file (run go test -update to create it): %v", err)
				}
				if !bytes.Equal(js, want) {
					t.Errorf("Parse(%s) differs from %s (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, jsonPath, js, want)
				}
			}
			back, err := Parse(Format(got))
			if err != nil {
				t.Fatalf("Parse(Format()) of %s: %v", path, err)
			}
			if !reflect.DeepEqual(back, got) {
				t.Errorf("round trip of %s through %q: got %#v, want %#v", path, Format(got), back, got)
			}
		})
	}
}

// TestPaperExamples pins the paper's examples field by field, so the
// golden files cannot drift from what the paper says.
func TestPaperExamples(t *testing.T) {
	tests := []struct {
		file string
		want client.JobSpec
	}{
		{"example1.spec", client.JobSpec{
			Binaries:     map[string]string{"sparc": "/usr/u/fred/test"},
			Min:          3,
			Requirements: []client.Requirement{{Attr: "mem", Op: ">", Value: 10}},
			Mail:         MailOwner,
		}},
		{"example2.spec", client.JobSpec{
			Name:     "test1",
			Binaries: map[string]string{"sparc": "/usr/u/fred/sparc/test", "mips": "/usr/u/fred/mips/test"},
			Min:      4,
			Args:     []string{"4"},
			Mounts:   []string{"/usr/u/fred/data"},
		}},
		{"xnmgr.spec", client.JobSpec{
			Name:     "job1",
			Binaries: map[string]string{"sparc": "/usr/u/isis/bin/test"},
			Min:      3,
			Env:      []string{"DISPLAY=flute"},
			Args:     []string{"4"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "golden", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(strings.TrimSpace(string(src)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%s) = %#v, want %#v", tt.file, got, tt.want)
			}
		})
	}
}
