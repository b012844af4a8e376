package spec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// Countable resources in the job language (netexec's --cpus, --gpus,
// --gres, --disk, --license and --exclusive-cpus take the same values):
//
//	cpus=4               four of a machine's CPUs per instance
//	exclusive_cpus       those CPUs the instance's alone (a cpuset)
//	gpus=2, gpus=a100:2  two GPUs, of type a100
//	gres=fpga:1          one of a machine's generic resource fpga;
//	gres={fpga:1,ssd:1}  several
//	disk=20G             disk under the exec dir: MB, or a K, M, G or T suffix
//	license=matlab:2     two of the pool's licences matlab (NAME alone is 1);
//	license={matlab:1,sas:1}

// Option names of the resources.
const (
	optCPUs          = "cpus"
	optExclusiveCPUs = "exclusive_cpus"
	optGPUs          = "gpus"
	optGres          = "gres"
	optDisk          = "disk"
	optLicense       = "license"
)

func init() {
	options[optCPUs] = optionDef{value: scalarOption(parseMin, func(s *client.JobSpec, n int) { s.CPUs = n })}
	options[optExclusiveCPUs] = optionDef{
		bare:  func(s *client.JobSpec) { s.ExclusiveCPUs = true },
		value: scalarOption(parseBool, func(s *client.JobSpec, b bool) { s.ExclusiveCPUs = b }),
	}
	options[optGPUs] = optionDef{value: scalarOption(errMessage(parseGPUsValue), func(s *client.JobSpec, g gpuRequest) {
		s.GPUType, s.GPUs = g.typ, g.n
	})}
	options[optGres] = optionDef{value: countsOption(false, func(s *client.JobSpec, m map[string]int) { s.Gres = m })}
	options[optLicense] = optionDef{value: countsOption(true, func(s *client.JobSpec, m map[string]int) { s.Licenses = m })}
	options[optDisk] = optionDef{value: scalarOption(errMessage(ParseDisk), func(s *client.JobSpec, n int64) { s.DiskMB = n })}
}

// gpuRequest is a parsed gpus= value.
type gpuRequest struct {
	typ string
	n   int
}

func parseGPUsValue(v string) (gpuRequest, error) {
	typ, n, err := ParseGPUs(v)
	return gpuRequest{typ, n}, err
}

// ParseGPUs reads a GPU request: N, or TYPE:N (a100:2).
func ParseGPUs(v string) (typ string, n int, err error) {
	count := v
	if t, c, ok := strings.Cut(v, ":"); ok {
		if msg := checkResourceName(t); msg != "" {
			return "", 0, fmt.Errorf("GPU type %s", msg)
		}
		typ, count = t, c
	}
	n, err = strconv.Atoi(count)
	if err != nil || n < 1 || strings.HasPrefix(count, "+") {
		return "", 0, fmt.Errorf("%q is not a GPU count; write N or TYPE:N with N at least 1 (gpus=2, gpus=a100:2)", v)
	}
	return typ, n, nil
}

// ParseCount reads NAME:N, or NAME alone for 1 when bare is set, as
// --gres and --license take it.
func ParseCount(v string, bare bool) (string, int, error) {
	name, count, ok := strings.Cut(v, ":")
	if msg := checkResourceName(name); msg != "" {
		return "", 0, fmt.Errorf("%q: the name %s", v, msg)
	}
	if !ok {
		if bare {
			return name, 1, nil
		}
		return "", 0, fmt.Errorf("%q: write NAME:N (fpga:1)", v)
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || strings.HasPrefix(count, "+") {
		return "", 0, fmt.Errorf("%q: the count must be a whole number of at least 1", v)
	}
	return name, n, nil
}

// checkResourceName checks a GPU type, gres or licence name: letters,
// digits and _ - . +, as the database language's names.
func checkResourceName(s string) string {
	if s == "" {
		return "is empty"
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-.+", c)) {
			return fmt.Sprintf("%q may hold only letters, digits and _ - . +", s)
		}
	}
	return ""
}

