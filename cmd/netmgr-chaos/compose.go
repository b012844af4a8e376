package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/netmgr/netmgr/client/pki"
)

// composeData is what compose.yml.tmpl is rendered from.
type composeData struct {
	topology
	Image           string
	Subnet          string
	Join            string
	LedgerContainer string
	APIPort         int
	RaftPort        int
	GossipPort      int
	StubPort        int
	StubGossipPort  int
	// TLSDir is the host directory of the TLS material, mounted read-only
	// at tlsMountDir; empty in the insecure mode.
	TLSDir   string
	TLSMount string
}

// renderCompose renders the Compose file for t; every server and stub
// gets sec's flags (--insecure for a nil sec).
func renderCompose(t topology, subnet string, sec *security) ([]byte, error) {
	text, err := dockerFiles.ReadFile("docker/compose.yml.tmpl")
	if err != nil {
		return nil, fmt.Errorf("render compose file: %w", err)
	}
	funcs := template.FuncMap{"security": func(role, name string) ([]string, error) {
		return sec.flags(pki.Identity{Role: pki.Role(role), Name: name})
	}}
	tmpl, err := template.New("compose").Option("missingkey=error").Funcs(funcs).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("render compose file: %w", err)
	}
	data := composeData{
		topology: t, Image: imageName, Subnet: subnet, Join: t.join(), LedgerContainer: ledgerContainer,
		APIPort: apiPort, RaftPort: raftPort, GossipPort: gossipPort, StubPort: stubPort, StubGossipPort: stubGossipPort,
		TLSMount: tlsMountDir,
	}
	if sec != nil {
		data.TLSDir = sec.dir
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("render compose file: %w", err)
	}
	return buf.Bytes(), nil
}

// writeCompose writes the Compose file into dir and points d at it.
func writeCompose(d *docker, dir string, t topology, subnet string, sec *security) error {
	data, err := renderCompose(t, subnet, sec)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "compose.yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write compose file: %w", err)
	}
	d.compose = append(d.compose, "-p", project, "-f", path)
	return nil
}

// composeUp starts every container.
func composeUp(ctx context.Context, d *docker) error {
	if _, err := d.composeRun(ctx, "up", "-d", "--no-build"); err != nil {
		return fmt.Errorf("start containers: %w", err)
	}
	return nil
}

// checkNoOtherRun fails when containers of the project are running: the
// project name, subnet and ports are fixed, so the composeDown that clears
// what an interrupted run left would take another run's cluster down under
// it (on a shared engine, another engineer's or CI's).
func checkNoOtherRun(ctx context.Context, d *docker) error {
	out, err := d.run(ctx, "ps", "--filter", "label=com.docker.compose.project="+project, "--format", "{{.Names}}")
	if err != nil {
		return fmt.Errorf("look for another chaos run: %w", err)
	}
	if names := strings.Fields(out); len(names) > 0 {
		return fmt.Errorf("another chaos run seems to be in progress: %d containers of Compose project %s are running (%s); wait for it to end, or remove them with: docker rm -f %s",
			len(names), project, strings.Join(names, ", "), strings.Join(names, " "))
	}
	return nil
}

// composeDown removes the containers, the network and the volumes.
func composeDown(ctx context.Context, d *docker) error {
	if _, err := d.composeRun(ctx, "down", "-v", "--remove-orphans", "-t", "2"); err != nil {
		return fmt.Errorf("remove containers: %w", err)
	}
	return nil
}
