// Package files packs the files a job moves (copy_in, copy_out) into one
// tar archive and unpacks it, and names an archive by its content: the
// sha256 of its bytes, in hex. The servers keep archives by that name in
// their blob stores; whoever reads one back checks the name against the
// bytes (Verify) before it uses them.
//
// Pack takes files and directories named on the submitting machine and
// puts each under its base name (a directory with everything in it), so
// that copy_in=data/in.txt is in.txt in the exec dir. PackGlobs takes the
// paths and globs of copy_out relative to an exec dir, up to a size
// limit, and says what it could not take and why. Unpack refuses entries
// that would land outside the directory (absolute paths, "..", links
// pointing out) and keeps the executable bits.
package files
