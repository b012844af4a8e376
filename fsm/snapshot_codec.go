package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// The binary records of a version 4 or 5 snapshot are a stream of fields with
// no names and no framing, in the order the record functions
// (snapshot_records.go) write them:
//
//   - unsigned integers as uvarints, signed ones as zig-zag varints;
//   - floats as their IEEE 754 bits, 8 bytes little-endian;
//   - booleans as one byte, 0 or 1;
//   - raw strings as a uvarint length then the bytes;
//   - symbols (strings that repeat across records: names of machines,
//     users, queues, states, keys, paths) as one uvarint x: 0 is "", an
//     odd x names the (x>>1)-th symbol the stream defined, an even x
//     defines the next symbol, x>>1 bytes long, whose bytes follow;
//   - times as a kind byte: 0 the zero time, 1 a UTC time (varint Unix
//     seconds, uvarint nanoseconds), 2 any other (uvarint length, then
//     time.Time's binary form, which keeps the zone offset);
//   - lists as a uvarint count then the elements; maps as a count then
//     their entries sorted by key. An empty list or map reads back as nil.
//
// Every value written is a pure function of the records, so equal states
// give equal bytes.

// Time kinds.
const (
	timeZero  = 0
	timeUTC   = 1
	timeOther = 2
)

// chunkSize is the size of the buffers the encoder fills; a snapshot's
// records are a list of them, never one large buffer.
const chunkSize = 1 << 20

// encoder writes binary records into chunks, defining each symbol the
// first time it is written.
type encoder struct {
	chunks [][]byte
	buf    []byte
	syms   map[string]uint64
	keys   []string // sortedKeys' buffer
}

func newEncoder() *encoder {
	return &encoder{buf: make([]byte, 0, chunkSize), syms: make(map[string]uint64)}
}

// endRecord starts a new chunk once the current one is full. Records never
// span chunks, so a chunk grows past chunkSize only for a record larger
// than the room left.
func (e *encoder) endRecord() {
	if len(e.buf) >= chunkSize-chunkSize/16 {
		e.chunks = append(e.chunks, e.buf)
		e.buf = make([]byte, 0, chunkSize)
	}
}

// finish returns every chunk written.
func (e *encoder) finish() [][]byte {
	if len(e.buf) > 0 {
		e.chunks = append(e.chunks, e.buf)
		e.buf = nil
	}
	return e.chunks
}

func (e *encoder) uint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) int(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) float(f float64) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(f))
}

func (e *encoder) bool(b bool) {
	var v byte
	if b {
		v = 1
	}
	e.buf = append(e.buf, v)
}

func (e *encoder) str(s string) {
	e.uint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoder) sym(s string) {
	if s == "" {
		e.uint(0)
		return
	}
	if n, ok := e.syms[s]; ok {
		e.uint(n<<1 | 1)
		return
	}
	e.syms[s] = uint64(len(e.syms))
	e.uint(uint64(len(s)) << 1)
	e.buf = append(e.buf, s...)
}

func (e *encoder) time(t time.Time) {
	switch {
	case t.IsZero() && t.Location() == time.UTC:
		e.buf = append(e.buf, timeZero)
	case t.Location() == time.UTC:
		e.buf = append(e.buf, timeUTC)
		e.int(t.Unix())
		e.uint(uint64(t.Nanosecond()))
	default:
		b, err := t.MarshalBinary()
		if err != nil { // a zone offset that is not a whole minute: keep the instant
			b, _ = t.UTC().MarshalBinary()
		}
		e.buf = append(e.buf, timeOther)
		e.uint(uint64(len(b)))
		e.buf = append(e.buf, b...)
	}
}

