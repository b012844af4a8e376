package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

// batchHelp is the part of netexec's help about --batch.
var batchHelp = "netexec --batch FILE submits many jobs in one request. Each line of FILE is\n" +
	"what would follow netexec on a command line for one job: its options, then\n" +
	"BINARY [ARG...] or a spec string. Its words are split as a shell splits them,\n" +
	"with '...', \"...\" and \\ quoting, and nothing else: no variables, globs or\n" +
	"pipes. Blank lines and lines starting with # are skipped; FILE - reads standard\n" +
	"input. At most " + strconv.Itoa(client.MaxBatchJobs) + " jobs:\n\n" +
	"   # jobs.txt\n" +
	"   -n 4 --name render /usr/local/bin/render --frames 1-100\n" +
	"   --keys fpu /usr/local/bin/fit 'model A'\n" +
	"   'binaries={*=/bin/sh},args={-c,\"echo hi\"},symb_name=hello'\n\n" +
	"   netexec --batch jobs.txt\n\n" +
	"Every line is checked before anything is sent, and the servers check every job\n" +
	"before creating any: an error names its line, and no job is submitted. netexec\n" +
	"then prints one line per job, in the file's order, as for one job. The options\n" +
	"that reach the servers (--addr, --socket, ...) go on the command line; --wait\n" +
	"does not go with --batch. The jobs with no cron schedule, --chdir or dependency\n" +
	"are created together; a dependency must name a job submitted before the batch.\n" +
	"(Several instances of one job need no batch: -n N is one submit.)"

// errBatchInvalid marks a --batch file with lines in error; they were
// printed.
var errBatchInvalid = errors.New("no job submitted")

// runBatch is netexec --batch FILE: every line's job, in one request.
func runBatch(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("--batch takes the jobs from its FILE, not from the command line: got %q", cCtx.Args().First())
	}
	for _, f := range jobFlags() {
		if name := f.Names()[0]; cCtx.IsSet(name) {
			return usagef("--%s goes on a line of the --batch file, not on the command line", name)
		}
	}
	if cCtx.IsSet("wait") {
		return usagef("--wait does not go with --batch")
	}
	file := cCtx.String("batch")
	text, err := readBatchFile(file, os.Stdin)
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("resolve relative paths: %w", err)
	}
	name := file
	if file == "-" {
		name = "standard input"
	}
	reqs, lines, errs := parseBatch(name, text, cwd)
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintf(cCtx.App.ErrWriter, "netexec: %s\n", printableLines(e.Error()))
		}
		return &usageError{err: fmt.Errorf("%s: %d lines in error: %w", name, len(errs), errBatchInvalid)}
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	resps, err := c.SubmitBatch(cCtx.Context, reqs)
	if err != nil {
		return fmt.Errorf("%s: %w%s", name, err, batchLineHint(err, lines))
	}
	for _, r := range resps {
		writeSubmitted(cCtx.App.Writer, cCtx.App.ErrWriter, r)
	}
	return nil
}

// readBatchFile reads the --batch file, or stdin for "-".
func readBatchFile(file string, stdin io.Reader) (string, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return "", fmt.Errorf("read --batch file: %w", err)
	}
	return string(data), nil
}

// parseBatch turns the text of a --batch file, called name in errors,
// into one submit request per job line, resolving relative paths against
// cwd. It returns the requests, the line number of each, and every
// line's error ("FILE:LINE: ..."); the requests are usable only when
// there are no errors.
func parseBatch(name, text, cwd string) (reqs []client.SubmitRequest, lines []int, errs []error) {
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		req, err := parseBatchLine(trimmed, cwd)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, n, err))
			continue
		}
		reqs = append(reqs, req)
		lines = append(lines, n)
	}
	if len(reqs) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no job lines", name))
	}
	if len(reqs)+len(errs) > client.MaxBatchJobs {
		errs = append(errs, fmt.Errorf("%s: %d job lines, at most %d in one batch", name, len(reqs)+len(errs), client.MaxBatchJobs))
	}
	return reqs, lines, errs
}

// parseBatchLine parses one job line of a --batch file with netexec's job
// flags, as netexec would parse it on its command line.
func parseBatchLine(line, cwd string) (client.SubmitRequest, error) {
	words, err := splitWords(line)
	if err != nil {
		return client.SubmitRequest{}, err
	}
	var req client.SubmitRequest
	app := &cli.App{
		Name:     "netexec",
		Flags:    lightFlags(jobFlags()),
		HideHelp: true,
		Writer:   io.Discard, ErrWriter: io.Discard,
		Action: func(lc *cli.Context) error {
			req, err = jobRequest(lc, cwd)
			if err == nil && len(req.Spec.CopyIn) > 0 {
				err = usagef("copy_in and --copy-binary are not taken in a --batch file: submit a job that sends files with netexec alone")
			}
			return err
		},
	}
	setCommon(app)
	app.EnableBashCompletion = false
	if err := app.Run(append([]string{"netexec"}, words...)); err != nil {
		return client.SubmitRequest{}, err
	}
	return req, nil
}

// splitWords splits a line into words as a POSIX shell would, with
// quoting and no expansion: blanks separate words; '...' keeps what it
// holds; "..." keeps what it holds but a backslash before ", \, $ or `;
// outside quotes a backslash keeps the next character.
func splitWords(line string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\\':
			if i+1 == len(line) {
				return nil, fmt.Errorf("a backslash ends the line")
			}
			i++
			cur.WriteByte(line[i])
			inWord = true
		case ch == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated ' quote")
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case ch == '"':
			closed := false
			for i++; i < len(line); i++ {
				c := line[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
					c = line[i]
				}
				cur.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("unterminated \" quote")
			}
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// batchLineHint adds, to a server's refusal of a batch's job N, the line
// of the file that job came from.
func batchLineHint(err error, lines []int) string {
	var ae *client.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	var n int
	if i := strings.Index(ae.Message, "job "); i >= 0 {
		if _, serr := fmt.Sscanf(ae.Message[i:], "job %d:", &n); serr == nil && n >= 1 && n <= len(lines) {
			return fmt.Sprintf(" (job %d is line %d)", n, lines[n-1])
		}
	}
	return ""
}
