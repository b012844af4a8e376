package files

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/netmgr/netmgr/internal/beneath"
)

// DefaultMaxSize is the default per-job limit on the files a job moves in
// and, separately, out: 64 MiB.
const DefaultMaxSize int64 = 64 << 20

// ErrTooLarge means an archive would pass its size limit.
var ErrTooLarge = errors.New("over the size limit")

// Sum returns the name of data: its sha256 in hex.
func Sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// ValidSum reports whether s has the form of a Sum (64 lower-case hex
// digits), so that it is safe as a file name.
func ValidSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Verify checks that data is the blob named sum.
func Verify(sum string, data []byte) error {
	if got := Sum(data); got != sum {
		return fmt.Errorf("blob %.12s: content hash is %.12s: the bytes are damaged or not that blob", sum, got)
	}
	return nil
}

// Pack archives paths (files or directories; relative ones relative to
// base) each under its base name, and returns the archive and the names
// at its top. It fails when two paths have the same base name, a path
// cannot be read, or the archive would pass max bytes (max <= 0: no
// limit).
func Pack(paths []string, base string, max int64) ([]byte, []string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var names []string
	var total int64
	for _, p := range paths {
		full := p
		if !filepath.IsAbs(p) {
			full = filepath.Join(base, p)
		}
		name := filepath.Base(filepath.Clean(full))
		if name == "/" || name == "." || name == ".." {
			return nil, nil, fmt.Errorf("copy_in %s: names no file", p)
		}
		if slices.Contains(names, name) {
			return nil, nil, fmt.Errorf("copy_in %s: another file is also named %s; each lands in the exec dir under its base name", p, name)
		}
		names = append(names, name)
		err := filepath.WalkDir(full, func(fp string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(full, fp)
			if err != nil {
				return err
			}
			arc := path.Join(name, filepath.ToSlash(rel))
			info, err := d.Info()
			if err != nil {
				return err
			}
			n, err := addEntry(tw, fp, arc, info)
			total += n
			if max > 0 && total > max {
				return fmt.Errorf("%w: the files come to more than %s", ErrTooLarge, Size(max))
			}
			return err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("copy_in %s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, fmt.Errorf("copy_in: close archive: %w", err)
	}
	if max > 0 && int64(buf.Len()) > max {
		return nil, nil, fmt.Errorf("copy_in: %w: the archive is %s, the limit %s", ErrTooLarge, Size(int64(buf.Len())), Size(max))
	}
	return buf.Bytes(), names, nil
}

// addEntry writes the file at fp into tw as arc and returns the bytes of
// content it wrote. Directories and symbolic links are written as such;
// other special files are refused.
func addEntry(tw *tar.Writer, fp, arc string, info fs.FileInfo) (int64, error) {
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = os.Readlink(fp); err != nil {
			return 0, err
		}
	} else if !info.Mode().IsRegular() && !info.IsDir() {
		return 0, fmt.Errorf("%s: not a regular file, directory or link", fp)
	}
	h, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return 0, err
	}
	h.Name = arc
	if info.IsDir() {
		h.Name += "/"
	}
	h.Uname, h.Gname, h.Uid, h.Gid = "", "", 0, 0
	h.ModTime, h.AccessTime, h.ChangeTime = info.ModTime().Truncate(1e9), time0, time0
	h.Format = tar.FormatPAX
	if err := tw.WriteHeader(h); err != nil {
		return 0, err
	}
	if !info.Mode().IsRegular() {
		return 0, nil
	}
	f, err := os.Open(fp)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := io.Copy(tw, f)
	if err != nil {
		return n, fmt.Errorf("%s: %w", fp, err)
	}
	return n, nil
}

// Unpack writes the archive data into dir, which exists, and returns the
// paths it wrote (files and links; relative, slash-separated). An entry
// that would land outside dir is refused. Every entry is written
// through beneath, so no link in dir (one there before, or one an
// earlier entry made) is ever followed: an entry whose path passes
// through a link is refused, and a file is made anew in place of a link
// of its name. Files keep their permission bits, never setuid, setgid
// or sticky.
func Unpack(data []byte, dir string) ([]string, error) {
	d, err := beneath.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("unpack: %w", err)
	}
	defer d.Close()
	tr := tar.NewReader(bytes.NewReader(data))
	var wrote []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return wrote, nil
		}
		if err != nil {
			return wrote, fmt.Errorf("unpack: %w", err)
		}
		name := path.Clean(strings.TrimSuffix(h.Name, "/"))
		if !fs.ValidPath(name) || name == "." {
			return wrote, fmt.Errorf("unpack: entry %q: not a path inside the directory", h.Name)
		}
		if err := d.MkdirAll(path.Dir(name), 0o755); err != nil {
			return wrote, fmt.Errorf("unpack %q: %w", name, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := d.MkdirAll(name, 0o755); err != nil {
				return wrote, fmt.Errorf("unpack %q: %w", name, err)
			}
		case tar.TypeSymlink:
			if filepath.IsAbs(h.Linkname) || !fs.ValidPath(path.Clean(path.Join(path.Dir(name), h.Linkname))) {
				return wrote, fmt.Errorf("unpack: link %q -> %q points outside the directory", name, h.Linkname)
			}
			if err := d.Symlink(h.Linkname, name); err != nil {
				return wrote, fmt.Errorf("unpack %q: %w", name, err)
			}
			wrote = append(wrote, name)
		case tar.TypeReg:
			if err := writeFile(d, name, tr, fs.FileMode(h.Mode).Perm()); err != nil {
				return wrote, fmt.Errorf("unpack %q: %w", name, err)
			}
			wrote = append(wrote, name)
		default:
			return wrote, fmt.Errorf("unpack: entry %q: type %c not supported", h.Name, h.Typeflag)
		}
	}
}

// writeFile writes r to a new file name in d with perm, replacing one
// there.
func writeFile(d *beneath.Dir, name string, r io.Reader, perm fs.FileMode) error {
	f, err := d.Create(name, perm|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Size renders n bytes for messages: "1 GiB", "64 MiB", "10.5 KiB", "12 B".
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
