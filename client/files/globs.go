package files

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/netmgr/netmgr/internal/beneath"
)

// time0 is the zero time, for header fields an archive leaves out.
var time0 time.Time

// MaxOutputFiles is the most files and directories one attempt's copy_out
// takes; what its patterns match past that is left out and said so.
const MaxOutputFiles = 10000

// PackGlobs archives, from the exec dir dir, the files patterns name
// (paths relative to dir, globs allowed in any component; a directory
// with everything in it), each under its path relative to dir, taking
// them in the order the patterns give them until their content would
// pass max bytes or their number MaxOutputFiles. It returns the archive
// (nil when nothing matched), the paths it holds, and what it did not
// take and why. Only an archive it cannot write is an error.
//
// The job owns dir and its owner may be root's adversary, so every file
// is reached through beneath: no link is followed (a link is left out,
// as is a pattern that passes through one), only regular files that
// the directory's owner could read are read, their size is taken from
// the open file (a huge sparse file is refused by it, unread), and a
// FIFO or socket is left out without blocking.
func PackGlobs(dir string, patterns []string, max int64) (data []byte, kept, lost []string, err error) {
	d, err := beneath.Open(dir)
	if err != nil {
		return nil, nil, []string{"all files: " + err.Error()}, nil
	}
	defer d.Close()
	p := &outPacker{d: d, max: max, seen: map[string]bool{}}
	p.tw = tar.NewWriter(&p.buf)
	for _, pat := range patterns {
		if err := p.pattern(pat); err != nil {
			return nil, p.kept, p.lost, fmt.Errorf("copy_out %s: %w", pat, err)
		}
	}
	if err := p.tw.Close(); err != nil {
		return nil, p.kept, p.lost, fmt.Errorf("copy_out: close archive: %w", err)
	}
	if len(p.kept) == 0 {
		return nil, nil, p.lost, nil
	}
	return p.buf.Bytes(), p.kept, p.lost, nil
}

// outPacker is one PackGlobs's state.
type outPacker struct {
	d     *beneath.Dir
	max   int64
	buf   bytes.Buffer
	tw    *tar.Writer
	total int64 // bytes of content taken
	count int   // entries taken
	full  int   // entries left out for the count limit
	seen  map[string]bool
	kept  []string
	lost  []string
}

// pattern takes what one copy_out pattern names.
func (p *outPacker) pattern(pat string) error {
	clean := filepath.ToSlash(filepath.Clean(pat))
	if filepath.IsAbs(pat) || !fs.ValidPath(clean) {
		p.lost = append(p.lost, beneath.Printable(pat)+": not a path inside the exec dir")
		return nil
	}
	matches, lost := p.glob(clean)
	p.lost = append(p.lost, lost...)
	if len(matches) == 0 && len(lost) == 0 {
		p.lost = append(p.lost, beneath.Printable(pat)+": matched nothing")
		return nil
	}
	full := p.full
	for _, m := range matches {
		if p.count >= MaxOutputFiles {
			// Full: count what is left out without looking into it.
			if !p.seen[m] {
				p.seen[m] = true
				p.full++
			}
			continue
		}
		if err := p.d.WalkDir(m, p.take); err != nil {
			return err
		}
	}
	if n := p.full - full; n > 0 {
		p.lost = append(p.lost, fmt.Sprintf("%s: %d more files not kept: over the copy_out limit of %d files", beneath.Printable(pat), n, MaxOutputFiles))
	}
	return nil
}

// glob returns the paths pattern pat matches, sorted, through no link;
// a component that is a link is reported in lost.
func (p *outPacker) glob(pat string) (matches, lost []string) {
	paths := []string{"."}
	for _, comp := range strings.Split(pat, "/") {
		var next []string
		for _, dir := range paths {
			if !hasMeta(comp) {
				next = append(next, path.Join(dir, comp))
				continue
			}
			names, err := p.d.ReadDir(dir, 0)
			if err != nil {
				lost = append(lost, beneath.Printable(dir)+": "+reason(err))
				continue
			}
			for _, e := range names {
				if ok, _ := path.Match(comp, e.Name()); ok {
					next = append(next, path.Join(dir, e.Name()))
				}
			}
		}
		paths = next
	}
	for _, m := range paths {
		if _, err := p.d.Lstat(m); err == nil {
			matches = append(matches, m)
		} else if !errors.Is(err, fs.ErrNotExist) {
			lost = append(lost, beneath.Printable(m)+": "+reason(err))
		}
	}
	return matches, lost
}

// hasMeta reports whether a path component is a pattern.
func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// take is the WalkDir function: it archives one file or directory.
func (p *outPacker) take(rel string, e fs.DirEntry, err error) error {
	show := beneath.Printable(rel)
	if err != nil {
		p.lost = append(p.lost, show+": "+reason(err))
		return nil
	}
	if p.seen[rel] {
		return nil
	}
	p.seen[rel] = true
	if p.count >= MaxOutputFiles {
		p.full++
		return nil
	}
	typ := e.Type()
	switch {
	case typ&fs.ModeSymlink != 0:
		p.lost = append(p.lost, show+": a symbolic link, not kept (copy_out keeps regular files and directories)")
		return nil
	case e.IsDir():
		info, err := e.Info()
		if err != nil {
			p.lost = append(p.lost, show+": "+reason(err))
			return nil
		}
		p.count++
		return p.header(rel+"/", info, 0)
	case !typ.IsRegular():
		p.lost = append(p.lost, show+": "+beneath.Kind(typ)+", not a regular file")
		return nil
	}
	f, info, err := p.d.OpenRegular(rel)
	if err != nil {
		p.lost = append(p.lost, show+": "+reason(err))
		return nil
	}
	defer f.Close()
	if p.max > 0 && p.total+info.Size() > p.max {
		p.lost = append(p.lost, fmt.Sprintf("%s: %s, over the copy_out limit of %s", show, Size(info.Size()), Size(p.max)))
		return nil
	}
	content, err := io.ReadAll(io.LimitReader(f, info.Size()+1))
	if err != nil {
		p.lost = append(p.lost, show+": "+reason(err))
		return nil
	}
	if int64(len(content)) != info.Size() {
		p.lost = append(p.lost, show+": it changed while it was read")
		return nil
	}
	if err := p.header(rel, info, int64(len(content))); err != nil {
		return err
	}
	if _, err := p.tw.Write(content); err != nil {
		return fmt.Errorf("%s: %w", show, err)
	}
	p.count++
	p.total += int64(len(content))
	p.kept = append(p.kept, rel)
	return nil
}

// header writes the archive header of rel (a directory's ends in "/").
func (p *outPacker) header(rel string, info fs.FileInfo, size int64) error {
	h := &tar.Header{
		Name:     rel,
		Mode:     int64(info.Mode().Perm()),
		Size:     size,
		ModTime:  info.ModTime().Truncate(1e9),
		Typeflag: tar.TypeReg,
		Format:   tar.FormatPAX,
	}
	if info.IsDir() {
		h.Typeflag = tar.TypeDir
	}
	if err := p.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%s: %w", beneath.Printable(rel), err)
	}
	return nil
}

// reason is err's message without the path beneath repeats.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