func (e *encoder) strs(ss []string) {
	e.uint(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func (e *encoder) symList(ss []string) {
	e.uint(uint64(len(ss)))
	for _, s := range ss {
		e.sym(s)
	}
}

func (e *encoder) attrs(m map[string]float64) {
	e.uint(uint64(len(m)))
	for _, k := range sortedKeys(e, m) {
		e.sym(k)
		e.float(m[k])
	}
}

func (e *encoder) symMap(m map[string]string) {
	e.uint(uint64(len(m)))
	for _, k := range sortedKeys(e, m) {
		e.sym(k)
		e.sym(m[k])
	}
}

// sortedKeys returns m's keys sorted, in e's buffer, which the next call
// reuses: a map per job must not cost an allocation per job.
func sortedKeys[V any](e *encoder, m map[string]V) []string {
	e.keys = e.keys[:0]
	for k := range m {
		e.keys = append(e.keys, k)
	}
	slices.Sort(e.keys)
	return e.keys
}

// Bounds the decoder holds a corrupt stream to, so that a bad length
// fails instead of exhausting memory.
const (
	maxStringLen = 64 << 20
	maxListLen   = 1 << 24
	// presize is the longest list allocated whole before its elements
	// are read; longer ones grow as they are.
	presize = 1 << 16
)

// errCorrupt means the binary records do not decode.
var errCorrupt = errors.New("corrupt snapshot records")

// decoder reads binary records from a stream through its own buffer. The
// first error sticks: every read after it returns a zero value, so a
// record is read whole and checked once.
type decoder struct {
	r        io.Reader
	buf      []byte
	pos, end int
	rerr     error // what the last Read of r returned
	err      error
	syms     []string
	shared   map[mapKey]map[string]string // sharedSymMap's maps

	// The raw strings of the record being read: their bytes, and where
	// each goes once flushRaw turns them into one string.
	raw    []byte
	rawDst []rawRef
	// instances is where short instance lists are cut from.
	instances []Instance
	// version is the snapshot version whose records it reads;
	// SnapshotVersion unless set.
	version int
}

// rawRef is a raw string waiting for flushRaw: its destination and length.
type rawRef struct {
	dst *string
	n   int
}

func newDecoder(r io.Reader) *decoder {
	return &decoder{r: r, buf: make([]byte, 1<<16), version: SnapshotVersion}
}

// fill tries to make n bytes (at most len(d.buf)) available and reports
// whether it did.
func (d *decoder) fill(n int) bool {
	if d.end-d.pos >= n {
		return true
	}
	if d.pos > 0 {
		d.end = copy(d.buf, d.buf[d.pos:d.end])
		d.pos = 0
	}
	for d.end < n && d.rerr == nil {
		k, err := d.r.Read(d.buf[d.end:])
		d.end += k
		d.rerr = err
	}
	return d.end >= n
}

// fail records the first error.
func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// truncated records that the stream ended inside a record, or the error
// reading it.
func (d *decoder) truncated() {
	if d.rerr != nil && d.rerr != io.EOF {
		d.fail(d.rerr)
		return
	}
	d.fail(fmt.Errorf("%w: truncated", errCorrupt))
}

// atEnd reports whether the stream has no byte left.
func (d *decoder) atEnd() bool { return d.err == nil && !d.fill(1) && d.rerr == io.EOF }

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	d.fill(binary.MaxVarintLen64)
	v, n := binary.Uvarint(d.buf[d.pos:d.end])
	switch {
	case n == 0:
		d.truncated()
		return 0
	case n < 0:
		d.fail(fmt.Errorf("%w: varint overflows", errCorrupt))
		return 0
	}
	d.pos += n
	return v
}

func (d *decoder) int() int64 {
	u := d.uint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if !d.fill(1) {
		d.truncated()
		return 0
	}
	b := d.buf[d.pos]
	d.pos++
	return b
}

func (d *decoder) float() float64 {
	if d.err != nil {
		return 0
	}
	if !d.fill(8) {
		d.truncated()
		return 0
	}
	v := binary.LittleEndian.Uint64(d.buf[d.pos:])
	d.pos += 8
	return math.Float64frombits(v)
}

func (d *decoder) bool() bool {
	switch b := d.byte(); b {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail(fmt.Errorf("%w: boolean %d", errCorrupt, b))
		return false
	}
}

// bytes returns the next n bytes, valid until the next read.
func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > maxStringLen {
		d.fail(fmt.Errorf("%w: string of %d bytes", errCorrupt, n))
		return nil
	}
	if int(n) <= len(d.buf) {
		if !d.fill(int(n)) {
			d.truncated()
			return nil
		}
		b := d.buf[d.pos : d.pos+int(n)]
		d.pos += int(n)
		return b
	}
	b := make([]byte, n)
	k := copy(b, d.buf[d.pos:d.end])
	d.pos = d.end
	if _, err := io.ReadFull(d.r, b[k:]); err != nil {
		d.rerr = err
		d.truncated()
		return nil
	}
	return b
}

// str reads a raw string into *dst, which must stay where it is until
// the next flushRaw: the record's raw strings become one allocation, not
// one each.
func (d *decoder) str(dst *string) {
	b := d.bytes(d.uint())
	if len(b) == 0 {
		*dst = ""
		return
	}
	d.raw = append(d.raw, b...)
	d.rawDst = append(d.rawDst, rawRef{dst: dst, n: len(b)})
}

// flushRaw sets the raw strings read since the last flush, all cut from
// one new string. The record functions call it once a record is read.
func (d *decoder) flushRaw() {
	if len(d.rawDst) == 0 {
		return
	}
	all := string(d.raw)
	off := 0
	for _, r := range d.rawDst {
		*r.dst = all[off : off+r.n]
		off += r.n
	}
	d.raw = d.raw[:0]
	clear(d.rawDst)
	d.rawDst = d.rawDst[:0]
}

func (d *decoder) sym() string {
	s, _ := d.symID()
	return s
}

