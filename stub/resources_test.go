package stub

import (
	"slices"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestParseNvidiaSMI(t *testing.T) {
	out := []byte("1, NVIDIA A100-SXM4-40GB, 40960\n0, Tesla T4, 15360\n2, NVIDIA GeForce RTX 3090, [N/A]\n")
	got, err := parseNvidiaSMI(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []client.GPU{{Index: 0, Type: "t4", MemoryMB: 15360}, {Index: 1, Type: "a100", MemoryMB: 40960}, {Index: 2, Type: "rtx3090"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parseNvidiaSMI([]byte("no GPUs here\n")); err == nil {
		t.Error("a line without three fields was read")
	}
}

func TestGPUEnviron(t *testing.T) {
	env := []string{"A=1", "CUDA_VISIBLE_DEVICES=5", "NETMGR_GPUS=9"}
	got := gpuEnviron(slices.Clone(env), []int{2, 0}, true)
	want := []string{"A=1", "CUDA_VISIBLE_DEVICES=2,0", "NETMGR_GPUS=2,0"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := gpuEnviron(slices.Clone(env), nil, false); !slices.Equal(got, env) {
		t.Errorf("a job given no GPUs on a machine without: got %v, want its own %v", got, env)
	}
	want = []string{"A=1", "CUDA_VISIBLE_DEVICES=", "NETMGR_GPUS="}
	if got := gpuEnviron(slices.Clone(env), nil, true); !slices.Equal(got, want) {
		t.Errorf("a job given no GPUs on a GPU machine: got %v, want %v", got, want)
	}
}