// ParseDisk reads a disk size in MB: a whole number, or one with a K, M,
// G or T suffix (KB rounded up to whole MB).
func ParseDisk(v string) (int64, error) {
	num, mult, div := v, int64(1), int64(1)
	if n := len(v); n > 0 {
		switch strings.ToUpper(v[n-1:]) {
		case "K":
			num, div = v[:n-1], 1024
		case "M":
			num = v[:n-1]
		case "G":
			num, mult = v[:n-1], 1024
		case "T":
			num, mult = v[:n-1], 1024*1024
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || strings.HasPrefix(num, "+") || n > (1<<40)/mult {
		return 0, fmt.Errorf("disk size %q: write a whole number of MB, or one with K, M, G or T (500, 20G)", v)
	}
	return (n*mult + div - 1) / div, nil
}

// countsOption reads NAME:N or a {NAME:N, ...} list into a map, each name
// once, and stores it with set; bare allows NAME alone for 1.
func countsOption(bare bool, set func(*client.JobSpec, map[string]int)) func(*parser, *client.JobSpec, string) error {
	return func(p *parser, s *client.JobSpec, opt string) error {
		var items []scalar
		if !p.eof() && p.src[p.pos] == '{' {
			var err error
			if items, err = p.list(opt); err != nil {
				return err
			}
			if len(items) == 0 {
				return p.errAt(p.pos-1, opt, "the list names nothing")
			}
		} else {
			v, err := p.scalar(opt, false)
			if err != nil {
				return err
			}
			items = []scalar{v}
		}
		m := map[string]int{}
		for _, it := range items {
			name, n, err := ParseCount(it.val, bare)
			if err != nil {
				return p.errAt(it.pos, opt, "%v", err)
			}
			if _, dup := m[name]; dup {
				return p.errAt(it.pos, opt, "%s given twice", name)
			}
			m[name] = n
		}
		set(s, m)
		return nil
	}
}

// checkResources checks the resource options of a spec built by other
// means than Parse.
func checkResources(s client.JobSpec) error {
	switch {
	case s.CPUs < 0:
		return fmt.Errorf("option %s: %s", optCPUs, notPositive(strconv.Itoa(s.CPUs)))
	case s.GPUs < 0 || s.GPUType != "" && s.GPUs == 0:
		return fmt.Errorf("option %s: %s", optGPUs, notPositive(strconv.Itoa(s.GPUs)))
	case s.DiskMB < 0:
		return fmt.Errorf("option %s: %s", optDisk, notPositive(strconv.FormatInt(s.DiskMB, 10)))
	}
	if s.GPUType != "" {
		if msg := checkResourceName(s.GPUType); msg != "" {
			return fmt.Errorf("option %s: GPU type %s", optGPUs, msg)
		}
	}
	for _, c := range []struct {
		opt string
		m   map[string]int
	}{{optGres, s.Gres}, {optLicense, s.Licenses}} {
		for _, name := range slices.Sorted(maps.Keys(c.m)) {
			if msg := checkResourceName(name); msg != "" {
				return fmt.Errorf("option %s: the name %s", c.opt, msg)
			}
			if c.m[name] < 1 {
				return fmt.Errorf("option %s: %s", c.opt, notPositive(strconv.Itoa(c.m[name])))
			}
		}
	}
	return nil
}

// formatResources writes the resource options of s, as Format does:
// add for opt=value, bare for an option alone.
func formatResources(s client.JobSpec, add func(opt, v string), bare func(opt string)) {
	if s.CPUs > 0 {
		add(optCPUs, strconv.Itoa(s.CPUs))
	}
	if s.ExclusiveCPUs {
		bare(optExclusiveCPUs)
	}
	switch {
	case s.GPUs > 0 && s.GPUType != "":
		add(optGPUs, s.GPUType+":"+strconv.Itoa(s.GPUs))
	case s.GPUs > 0:
		add(optGPUs, strconv.Itoa(s.GPUs))
	}
	if v := formatCounts(s.Gres); v != "" {
		add(optGres, v)
	}
	if s.DiskMB > 0 {
		add(optDisk, strconv.FormatInt(s.DiskMB, 10))
	}
	if v := formatCounts(s.Licenses); v != "" {
		add(optLicense, v)
	}
}

// formatCounts writes NAME:N, or {NAME:N,...} in name order for several.
func formatCounts(m map[string]int) string {
	names := slices.Sorted(maps.Keys(m))
	items := make([]string, len(names))
	for i, n := range names {
		items[i] = n + ":" + strconv.Itoa(m[n])
	}
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return "{" + strings.Join(items, ",") + "}"
}
