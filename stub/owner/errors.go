package owner

import (
	"errors"

	"github.com/netmgr/netmgr/client/dblang"
)

// Errors.
var (
	// ErrBadSetting means a Config value cannot work (a negative duration
	// or load, a window dblang.ParseWindow refuses). It is
	// dblang.ErrBadOwnerSetting, which ParseWindow's errors wrap, so one
	// errors.Is answers for both.
	ErrBadSetting = dblang.ErrBadOwnerSetting
	// ErrBadUtmp means a utmp file is not whole records.
	ErrBadUtmp = errors.New("utmp file is not whole records")
	// ErrBadMonitorOutput means the load monitor printed neither a number
	// nor sleep or wake.
	ErrBadMonitorOutput = errors.New("load monitor printed neither a number nor sleep or wake")
)
