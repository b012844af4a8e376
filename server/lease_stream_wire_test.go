package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// wireStrings are strings the lease stream's lines may carry, some with
// something to escape.
var wireStrings = []string{"", "p0-1234", "ws17.cs.cornell.edu", `say "no"`, `back\slash`, "<b>&amp;</b>", "tab\there", "é", "\xff", "line\nbreak", "\u2028"}

func randomLeaseToken(r *rand.Rand) *client.LeaseToken {
	if r.IntN(3) == 0 {
		return nil
	}
	pick := func() int64 { return []int64{0, 1, -1, 3600000, r.Int64(), -r.Int64()}[r.IntN(6)] }
	return &client.LeaseToken{Leadership: r.Uint64() >> r.IntN(64), Issued: pick(), Basis: pick(), Pool: int(pick()), GraceMS: pick(), LeaseMS: pick()}
}

func randomLeaseAnswer(r *rand.Rand) client.LeaseStreamAnswer {
	str := func() string { return wireStrings[r.IntN(len(wireStrings))] }
	a := client.LeaseStreamAnswer{Status: []int{200, 400, 403, 503, 500}[r.IntN(5)], Error: str(), Leader: str()}
	if r.IntN(4) == 0 {
		return a
	}
	l := &client.LeaseResponse{
		LeaseMS: r.Int64N(10000) - 10, RenewMS: r.Int64N(4000), TakesLoad: r.IntN(2) == 0, TakesAsleep: r.IntN(2) == 0,
		MachineIndex: r.Uint64() >> r.IntN(64), Token: randomLeaseToken(r), PoolSize: r.IntN(3) * r.IntN(20000),
		Position: r.IntN(3) * r.IntN(20000), OutageGraceMS: int64(r.IntN(2)) * r.Int64(), Restarting: r.IntN(2) == 0,
		WantFacts: r.IntN(2) == 0, Streams: r.IntN(2) == 0, Relayed: r.IntN(2) == 0,
	}
	if r.IntN(2) == 0 {
		l.RenewVia = str()
	}
	if r.IntN(3) > 0 {
		l.Owner = &client.OwnerSettings{Declared: r.IntN(2) == 0}
		for range r.IntN(4) {
			if l.Owner.Settings == nil {
				l.Owner.Settings = map[string]string{}
			}
			l.Owner.Settings[str()+fmt.Sprint(r.IntN(5))] = str()
		}
	}
	a.Lease = l
	return a
}

// TestLeaseStreamAnswerAsEncodingJSON holds the stream's answer lines to
// json.Encoder's, byte for byte.
func TestLeaseStreamAnswerAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 36))
	for i := range 5000 {
		a := randomLeaseAnswer(r)
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(a); err != nil {
			t.Fatal(err)
		}
		if got := appendLeaseStreamAnswer(nil, a); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("answer %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}

func randomLeaseRequest(r *rand.Rand, plain bool) client.LeaseRequest {
	str := func() string {
		if plain {
			return []string{"", "p0-1234", "ws17.cs.cornell.edu", "disk full: /var 98%"}[r.IntN(4)]
		}
		return wireStrings[r.IntN(len(wireStrings))]
	}
	req := client.LeaseRequest{Machine: str(), Token: randomLeaseToken(r), TokenAgeMS: int64(r.IntN(2)) * r.Int64N(1e6), Problem: str(), Restarting: r.IntN(2) == 0}
	f := []float64{0, 0.42, 1.5e-7, 123456.789, 3}
	if r.IntN(2) == 0 {
		req.Load = &f[r.IntN(len(f))]
	}
	if r.IntN(2) == 0 {
		req.OwnLoad = &f[r.IntN(len(f))]
	}
	if r.IntN(2) == 0 {
		s := str()
		req.Asleep = &s
	}
	if r.IntN(2) == 0 {
		n := r.Int64N(1e6)
		req.IdleS = &n
	}
	for range r.IntN(4) {
		req.Running = append(req.Running, client.AttemptRef{JobID: r.Uint64(), Instance: r.IntN(1000), Attempt: r.Uint64N(10)})
	}
	if !plain && r.IntN(4) == 0 {
		req.Facts = &client.Facts{Name: str(), CPUs: 4}
	}
	return req
}

// decodeLeaseRequestSlow is what the stream read before: encoding/json,
// unknown fields refused.
func decodeLeaseRequestSlow(line []byte) (client.LeaseRequest, error) {
	var req client.LeaseRequest
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	return req, err
}

// TestLeaseRequestAsEncodingJSON reads what the client writes: the fast
// path takes every plain renewal, and every renewal reads as
// encoding/json reads it.
func TestLeaseRequestAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 36))
	for i := range 5000 {
		plain := i%2 == 0
		line, err := json.Marshal(randomLeaseRequest(r, plain))
		if err != nil {
			t.Fatal(err)
		}
		var fast client.LeaseRequest
		if plain && !readLeaseRequest(line, &fast) {
			t.Fatalf("renewal %d not on the fast path: %s", i, line)
		}
		checkLeaseRequestRead(t, line)
	}
}

