package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestParseResources(t *testing.T) {
	src := `binaries={x86_64=/bin/train}, cpus=4, exclusive_cpus, gpus=a100:2, gres={fpga:1,ssd:2}, disk=20G, license=matlab`
	s, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := client.JobSpec{Binaries: map[string]string{"x86_64": "/bin/train"}, CPUs: 4, ExclusiveCPUs: true, GPUs: 2, GPUType: "a100",
		Gres: map[string]int{"fpga": 1, "ssd": 2}, DiskMB: 20 * 1024, Licenses: map[string]int{"matlab": 1}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	again, err := Parse(Format(s))
	if err != nil || !reflect.DeepEqual(again, s) {
		t.Fatalf("Parse(Format) = %+v, %v; Format wrote %s", again, err, Format(s))
	}
}

func TestParseResourceErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`binaries={*=/bin/x}, gpus=0`, "not a GPU count"},
		{`binaries={*=/bin/x}, gpus=a 100:1`, "GPU type"},
		{`binaries={*=/bin/x}, gres=fpga`, `write NAME:N`},
		{`binaries={*=/bin/x}, gres={fpga:1,fpga:2}`, "fpga given twice"},
		{`binaries={*=/bin/x}, license=matlab:0`, "at least 1"},
		{`binaries={*=/bin/x}, disk=2X`, "disk size"},
	} {
		if _, err := Parse(c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.src, err, c.want)
		}
	}
	for v, want := range map[string]int64{"500": 500, "500M": 500, "1536K": 2, "2G": 2048, "1T": 1 << 20} {
		if got, err := ParseDisk(v); err != nil || got != want {
			t.Errorf("ParseDisk(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
}
