package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// errNoEngine means no Docker engine answers; the suite skips.
var errNoEngine = errors.New("no Docker engine")

// docker runs the docker CLI and Compose.
type docker struct {
	compose []string // "docker compose" or "docker-compose", and its file flags
}

// detectEngine returns errNoEngine, wrapped with the reason, unless a
// Docker engine answers.
func detectEngine(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("%w: docker CLI not found: %v", errNoEngine, err)
	}
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", errNoEngine, firstLine(out, err))
	}
	return nil
}

// detectCompose finds Compose: the docker CLI plugin, else docker-compose.
func detectCompose(ctx context.Context) ([]string, error) {
	if exec.CommandContext(ctx, "docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}, nil
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		if exec.CommandContext(ctx, "docker-compose", "version").Run() == nil {
			return []string{"docker-compose"}, nil
		}
	}
	return nil, errors.New("find compose: neither `docker compose` nor `docker-compose` works")
}

// run runs docker with args and returns its standard output.
func (d *docker) run(ctx context.Context, args ...string) (string, error) {
	return runCmd(ctx, nil, "docker", args...)
}

// composeRun runs Compose with args after the file flags.
func (d *docker) composeRun(ctx context.Context, args ...string) (string, error) {
	all := append(append([]string(nil), d.compose[1:]...), args...)
	return runCmd(ctx, nil, d.compose[0], all...)
}

// runCmd runs one command; a failure names the command and carries the
// first line of what it wrote to standard error.
func runCmd(ctx context.Context, stdin []byte, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %s", name, strings.Join(args, " "), lastLines(stderr.Bytes(), err))
	}
	return stdout.String(), nil
}

// firstLine is the first non-empty line of out, or err's text.
func firstLine(out []byte, err error) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return err.Error()
}

// lastLines is the last few lines of out (where tools put the reason), or
// err's text.
func lastLines(out []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return err.Error()
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return err.Error() + ": " + strings.Join(lines, " | ")
}

// runCombined runs a command and returns its standard output and error
// interleaved.
func runCombined(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}
