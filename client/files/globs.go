package files

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"
)

// time0 is the zero time, for header fields an archive leaves out.
var time0 time.Time

// PackGlobs archives, from dir, the files patterns name (paths relative
// to dir, globs allowed; a directory with everything in it), each under
// its path relative to dir, taking files in the order the patterns give
// them until their content would pass max bytes. It returns the archive
// (nil when nothing matched), the paths it holds, and what it did not
// take and why. Only an archive it cannot write is an error.
func PackGlobs(dir string, patterns []string, max int64) (data []byte, kept, lost []string, err error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var total int64
	seen := map[string]bool{}
	for _, pat := range patterns {
		clean := filepath.Clean(pat)
		if filepath.IsAbs(clean) || !fs.ValidPath(filepath.ToSlash(clean)) {
			lost = append(lost, pat+": not a path inside the exec dir")
			continue
		}
		matches, gerr := filepath.Glob(filepath.Join(dir, clean))
		if gerr != nil {
			lost = append(lost, fmt.Sprintf("%s: %v", pat, gerr))
			continue
		}
		if len(matches) == 0 {
			lost = append(lost, pat+": matched nothing")
			continue
		}
		slices.Sort(matches)
		for _, m := range matches {
			werr := filepath.WalkDir(m, func(fp string, d fs.DirEntry, err error) error {
				rel, rerr := filepath.Rel(dir, fp)
				if rerr != nil {
					return rerr
				}
				rel = filepath.ToSlash(rel)
				if err != nil {
					lost = append(lost, fmt.Sprintf("%s: %v", rel, err))
					return nil
				}
				if seen[rel] {
					return nil
				}
				seen[rel] = true
				info, err := d.Info()
				if err != nil {
					lost = append(lost, fmt.Sprintf("%s: %v", rel, err))
					return nil
				}
				if !info.Mode().IsRegular() && !info.IsDir() && info.Mode()&fs.ModeSymlink == 0 {
					lost = append(lost, rel+": not a regular file")
					return nil
				}
				if info.Mode().IsRegular() && max > 0 && total+info.Size() > max {
					lost = append(lost, fmt.Sprintf("%s: %s, over the copy_out limit of %s", rel, Size(info.Size()), Size(max)))
					return nil
				}
				n, aerr := addEntry(tw, fp, rel, info)
				if aerr != nil {
					return aerr
				}
				total += n
				if !info.IsDir() {
					kept = append(kept, rel)
				}
				return nil
			})
			if werr != nil {
				return nil, kept, lost, fmt.Errorf("copy_out %s: %w", pat, werr)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, kept, lost, fmt.Errorf("copy_out: close archive: %w", err)
	}
	if len(kept) == 0 {
		return nil, nil, lost, nil
	}
	return buf.Bytes(), kept, lost, nil
}
