package supervisor

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// On a cgroup v2 host the device controller is an eBPF program of type
// BPF_PROG_TYPE_CGROUP_DEVICE attached to the cgroup: the kernel runs it
// on every open or mknod of a device by a process of the cgroup or its
// descendants, with struct bpf_cgroup_dev_ctx { u32 access_type (access
// << 16 | type); u32 major; u32 minor; }, and refuses the access (EPERM)
// when it returns 0. github.com/cilium/ebpf builds, loads and attaches it
// without cgo, a C toolchain or an object file: the program is a dozen
// instructions written here.

// bpfDevChar is BPF_DEVCG_DEV_CHAR, the type of a character device.
const bpfDevChar = 2

// gpuFenceProgram returns the instructions of a device program that
// denies every GPU device (char 195:0 to 195:253) but the minors of gpus
// and allows every other device.
func gpuFenceProgram(gpus []int) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // access_type
		asm.And.Imm(asm.R2, 0xffff),              // its device type
		asm.JNE.Imm(asm.R2, bpfDevChar, "allow"),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // major
		asm.JNE.Imm(asm.R3, nvidiaMajor, "allow"),
		asm.LoadMem(asm.R4, asm.R1, 8, asm.Word), // minor
		asm.JGT.Imm(asm.R4, maxGPUMinor, "allow"),
	}
	for _, g := range gpus {
		if g >= 0 && g <= maxGPUMinor {
			insns = append(insns, asm.JEq.Imm(asm.R4, int32(g), "allow"))
		}
	}
	return append(insns,
		asm.Mov.Imm(asm.R0, 0), // deny
		asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("allow"),
		asm.Return(),
	)
}

// loadGPUFence loads the device program for gpus into the kernel.
func loadGPUFence(gpus []int) (*ebpf.Program, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "netmgr_gpus",
		Type:         ebpf.CGroupDevice,
		License:      "Apache-2.0",
		Instructions: gpuFenceProgram(gpus),
	})
	if err != nil {
		return nil, fmt.Errorf("load GPU device program: %w", err)
	}
	return prog, nil
}

// CheckGPUFence reports whether this kernel loads the GPU device
// program (root, or CAP_BPF, and a kernel with cgroup device programs):
// the stub asks once at start whether it can fence GPUs on a cgroup v2
// host. It attaches nothing.
func CheckGPUFence() error {
	prog, err := loadGPUFence(nil)
	if err != nil {
		return err
	}
	return prog.Close()
}

// fenceGPUsBPF attaches to the cgroup v2 directory open as cgroupFD a
// device program that denies every GPU but gpus. It is attached with
// BPF_PROG_ATTACH, which the cgroup keeps until it is removed (a link
// would detach when the supervisor exits), and BPF_F_ALLOW_MULTI, so it
// runs beside any program a parent (systemd) attached: every one must
// allow an access.
func fenceGPUsBPF(cgroupFD int, gpus []int) error {
	prog, err := loadGPUFence(gpus)
	if err != nil {
		return err
	}
	defer prog.Close() // the attachment keeps its own reference
	err = link.RawAttachProgram(link.RawAttachProgramOptions{
		Target: cgroupFD, Program: prog, Attach: ebpf.AttachCGroupDevice, Flags: unix.BPF_F_ALLOW_MULTI,
	})
	if err != nil {
		return fmt.Errorf("attach GPU device program: %w", err)
	}
	return nil
}
