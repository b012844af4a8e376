package server

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/bits"
	"slices"
	"strconv"

	"github.com/netmgr/netmgr/client"
)

// The lease stream's lines, read and written without reflection. At
// 2,000 machines renewing 3,300 times a second, encoding/json's decoder
// and encoder were 15% of the leader's CPU (`perf`, at rest), ~20 us a
// renewal. What is written here is byte for byte what encoding/json
// writes, and what is read is what encoding/json reads: a line in the
// form the client writes (compact, plain strings and numbers, no field
// twice) is read directly, and any other, unknown fields and errors
// included, goes to encoding/json as before (lease_stream_wire_test.go
// holds both to encoding/json, the reader by fuzzing).

// decodeLeaseRequest reads the renewal in line into req as a
// json.Decoder with unknown fields refused would.
func decodeLeaseRequest(line []byte, req *client.LeaseRequest) error {
	if readLeaseRequest(line, req) {
		return nil
	}
	*req = client.LeaseRequest{}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	return dec.Decode(req)
}

// readLeaseRequest reads line into req on the fast path and reports
// whether it could; when it could not, req holds a partial value.
func readLeaseRequest(line []byte, req *client.LeaseRequest) bool {
	*req = client.LeaseRequest{}
	s := wireScan{b: line}
	var seen fieldSet
	ok := s.object(func(key []byte) bool {
		var bit fieldSet
		var ok bool
		switch string(key) {
		case "machine":
			bit, ok = 1<<0, s.str(&req.Machine)
		case "running":
			bit, ok = 1<<1, s.attempts(&req.Running)
		case "load":
			bit, req.Load = 1<<2, new(float64)
			ok = s.float(req.Load)
		case "token":
			bit, req.Token = 1<<3, new(client.LeaseToken)
			ok = s.token(req.Token)
		case "token_age_ms":
			bit, ok = 1<<4, s.int(&req.TokenAgeMS)
		case "problem":
			bit, ok = 1<<5, s.str(&req.Problem)
		case "asleep":
			bit, req.Asleep = 1<<6, new(string)
			ok = s.str(req.Asleep)
		case "own_load":
			bit, req.OwnLoad = 1<<7, new(float64)
			ok = s.float(req.OwnLoad)
		case "idle_s":
			bit, req.IdleS = 1<<8, new(int64)
			ok = s.int(req.IdleS)
		case "restarting":
			bit, ok = 1<<9, s.bool(&req.Restarting)
		default: // facts, unknown fields, other spellings
			return false
		}
		return ok && seen.first(bit)
	})
	return ok && s.i == len(s.b)
}

// fieldSet is the fields of an object read so far, a bit each.
type fieldSet uint32

// first records field bit and reports whether it was not read before: a
// field twice leaves the line to encoding/json, which keeps the last.
func (f *fieldSet) first(bit fieldSet) bool {
	had := *f&bit != 0
	*f |= bit
	return !had
}

// wireScan reads the fast path's JSON: b from i on, nothing skipped.
type wireScan struct {
	b []byte
	i int
}

