package spec

import (
	"fmt"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// ops are the comparison operators, longest first so that ">=" is tried
// before ">".
var ops = []string{">=", "<=", "==", "!=", ">", "<"}

// opList names the operators in error messages.
const opList = "> >= < <= == !="

func isOp(s string) bool {
	for _, op := range ops {
		if s == op {
			return true
		}
	}
	return false
}

// isOption reports whether name is an option of the language.
func isOption(name string) bool {
	_, ok := options[name]
	return ok
}

// ParseRequirement reads one comparison on a numeric machine attribute,
// ATTR OP NUMBER such as "mem>10" or "rating >= 8", with OP one of
// > >= < <= == !=. It is the syntax of the comparisons in a spec string,
// for callers that take one alone (netexec --require). The error names the
// comparison but no position.
func ParseRequirement(s string) (client.Requirement, error) {
	p := &parser{src: s}
	r, err := p.requirement()
	if err != nil {
		var msg string
		if e, ok := err.(*Error); ok {
			msg = e.Msg
		} else {
			msg = err.Error()
		}
		return client.Requirement{}, fmt.Errorf("%s", msg)
	}
	return r, nil
}

// FormatRequirement prints r as ParseRequirement reads it, e.g. "mem>10".
func FormatRequirement(r client.Requirement) string {
	return r.Attr + r.Op + formatNumber(r.Value)
}

// requirement reads a whole string as one comparison.
func (p *parser) requirement() (client.Requirement, error) {
	notComparison := func() error {
		return p.errAt(0, "", "%q is not a comparison ATTR OP NUMBER (OP one of %s), e.g. mem>10", p.src, opList)
	}
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos], p.pos == start) {
		p.pos++
	}
	if p.pos == start {
		return client.Requirement{}, notComparison()
	}
	attr := p.src[start:p.pos]
	p.skipSpace()
	op := p.op()
	if op == "" {
		return client.Requirement{}, notComparison()
	}
	r, err := p.comparison(attr, start, op)
	if err != nil {
		return r, err
	}
	p.skipSpace()
	if !p.eof() {
		return r, p.errAt(p.pos, attr+op, "unexpected %s after the number", p.found())
	}
	return r, nil
}

// op consumes a comparison operator at the current position and returns
// it, or returns "" and consumes nothing. A lone '=' is not an operator:
// it assigns an option.
func (p *parser) op() string {
	for _, op := range ops {
		if strings.HasPrefix(p.src[p.pos:], op) {
			p.pos += len(op)
			return op
		}
	}
	return ""
}

// comparison reads the number after ATTR OP; attr started at offset start.
func (p *parser) comparison(attr string, start int, op string) (client.Requirement, error) {
	label := attr + op
	if msg := checkAttr(attr); msg != "" {
		return client.Requirement{}, p.errAt(start, label, "%s", msg)
	}
	p.skipSpace()
	if !p.eof() && p.src[p.pos] == '{' {
		return client.Requirement{}, p.errAt(p.pos, label, "want a number, not a {...} list")
	}
	v, err := p.scalar(label, false)
	if err != nil {
		return client.Requirement{}, err
	}
	f, msg := parseNumber(v.val)
	if msg != "" {
		return client.Requirement{}, p.errAt(v.pos, label, "%s", msg)
	}
	return client.Requirement{Attr: attr, Op: op, Value: f}, nil
}
