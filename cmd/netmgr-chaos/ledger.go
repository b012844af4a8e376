package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
)

// Ledger record kinds, as docker/job.sh writes them.
const (
	recStart = "start"
	recBeat  = "beat"
	recEnd   = "end"
)

// record is one line of a ledger file:
//
//	KIND JOB INSTANCE ATTEMPT HOST TIME [STATUS]
//
// TIME is seconds since boot, the clock all containers share.
type record struct {
	Kind     string
	Job      uint64
	Instance int
	Attempt  uint64
	Host     string
	T        float64
	Status   string // end only: the exit status the script chose
	File     string
	Line     int
}

// parseLedgerFile reads one ledger file, named JOB.INSTANCE. Lines it
// cannot read are returned as problems: an append-only ledger written one
// line per write never has any.
func parseLedgerFile(name string, data []byte) ([]record, []string) {
	var recs []record
	var problems []string
	text := string(data)
	if text != "" && !strings.HasSuffix(text, "\n") {
		problems = append(problems, fmt.Sprintf("%s: last line is not terminated", name))
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" && text == "" {
			break
		}
		r, err := parseRecord(line)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %v: %q", name, i+1, err, line))
			continue
		}
		r.File, r.Line = name, i+1
		if want := fmt.Sprintf("%d.%d", r.Job, r.Instance); want != name {
			problems = append(problems, fmt.Sprintf("%s:%d: record of %s in the wrong file", name, i+1, want))
		}
		recs = append(recs, r)
	}
	return recs, problems
}

// parseRecord reads one ledger line.
func parseRecord(line string) (record, error) {
	f := strings.Fields(line)
	if len(f) < 6 {
		return record{}, errors.New("want KIND JOB INSTANCE ATTEMPT HOST TIME")
	}
	r := record{Kind: f[0], Host: f[4]}
	switch r.Kind {
	case recStart, recBeat, recEnd:
	default:
		return record{}, fmt.Errorf("unknown kind %q", r.Kind)
	}
	var err error
	if r.Job, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return record{}, fmt.Errorf("job: %w", err)
	}
	if r.Instance, err = strconv.Atoi(f[2]); err != nil {
		return record{}, fmt.Errorf("instance: %w", err)
	}
	if r.Attempt, err = strconv.ParseUint(f[3], 10, 64); err != nil {
		return record{}, fmt.Errorf("attempt: %w", err)
	}
	if r.T, err = strconv.ParseFloat(f[5], 64); err != nil {
		return record{}, fmt.Errorf("time: %w", err)
	}
	if r.Kind == recEnd {
		if len(f) < 7 {
			return record{}, errors.New("end record without a status")
		}
		r.Status = f[6]
	}
	return r, nil
}

// readLedgerTar reads every ledger file from a tar stream of the ledger
// directory.
func readLedgerTar(r io.Reader) ([]record, []string, error) {
	tr := tar.NewReader(r)
	var recs []record
	var problems []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return recs, problems, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read ledger: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, nil, fmt.Errorf("read ledger %s: %w", h.Name, err)
		}
		rs, ps := parseLedgerFile(path.Base(h.Name), data)
		recs = append(recs, rs...)
		problems = append(problems, ps...)
	}
}