// checkLeaseRequestRead fails t if decodeLeaseRequest reads line other
// than encoding/json does.
func checkLeaseRequestRead(t *testing.T, line []byte) {
	t.Helper()
	want, wantErr := decodeLeaseRequestSlow(line)
	var got client.LeaseRequest
	err := decodeLeaseRequest(line, &got)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", line, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", line, got, want)
	}
}

// FuzzLeaseRequestRead holds the renewal reader to encoding/json on any
// line.
func FuzzLeaseRequestRead(f *testing.F) {
	for _, s := range []string{
		`{"machine":"p0-1"}`,
		`{"machine":"p0-1","load":0.5,"token":{"leadership":3,"issued":17,"pool":2000,"grace_ms":3600000,"lease_ms":3000},"token_age_ms":500}`,
		`{"machine":"a","running":[{"job_id":1,"instance":0,"attempt":2}],"restarting":true,"idle_s":5,"asleep":"","own_load":0}`,
		`{"machine":"a","running":[]}`, `{}`, `{"machine":"a"} trailing`, `{"machine":"a"}{"machine":"b"}`,
		`{ "machine":"a"}`, `{"machine" :"a"}`, `{"Machine":"a"}`, `{"MACHINE":"a"}`, `{"machine":"a","machine":"b"}`,
		`{"token":{"issued":1},"token":{"pool":2}}`, `{"load":null}`, `{"running":null}`, `{"machine":null}`,
		`{"load":01}`, `{"load":-0}`, `{"load":1e400}`, `{"load":1E+2}`, `{"load":.5}`, `{"load":1.}`, `{"load":-}`,
		`{"token_age_ms":1e3}`, `{"token_age_ms":1.0}`, `{"token_age_ms":9223372036854775808}`, `{"token":{"leadership":-1}}`,
		`{"running":[{"instance":9223372036854775807}]}`, `{"restarting":tru}`, `{"restarting":"true"}`, `{"restarting":truex}`,
		`{"machine":"a\"b"}`, `{"machine":"\u0041"}`, `{"machine":"é"}`, "{\"machine\":\"\xff\"}", `{"unknown":1}`,
		`{"facts":{"name":"a","cpus":2}}`, `[]`, `null`, ``, `{"machine":"a",}`, `{,}`, `{"machine":"a"`, `{"running":[{},]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkLeaseRequestRead(t, line)
	})
}

// BenchmarkLeaseStreamWire is one renewal read and its answer written,
// as the stream does it and as encoding/json did.
func BenchmarkLeaseStreamWire(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 36))
	line, _ := json.Marshal(randomLeaseRequest(r, true))
	answer := client.LeaseStreamAnswer{Status: 200, Lease: &client.LeaseResponse{LeaseMS: 8000, RenewMS: 3000, TakesLoad: true,
		TakesAsleep: true, MachineIndex: 123456, Token: &client.LeaseToken{Leadership: 7, Issued: 1764530000123, Pool: 10000,
			GraceMS: 3600000, LeaseMS: 8000}, PoolSize: 10000, Position: 1234, OutageGraceMS: 3600000, Owner: &client.OwnerSettings{}, Streams: true}}
	b.Run("wire", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			var req client.LeaseRequest
			if err := decodeLeaseRequest(line, &req); err != nil {
				b.Fatal(err)
			}
			buf = appendLeaseStreamAnswer(buf[:0], answer)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeLeaseRequestSlow(line); err != nil {
				b.Fatal(err)
			}
			out.Reset()
			_ = enc.Encode(answer)
		}
	})
}
