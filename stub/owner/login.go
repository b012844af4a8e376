package owner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// utmp record types (utmp(5)) this package reads.
const (
	UtmpUserProcess = 7 // a user's login session
	UtmpDeadProcess = 8 // a session that ended
)

// UtmpRecordSize is the size of one record of glibc's utmp on Linux (the
// same on 32- and 64-bit: its times are 32-bit there).
const UtmpRecordSize = 384

// UtmpRecord is one utmp entry, with the fields this package reads, laid
// out as glibc writes it (little-endian on the hosts netmgr runs on).
type UtmpRecord struct {
	Type int16
	PID  int32
	Line string // the terminal: "tty1", "pts/0", ":0"
	User string
	Host string
	Time time.Time // second resolution (and microseconds)
}

// utmpWire is the byte layout of struct utmp.
type utmpWire struct {
	Type    int16
	_       [2]byte
	PID     int32
	Line    [32]byte
	ID      [4]byte
	User    [32]byte
	Host    [256]byte
	Exit    [2]int16
	Session int32
	Sec     int32
	Usec    int32
	Addr    [4]int32
	_       [20]byte
}

// MarshalUtmp returns the records as a utmp file holds them; tests write
// sessions with it.
func MarshalUtmp(recs ...UtmpRecord) []byte {
	var b bytes.Buffer
	for _, r := range recs {
		var w utmpWire
		w.Type, w.PID = r.Type, r.PID
		copy(w.Line[:], r.Line)
		copy(w.User[:], r.User)
		copy(w.Host[:], r.Host)
		if !r.Time.IsZero() {
			w.Sec, w.Usec = int32(r.Time.Unix()), int32(r.Time.Nanosecond()/1000)
		}
		_ = binary.Write(&b, binary.LittleEndian, &w) // a bytes.Buffer does not fail
	}
	return b.Bytes()
}

// ParseUtmp reads the records of a utmp file's contents.
func ParseUtmp(data []byte) ([]UtmpRecord, error) {
	if len(data)%UtmpRecordSize != 0 {
		return nil, fmt.Errorf("parse utmp: %d bytes: %w", len(data), ErrBadUtmp)
	}
	out := make([]UtmpRecord, 0, len(data)/UtmpRecordSize)
	for off := 0; off < len(data); off += UtmpRecordSize {
		var w utmpWire
		if err := binary.Read(bytes.NewReader(data[off:off+UtmpRecordSize]), binary.LittleEndian, &w); err != nil {
			return nil, fmt.Errorf("parse utmp: %w", err)
		}
		out = append(out, UtmpRecord{
			Type: w.Type, PID: w.PID, Line: cString(w.Line[:]), User: cString(w.User[:]), Host: cString(w.Host[:]),
			Time: time.Unix(int64(w.Sec), int64(w.Usec)*1000),
		})
	}
	return out, nil
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// loginDetector puts the machine to sleep while a session is open and
// until hold after the last one closed.
type loginDetector struct {
	path string
	hold time.Duration
	// lastOpen is when a session was last seen open; the zero time
	// before any. active is the later of it and the last logout.
	lastOpen, active time.Time
}

// reasonLogin is the verdict while a session is open or was within hold.
const reasonLogin = "console login"

// check returns reasonLogin while a live USER_PROCESS entry is in the
// file, or the last one was seen or logged out less than hold ago. A
// missing file means no sessions.
func (d *loginDetector) check(now time.Time) (string, error) {
	data, err := os.ReadFile(d.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read utmp: %w", err)
	}
	recs, err := ParseUtmp(data)
	if err != nil {
		return "", err
	}
	var lastLogout time.Time
	for _, r := range recs {
		switch {
		case r.Type == UtmpUserProcess && alive(r.PID):
			d.lastOpen = now
		case r.Type == UtmpDeadProcess && r.Line != "" && r.Time.After(lastLogout) && !r.Time.After(now):
			lastLogout = r.Time
		}
	}
	last := later(d.lastOpen, lastLogout)
	d.active = last
	if !last.IsZero() && now.Sub(last) < d.hold {
		return reasonLogin, nil
	}
	return "", nil
}

// alive reports whether pid may be a live process: a session whose
// process is gone (a crash left its entry) counts as closed. A pid of 0
// or less is taken as alive.
func alive(pid int32) bool {
	if pid <= 0 {
		return true
	}
	err := unix.Kill(int(pid), 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
