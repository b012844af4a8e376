package dblang

import (
	"math"
	"strconv"
)

// Countable resources of a machine, in an mtype, a machine declaration or
// an init file: gpus=N (N GPUs of no type), gpus={a100=4, t4=1} (GPUs by
// type), gpu_mem=MB (each GPU's memory), gres={fpga=2, ssd=1} (named
// generic resources) and disk=MB (the exec-dir disk instances may claim,
// instead of the free disk the stub finds). A list is kept as one
// attribute per entry, gpus.a100=4 and gres.fpga=2, which is also how
// Format writes it back (and reads again): the resources then merge as
// attributes do (the machine's declaration over its mtype over its init
// file over what the stub detected), and requirements may name them
// (gres.fpga>=1).

// Resource list names.
const (
	resGPUs = "gpus"
	resGres = "gres"
)

// license checks a `license NAME = N` declaration.
func (c *checker) license(d decl) {
	n, msg := parseInt(d.val, "license "+d.name.text)
	switch {
	case msg != "":
		c.errs.add(d.val.pos, "%s", msg)
		return
	case n < 1 || n > math.MaxInt32:
		c.errs.add(d.val.pos, "license %s = %d: the count must be from 1 to %d", d.name.text, n, math.MaxInt32)
		return
	}
	c.db.Licenses = append(c.db.Licenses, License{Name: d.name.text, Count: int(n), Pos: d.pos})
}

// isResourceList reports whether name=v is a resource list: gpus or gres
// with a {...} value.
func isResourceList(name string, v value) bool {
	return (name == resGPUs || name == resGres) && v.kind == vList
}

// resourceList checks a gpus={TYPE=N, ...} or gres={NAME=N, ...} item of
// owner and adds its entries to attrs as NAME.ENTRY=N, returning attrs.
func resourceList(errs *errorSink, it item, owner string, attrs map[string]float64) map[string]float64 {
	name := it.name.text
	seen := map[string]Pos{}
	for _, e := range it.val.items {
		if !e.assign || e.name.kind != vWord {
			errs.add(e.name.pos, "%s in %s holds NAME=COUNT items, found %s; write %s={fpga=2}", name, owner, describeItem(e), name)
			continue
		}
		if first, dup := seen[e.name.text]; dup {
			errs.add(e.name.pos, "%s is listed twice in %s of %s (first at %d:%d); remove one", e.name.text, name, owner, first.Line, first.Col)
			continue
		}
		seen[e.name.text] = e.name.pos
		n, msg := parseInt(e.val, name+" "+e.name.text+" in "+owner)
		if msg == "" && (n < 0 || n > 1<<20) {
			msg = name + " " + e.name.text + " in " + owner + ": the count must be from 0 to " + strconv.Itoa(1<<20)
		}
		if msg != "" {
			errs.add(e.val.pos, "%s", msg)
			continue
		}
		if attrs == nil {
			attrs = map[string]float64{}
		}
		attrs[name+"."+e.name.text] = float64(n)
	}
	return attrs
}
