package main

import (
	"bytes"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestRenderResources(t *testing.T) {
	ms := []client.Machine{
		{Name: "plain", Slots: 4, Running: 1},
		{Name: "gpu1", Slots: 8, Running: 2, Resources: &client.MachineResources{
			CPUsUsed: 4,
			GPUs:     []client.GPU{{Index: 0, Type: "a100", Used: true}, {Index: 1, Type: "a100"}},
			Gres:     map[string]int{"fpga": 2, "ssd": 1}, GresUsed: map[string]int{"fpga": 1},
			DiskMB: 51200, DiskUsedMB: 1024,
			Unenforced: []string{"gpus: not hidden"},
		}},
	}
	var b bytes.Buffer
	if err := renderResources(&b, ms); err != nil {
		t.Fatal(err)
	}
	want := "\nRESOURCES  CPUS  GPUS      GRES               DISK         NOT ENFORCED\n" +
		"gpu1       4/8   1/2 a100  fpga 1/2, ssd 1/1  49.0G/50.0G  gpus: not hidden\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	b.Reset()
	if err := renderLicenses(&b, []client.License{{Name: "matlab", Count: 10, Used: 3}}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "LICENSE  COUNT  USED  FREE\nmatlab   10     3     7\n"; got != want {
		t.Errorf("licences: got\n%q\nwant\n%q", got, want)
	}
}