// next takes byte c if it comes next.
func (s *wireScan) next(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads an object, calling field with each key once the value's
// first byte is next; field reads the value.
func (s *wireScan) object(field func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		key, ok := s.plain()
		if !ok || !s.next(':') || !field(key) {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// plain reads a string of printable ASCII without escapes.
func (s *wireScan) plain() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

func (s *wireScan) str(v *string) bool {
	b, ok := s.plain()
	*v = string(b)
	return ok
}

func (s *wireScan) bool(v *bool) bool {
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		*v, s.i = true, s.i+4
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		*v, s.i = false, s.i+5
	default:
		return false
	}
	return true
}

// number reads a number as JSON's grammar has it.
func (s *wireScan) number() (string, bool) {
	start := s.i
	s.next('-')
	if s.next('0') {
		if s.digits() > 0 {
			return "", false // a leading zero
		}
	} else if s.digits() == 0 {
		return "", false // no integer part
	}
	if s.next('.') && s.digits() == 0 {
		return "", false
	}
	if s.next('e') || s.next('E') {
		_ = s.next('+') || s.next('-')
		if s.digits() == 0 {
			return "", false
		}
	}
	return string(s.b[start:s.i]), true
}

func (s *wireScan) digits() int {
	n := 0
	for ; s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9'; s.i++ {
		n++
	}
	return n
}

func (s *wireScan) int(v *int64) bool {
	t, ok := s.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(t, 10, 64)
	*v = n
	return err == nil
}

func (s *wireScan) intSize(v *int) bool {
	t, ok := s.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(t, 10, bits.UintSize)
	*v = int(n)
	return err == nil
}

func (s *wireScan) uint(v *uint64) bool {
	t, ok := s.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(t, 10, 64)
	*v = n
	return err == nil
}

func (s *wireScan) float(v *float64) bool {
	t, ok := s.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(t, 64)
	*v = f
	return err == nil
}

func (s *wireScan) token(t *client.LeaseToken) bool {
	var seen fieldSet
	return s.object(func(key []byte) bool {
		var bit fieldSet
		var ok bool
		switch string(key) {
		case "leadership":
			bit, ok = 1<<0, s.uint(&t.Leadership)
		case "issued":
			bit, ok = 1<<1, s.int(&t.Issued)
		case "basis":
			bit, ok = 1<<2, s.int(&t.Basis)
		case "pool":
			bit, ok = 1<<3, s.intSize(&t.Pool)
		case "grace_ms":
			bit, ok = 1<<4, s.int(&t.GraceMS)
		case "lease_ms":
			bit, ok = 1<<5, s.int(&t.LeaseMS)
		default:
			return false
		}
		return ok && seen.first(bit)
	})
}

func (s *wireScan) attempts(v *[]client.AttemptRef) bool {
	if !s.next('[') {
		return false
	}
	*v = []client.AttemptRef{}
	if s.next(']') {
		return true
	}
	for {
		var a client.AttemptRef
		var seen fieldSet
		ok := s.object(func(key []byte) bool {
			var bit fieldSet
			var ok bool
			switch string(key) {
			case "job_id":
				bit, ok = 1<<0, s.uint(&a.JobID)
			case "instance":
				bit, ok = 1<<1, s.intSize(&a.Instance)
			case "attempt":
				bit, ok = 1<<2, s.uint(&a.Attempt)
			default:
				return false
			}
			return ok && seen.first(bit)
		})
		if !ok {
			return false
		}
		*v = append(*v, a)
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// appendLeaseStreamAnswer appends a's line, newline included, to dst:
// the bytes json.Encoder's Encode writes.
func appendLeaseStreamAnswer(dst []byte, a client.LeaseStreamAnswer) []byte {
	dst = append(dst, `{"status":`...)
	dst = strconv.AppendInt(dst, int64(a.Status), 10)
	if l := a.Lease; l != nil {
		dst = append(dst, `,"lease":{"lease_ms":`...)
		dst = strconv.AppendInt(dst, l.LeaseMS, 10)
		dst = append(dst, `,"renew_ms":`...)
		dst = strconv.AppendInt(dst, l.RenewMS, 10)
		dst = appendTrue(dst, `,"takes_load":true`, l.TakesLoad)
		dst = appendTrue(dst, `,"takes_asleep":true`, l.TakesAsleep)
		if l.MachineIndex != 0 {
			dst = strconv.AppendUint(append(dst, `,"machine_index":`...), l.MachineIndex, 10)
		}
		if t := l.Token; t != nil {
			dst = appendLeaseToken(append(dst, `,"token":`...), t)
		}
		dst = appendNonZero(dst, `,"pool_size":`, int64(l.PoolSize))
		dst = appendNonZero(dst, `,"position":`, int64(l.Position))
		dst = appendNonZero(dst, `,"outage_grace_ms":`, l.OutageGraceMS)
		if o := l.Owner; o != nil {
			dst = append(dst, `,"owner":{`...)
			if len(o.Settings) > 0 {
				dst = append(dst, `"settings":{`...)
				for i, k := range slices.Sorted(maps.Keys(o.Settings)) {
					if i > 0 {
						dst = append(dst, ',')
					}
					dst = appendJSONString(dst, k)
					dst = appendJSONString(append(dst, ':'), o.Settings[k])
				}
				dst = append(dst, '}')
				dst = appendTrue(dst, `,"declared":true`, o.Declared)
			} else {
				dst = appendTrue(dst, `"declared":true`, o.Declared)
			}
			dst = append(dst, '}')
		}
		dst = appendTrue(dst, `,"restarting":true`, l.Restarting)
		dst = appendTrue(dst, `,"want_facts":true`, l.WantFacts)
		dst = appendTrue(dst, `,"streams":true`, l.Streams)
		if l.RenewVia != "" {
			dst = appendJSONString(append(dst, `,"renew_via":`...), l.RenewVia)
		}
		dst = appendTrue(dst, `,"relayed":true`, l.Relayed)
		dst = append(dst, '}')
	}
	if a.Error != "" {
		dst = appendJSONString(append(dst, `,"error":`...), a.Error)
	}
	if a.Leader != "" {
		dst = appendJSONString(append(dst, `,"leader":`...), a.Leader)
	}
	return append(dst, "}\n"...)
}

func appendLeaseToken(dst []byte, t *client.LeaseToken) []byte {
	dst = strconv.AppendUint(append(dst, `{"leadership":`...), t.Leadership, 10)
	dst = strconv.AppendInt(append(dst, `,"issued":`...), t.Issued, 10)
	dst = appendNonZero(dst, `,"basis":`, t.Basis)
	dst = appendNonZero(dst, `,"pool":`, int64(t.Pool))
	dst = appendNonZero(dst, `,"grace_ms":`, t.GraceMS)
	dst = appendNonZero(dst, `,"lease_ms":`, t.LeaseMS)
	return append(dst, '}')
}

func appendTrue(dst []byte, field string, v bool) []byte {
	if v {
		dst = append(dst, field...)
	}
	return dst
}

func appendNonZero(dst []byte, key string, v int64) []byte {
	if v != 0 {
		dst = strconv.AppendInt(append(dst, key...), v, 10)
	}
	return dst
}

// appendJSONString appends s quoted as encoding/json quotes it (HTML's
// <, > and & escaped too): directly when it is printable ASCII with
// nothing to escape, else by encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
