package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/spec"
)

// errNothingUnreserved means unreserve was told which reservation to end
// and none of the user's matched.
var errNothingUnreserved = errors.New("no reservation of yours matched; netstatus -r lists them")

func reserveCommand() *cli.Command {
	return &cli.Command{
		Name:  "reserve",
		Usage: "set machines aside so that only your jobs run on them",
		UsageText: "reserve [options] MACHINE...\n" +
			"reserve -n N [--require SPEC] [options]\n" +
			"netmgr reserve [options] MACHINE...",
		Description: "Reserves the machines named, or any N machines that meet SPEC, for you: while\n" +
			"the reservation is in force the scheduler places only your jobs on them (jobs\n" +
			"already running there are left alone). For example:\n\n" +
			"   reserve flute viola\n" +
			"   reserve -n 2 --require 'keys={mathlab},mem>10' --from 14:00 --for 2h\n" +
			"   reserve flute --from +30m --for 90m\n\n" +
			"It prints the reservation:\n\n" +
			"   reservation 3: flute, viola for root from 14:00 until 16:00\n\n" +
			"SPEC holds only what a machine must have, in the job language: keys={K,...},\n" +
			"comparisons such as mem>10 or rating>=8, mounts={/PATH,...}, machines={NAME,...}.\n" +
			"--from is when the window starts (default now): an RFC 3339 time such as\n" +
			"2026-01-02T14:00:00+01:00, HH:MM in local time (today, or tomorrow once that\n" +
			"time has passed), or +DURATION from now such as +30m. --for is how long it\n" +
			"lasts (default until unreserve). Expired reservations end by themselves;\n" +
			"netstatus -r lists them and netstatus -m shows who holds each machine.\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "n", DefaultText: "the machines named", Usage: "reserve `N` machines the servers pick"},
			&cli.StringFlag{Name: "require", Usage: "with -n: the machines must meet `SPEC`, e.g. 'keys={mathlab},mem>10'"},
			&cli.StringFlag{Name: "from", DefaultText: "now", Usage: "start at `TIME`: RFC 3339, HH:MM (local) or +DURATION"},
			&cli.DurationFlag{Name: "for", DefaultText: "until unreserved", Usage: "last `DURATION`, e.g. 2h or 90m"},
		}, clientFlags()...),
		Action: runReserve,
	}
}

func unreserveCommand() *cli.Command {
	return &cli.Command{
		Name:  "unreserve",
		Usage: "end reservations you made",
		UsageText: "unreserve [--id N] [options] [MACHINE...]\n" +
			"netmgr unreserve [--id N] [options] [MACHINE...]",
		Description: "Ends your reservations: the one with --id N, every one that holds one of the\n" +
			"machines named, or, when neither is given, all of yours. The machines take\n" +
			"other users' jobs again at once. It prints each reservation it ended:\n\n" +
			"   $ unreserve flute\n" +
			"   ended reservation 3: flute, viola for root from 14:00 until 16:00\n\n" +
			"It exits 1 when --id or MACHINE was given and no reservation of yours matched.\n\n" +
			retryNote,
		Flags: append([]cli.Flag{
			&cli.Uint64Flag{Name: "id", Usage: "end reservation `N` (netstatus -r lists them)"},
		}, clientFlags()...),
		Action: runUnreserve,
	}
}

// machineArgs returns the MACHINE arguments, refusing options after them
// and repeats.
func machineArgs(cCtx *cli.Context) ([]string, error) {
	args := cCtx.Args().Slice()
	seen := map[string]bool{}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return nil, usagef("options go before MACHINE, got %q after it", a)
		}
		if a == "" {
			return nil, usagef("empty MACHINE name")
		}
		if seen[a] {
			return nil, usagef("machine %s named twice", a)
		}
		seen[a] = true
	}
	return args, nil
}

// reserveRequest builds the request from the command line, with now the
// time --from is read against.
func reserveRequest(cCtx *cli.Context, now time.Time) (client.ReserveRequest, error) {
	var req client.ReserveRequest
	machines, err := machineArgs(cCtx)
	if err != nil {
		return req, err
	}
	n := cCtx.Int("n")
	switch {
	case cCtx.IsSet("n") && n <= 0:
		return req, usagef("-n must be a positive number of machines, got %d", n)
	case n > 0 && len(machines) > 0:
		return req, usagef("give MACHINE... or -n N, not both")
	case n == 0 && len(machines) == 0:
		return req, usagef("missing MACHINE... or -n N")
	case cCtx.IsSet("require") && n == 0:
		return req, usagef("--require goes with -n N; to reserve named machines just name them")
	}
	req.Machines, req.N = machines, n
	if cCtx.IsSet("require") {
		if req.Require, err = parseRequire(cCtx.String("require")); err != nil {
			return req, err
		}
	}
	if cCtx.IsSet("from") {
		if req.From, err = parseFrom(cCtx.String("from"), now); err != nil {
			return req, err
		}
	}
	if cCtx.IsSet("for") {
		if req.For = cCtx.Duration("for"); req.For <= 0 {
			return req, usagef("--for must be a positive duration, got %v", req.For)
		}
	}
	return req, nil
}

