package spec

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// Checkpoints in the job language (netexec's --checkpoint and
// --checkpoint-exit take the same values):
//
//	checkpoint=state          a file or directory of the exec dir, kept
//	checkpoint={a.dat,state}  when an attempt exits with
//	checkpoint_exit=85        this code (1 to 255), and restored into
//	                          every later attempt's exec dir

// Option names of checkpoints.
const (
	optCheckpoint     = "checkpoint"
	optCheckpointExit = "checkpoint_exit"
)

func init() {
	options[optCheckpoint] = optionDef{value: wordOrList(checkCheckpointPath, "file", func(s *client.JobSpec, v []string) { s.Checkpoint = v })}
	options[optCheckpointExit] = optionDef{value: scalarOption(errMessage(ParseCheckpointExit), func(s *client.JobSpec, n int) { s.CheckpointExit = n })}
	listOptions[optCheckpoint] = listOption{check: checkCheckpointPath, item: "file"}
}

// ParseCheckpointExit reads a checkpoint exit code: 1 to 255.
func ParseCheckpointExit(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 255 || strings.HasPrefix(v, "+") {
		return 0, fmt.Errorf("%q is not an exit code from 1 to 255", v)
	}
	return n, nil
}

// checkCheckpointPath checks a checkpoint path: as copy_out's, and
// inside the exec dir (relative, not through ..).
func checkCheckpointPath(v string) string {
	if msg := checkCopy(v); msg != "" {
		return msg
	}
	c := path.Clean(v)
	if path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Sprintf("%q is not a path inside the exec dir, relative to it", v)
	}
	return ""
}

// checkpointPair refuses checkpoint= without checkpoint_exit= and the
// reverse, at the option given.
func (p *parser) checkpointPair(spec *client.JobSpec) error {
	if off, ok := p.seen[optCheckpoint]; ok && spec.CheckpointExit == 0 {
		return p.errAt(off, optCheckpoint, "needs option %s (the exit code that asks to keep the files)", optCheckpointExit)
	}
	if off, ok := p.seen[optCheckpointExit]; ok && len(spec.Checkpoint) == 0 {
		return p.errAt(off, optCheckpointExit, "needs option %s (the files to keep)", optCheckpoint)
	}
	return nil
}

// checkCheckpoint checks the checkpoint options of a spec built by other
// means than Parse: both or neither, and the paths as copy_out's.
func checkCheckpoint(s client.JobSpec) error {
	switch {
	case len(s.Checkpoint) == 0 && s.CheckpointExit == 0:
		return nil
	case len(s.Checkpoint) == 0:
		return fmt.Errorf("option %s: needs option %s (the files to keep)", optCheckpointExit, optCheckpoint)
	case s.CheckpointExit == 0:
		return fmt.Errorf("option %s: needs option %s (the exit code that asks to keep them)", optCheckpoint, optCheckpointExit)
	case s.CheckpointExit < 1 || s.CheckpointExit > 255:
		return fmt.Errorf("option %s: %d is not an exit code from 1 to 255", optCheckpointExit, s.CheckpointExit)
	}
	return validateList(optCheckpoint, s.Checkpoint)
}

// formatCheckpoint writes the checkpoint options of s, as Format does.
func formatCheckpoint(s client.JobSpec, add func(opt, v string)) {
	if len(s.Checkpoint) > 0 {
		add(optCheckpoint, formatList(s.Checkpoint))
	}
	if s.CheckpointExit != 0 {
		add(optCheckpointExit, strconv.Itoa(s.CheckpointExit))
	}
}
