package session

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Frame types. The client's log carries stdin, its end, window sizes and
// signals; the stub's log carries the job's output and, last, its exit.
const (
	FrameStdin    byte = 1 // bytes for the job's standard input (or terminal)
	FrameStdinEOF byte = 2 // the end of standard input
	FrameResize   byte = 3 // a window size: rows u16, cols u16
	FrameSignal   byte = 4 // a signal name without SIG, for a job without a terminal
	FrameStdout   byte = 5 // the job's standard output (or terminal)
	FrameStderr   byte = 6 // the job's standard error
	FrameExit     byte = 7 // how the job ended: an Exit in JSON; the log's last frame
)

// MaxData is the most bytes one data frame carries; senders split larger
// writes.
const MaxData = 64 << 10

// maxFrame bounds a frame's payload on decoding.
const maxFrame = 1 << 20

// Frame is one item of a session's log.
type Frame struct {
	Type byte
	Data []byte
}

// size is the frame's encoded length.
func (f Frame) size() int { return 5 + len(f.Data) }

// encode returns the frame as the log holds it: type, length, payload.
func (f Frame) encode() []byte {
	b := make([]byte, 5, f.size())
	b[0] = f.Type
	binary.BigEndian.PutUint32(b[1:], uint32(len(f.Data)))
	return append(b, f.Data...)
}

// decodeFrame reads the first frame of b; n is 0 when b holds no whole
// frame yet.
func decodeFrame(b []byte) (f Frame, n int, err error) {
	if len(b) < 5 {
		return Frame{}, 0, nil
	}
	size := binary.BigEndian.Uint32(b[1:])
	if size > maxFrame {
		return Frame{}, 0, fmt.Errorf("session frame: %w: %d bytes", ErrProtocol, size)
	}
	if len(b) < 5+int(size) {
		return Frame{}, 0, nil
	}
	data := append([]byte(nil), b[5:5+size]...)
	return Frame{Type: b[0], Data: data}, 5 + int(size), nil
}

// Resize is a FrameResize for a window of rows by cols.
func Resize(rows, cols uint16) Frame {
	b := make([]byte, 4)
	binary.BigEndian.PutUint16(b, rows)
	binary.BigEndian.PutUint16(b[2:], cols)
	return Frame{Type: FrameResize, Data: b}
}

// WindowSize reads a FrameResize.
func (f Frame) WindowSize() (rows, cols uint16, ok bool) {
	if f.Type != FrameResize || len(f.Data) != 4 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(f.Data), binary.BigEndian.Uint16(f.Data[2:]), true
}

// Exit is how a session's job ended, the payload of a FrameExit.
type Exit struct {
	// Code is the exit status, 128+signal when a signal ended it, 127
	// when it could not start, -1 when it was lost.
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"` // name without SIG
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"` // the limit that ended it
}

// Frame returns e as a FrameExit.
func (e Exit) Frame() Frame {
	b, _ := json.Marshal(e)
	return Frame{Type: FrameExit, Data: b}
}

// ExitOf reads a FrameExit.
func ExitOf(f Frame) (Exit, error) {
	var e Exit
	if err := json.Unmarshal(f.Data, &e); err != nil {
		return Exit{}, fmt.Errorf("session exit: %w", err)
	}
	return e, nil
}