func runReserve(cCtx *cli.Context) error {
	now := time.Now()
	req, err := reserveRequest(cCtx, now)
	if err != nil {
		return err
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	r, err := c.Reserve(cCtx.Context, req)
	if err != nil {
		what := strings.Join(req.Machines, ", ")
		if req.N > 0 {
			what = strconv.Itoa(req.N) + " machines"
			if req.N == 1 {
				what = "1 machine"
			}
		}
		return fmt.Errorf("reserve %s: %w", what, err)
	}
	_, err = fmt.Fprintln(cCtx.App.Writer, describeReservation(r, now))
	return err
}

func runUnreserve(cCtx *cli.Context) error {
	machines, err := machineArgs(cCtx)
	if err != nil {
		return err
	}
	req := client.UnreserveRequest{ID: cCtx.Uint64("id"), Machines: machines}
	if cCtx.IsSet("id") && req.ID == 0 {
		return usagef("--id must be a reservation id, 1 or more")
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	resp, err := c.Unreserve(cCtx.Context, req)
	if err != nil && !errors.Is(err, client.ErrNotFound) { // 404: nothing of the user's matched
		return fmt.Errorf("end reservations: %w", err)
	}
	w := cCtx.App.Writer
	if len(resp.Ended) == 0 {
		if req.ID != 0 || len(req.Machines) > 0 {
			return errNothingUnreserved
		}
		_, err := fmt.Fprintln(w, "you hold no reservations")
		return err
	}
	now := time.Now()
	for _, r := range sortedReservations(resp.Ended) {
		if _, err := fmt.Fprintln(w, "ended "+describeReservation(r, now)); err != nil {
			return err
		}
	}
	return nil
}

// clockRE matches HH:MM.
var clockRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([01]?[0-9]|2[0-3]):([0-5][0-9])$`)
})

// parseFrom reads --from against now: "now"; "+30m" (a duration after
// now); "14:00" (HH:MM in now's location, today, or tomorrow when that
// time has passed); or an RFC 3339 time, which must not be in the past.
func parseFrom(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "+"):
		d, err := time.ParseDuration(s[1:])
		if err != nil || d < 0 {
			return time.Time{}, usagef("--from: %q is not +DURATION such as +30m or +2h", s)
		}
		return now.Add(d), nil
	}
	if m := clockRE().FindStringSubmatch(s); m != nil {
		hh, _ := strconv.Atoi(m[1])
		mm, _ := strconv.Atoi(m[2])
		y, mo, d := now.Date()
		t := time.Date(y, mo, d, hh, mm, 0, 0, now.Location())
		if t.Before(now) {
			t = time.Date(y, mo, d+1, hh, mm, 0, 0, now.Location())
		}
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usagef("--from: %q is not a time: write HH:MM (local), +DURATION such as +30m, or RFC 3339 such as 2026-01-02T14:00:00Z", s)
	}
	if t.Before(now) {
		return time.Time{}, usagef("--from: %s is in the past", s)
	}
	return t, nil
}

// requireOptions are the options of the job language a --require SPEC may
// hold: what a machine must have.
const requireOptions = "keys, comparisons such as mem>10, mounts and machines"

// parseRequire reads --require: a job-spec string of requirements only.
// The language insists on binaries, which a reservation has none of, so a
// spec that lacks them is read again with a placeholder added at its end,
// where it cannot move the positions of errors in the user's text.
func parseRequire(s string) (*client.JobSpec, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usagef("--require: empty SPEC; give %s, e.g. 'keys={mathlab},mem>10'", requireOptions)
	}
	_, err := spec.Parse(s)
	var js client.JobSpec
	var se *spec.Error
	switch {
	case err == nil:
		return nil, usagef("--require: binaries is not a requirement; give only %s", requireOptions)
	case errors.As(err, &se) && se.Option == "binaries" && strings.HasSuffix(se.Msg, "required but missing"):
		if js, err = spec.Parse(s + ",binaries={*=/}"); err != nil {
			return nil, usagef("--require: %w", err)
		}
	default:
		return nil, usagef("--require: %w", err)
	}
	if opt := nonRequirement(js); opt != "" {
		return nil, usagef("--require: %s is not a requirement; give only %s", opt, requireOptions)
	}
	return &client.JobSpec{Keys: js.Keys, Requirements: js.Requirements, Mounts: js.Mounts, Machines: js.Machines}, nil
}

// nonRequirement names the first option set in js, other than binaries,
// that says how to run a job rather than what a machine must have; "" when
// there is none.
func nonRequirement(js client.JobSpec) string {
	set := []struct {
		opt string
		on  bool
	}{
		{"symb_name", js.Name != ""}, {"min", js.Min != 0}, {"args", len(js.Args) > 0}, {"env", len(js.Env) > 0},
		{"unique", js.Unique}, {"gang", js.Gang}, {"max_per_machine", js.MaxPerMachine != 0}, {"load", js.Load != 0},
		{"memory", js.MemoryMB != 0}, {"queue", js.Queue != ""}, {"restart", js.Restart != ""},
		{"max_restarts", js.MaxRestarts != 0}, {"mail", js.Mail != ""}, {"mail_type", len(js.MailType) > 0}, {"cron", js.Cron != ""},
		{"catchup", js.Catchup != ""}, {"overlap", js.Overlap != ""},
		{"after", len(js.After) > 0}, {"afterok", len(js.AfterOK) > 0}, {"afternotok", len(js.AfterNotOK) > 0}, {"copy_in", len(js.CopyIn) > 0}, {"copy_out", len(js.CopyOut) > 0},
	}
	for _, o := range set {
		if o.on {
			return o.opt
		}
	}
	return ""
}