// symID reads a symbol and returns it with its number plus one (0 for
// ""), which identifies it within the stream.
func (d *decoder) symID() (string, uint64) {
	x := d.uint()
	switch {
	case x == 0:
		return "", 0
	case x&1 == 1:
		if i := x >> 1; i < uint64(len(d.syms)) {
			return d.syms[i], i + 1
		}
		d.fail(fmt.Errorf("%w: symbol %d not defined", errCorrupt, x>>1))
		return "", 0
	}
	b := d.bytes(x >> 1)
	if d.err != nil {
		return "", 0
	}
	s := string(b)
	d.syms = append(d.syms, s)
	return s, uint64(len(d.syms))
}

func (d *decoder) time() time.Time {
	switch k := d.byte(); k {
	case timeZero:
		return time.Time{}
	case timeUTC:
		sec := d.int()
		nsec := d.uint()
		if nsec >= 1e9 {
			d.fail(fmt.Errorf("%w: %d nanoseconds", errCorrupt, nsec))
			return time.Time{}
		}
		return time.Unix(sec, int64(nsec)).UTC()
	case timeOther:
		var t time.Time
		if b := d.bytes(d.uint()); d.err == nil {
			if err := t.UnmarshalBinary(b); err != nil {
				d.fail(fmt.Errorf("%w: time: %v", errCorrupt, err))
			}
		}
		return t
	default:
		d.fail(fmt.Errorf("%w: time kind %d", errCorrupt, k))
		return time.Time{}
	}
}

// count reads a list's length, bounded by maxListLen.
func (d *decoder) count() int {
	n := d.uint()
	if n > maxListLen {
		d.fail(fmt.Errorf("%w: list of %d", errCorrupt, n))
		return 0
	}
	return int(n)
}

// list reads a count then that many elements with read; nil when empty.
// A list longer than presize grows as it is read; before it moves, the
// raw strings already read into it are flushed.
func list[T any](d *decoder, read func(*T)) []T { return listOf(d, d.count(), read) }

// listOf is list with the count already read.
func listOf[T any](d *decoder, n int, read func(*T)) []T {
	if n == 0 || d.err != nil {
		return nil
	}
	out := make([]T, 0, min(n, presize))
	for range n {
		if len(out) == cap(out) {
			d.flushRaw()
		}
		out = append(out, *new(T))
		read(&out[len(out)-1])
		if d.err != nil {
			return nil
		}
	}
	return out
}

// Instance lists of up to shortInstances are cut from arrays of
// instanceArena instances.
const (
	shortInstances = 16
	instanceArena  = 1024
)

// instanceList reads a job's instances. Short lists are cut from one
// shared array (with a full slice expression, so an append copies),
// sparing an allocation per job; jobs are never removed, so the array is
// never garbage while part of it is used.
func (d *decoder) instanceList() []Instance {
	n := d.count()
	if n == 0 || d.err != nil {
		return nil
	}
	if n > shortInstances {
		return listOf(d, n, d.instance)
	}
	if len(d.instances) < n {
		d.instances = make([]Instance, instanceArena)
	}
	out := d.instances[:n:n]
	d.instances = d.instances[n:]
	for i := range out {
		d.instance(&out[i])
	}
	return out
}

func (d *decoder) strs() []string    { return list(d, d.str) }
func (d *decoder) symList() []string { return list(d, func(s *string) { *s = d.sym() }) }

func (d *decoder) attrs() map[string]float64 {
	n := d.count()
	if n == 0 {
		return nil
	}
	m := make(map[string]float64, min(n, presize))
	for range n {
		k := d.sym()
		m[k] = d.float()
		if d.err != nil {
			return nil
		}
	}
	return m
}

// maxShared is the most entries a map read by sharedSymMap may have to be
// shared.
const maxShared = 4

// mapKey identifies a small map of symbols by its entries' symbol
// numbers.
type mapKey struct {
	n   int
	ids [2 * maxShared]uint64
}

// sharedSymMap reads a map of symbols like symMap, but returns the same
// map for every map of up to maxShared entries with the same contents: a
// map costs hundreds of bytes, and a million jobs name a few thousand
// sets of binaries. Only maps that nobody changes may be read with it.
func (d *decoder) sharedSymMap() map[string]string {
	n := d.count()
	if n == 0 || n > maxShared {
		return d.symMapEntries(n)
	}
	k := mapKey{n: n}
	var keys, vals [maxShared]string
	for i := range n {
		keys[i], k.ids[2*i] = d.symID()
		vals[i], k.ids[2*i+1] = d.symID()
	}
	if d.err != nil {
		return nil
	}
	if m, ok := d.shared[k]; ok {
		return m
	}
	m := make(map[string]string, n)
	for i := range n {
		m[keys[i]] = vals[i]
	}
	if d.shared == nil {
		d.shared = make(map[mapKey]map[string]string)
	}
	d.shared[k] = m
	return m
}

// symMapEntries reads n entries of a map of symbols; nil when n is 0.
func (d *decoder) symMapEntries(n int) map[string]string {
	if n == 0 {
		return nil
	}
	m := make(map[string]string, min(n, presize))
	for range n {
		k := d.sym()
		m[k] = d.sym()
		if d.err != nil {
			return nil
		}
	}
	return m
}
