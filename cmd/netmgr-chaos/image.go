package main

import (
	"context"
	"debug/elf"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// dockerFiles are the Dockerfile, the Compose template and the scripts
// the image carries.
//
//go:embed docker
var dockerFiles embed.FS

// buildImage assembles a build context (the embedded files plus the two
// static binaries) in a temporary directory and builds imageName from it.
func buildImage(ctx context.Context, d *docker, netmgrBin, busyboxBin string) error {
	for _, b := range []string{netmgrBin, busyboxBin} {
		if err := checkStatic(b); err != nil {
			return fmt.Errorf("build image: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "netmgr-chaos-image-")
	if err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	defer os.RemoveAll(dir)
	sub, err := fs.Sub(dockerFiles, "docker")
	if err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	if err := os.CopyFS(dir, sub); err != nil {
		return fmt.Errorf("build image: copy files: %w", err)
	}
	for dst, src := range map[string]string{"netmgr": netmgrBin, "busybox": busyboxBin} {
		if err := copyFile(src, filepath.Join(dir, dst)); err != nil {
			return fmt.Errorf("build image: %w", err)
		}
	}
	if _, err := d.run(ctx, "build", "-q", "-t", imageName, dir); err != nil {
		return fmt.Errorf("build image: %w", err)
	}
	return nil
}

// checkStatic fails unless path is an ELF executable with no program
// interpreter, i.e. one that runs in a FROM scratch image.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("check %s is a static binary: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the image is FROM scratch and needs a static binary (CGO_ENABLED=0, busybox-static)", path)
		}
	}
	return nil
}

// copyFile copies src to dst, executable.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
