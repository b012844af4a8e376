package owner

import "errors"

// Errors.
var (
	// ErrBadSetting means a Config value cannot work (a negative duration
	// or load).
	ErrBadSetting = errors.New("bad owner policy setting")
	// ErrBadUtmp means a utmp file is not whole records.
	ErrBadUtmp = errors.New("utmp file is not whole records")
	// ErrBadMonitorOutput means the load monitor printed neither a number
	// nor sleep or wake.
	ErrBadMonitorOutput = errors.New("load monitor printed neither a number nor sleep or wake")
)
