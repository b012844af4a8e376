package owner

import (
	"time"

	"github.com/netmgr/netmgr/client/dblang"
)

// reasonWindow is the verdict outside every availability window.
const reasonWindow = "outside window"

// windowDetector puts the machine to sleep outside every window.
type windowDetector struct {
	windows []dblang.Window
	loc     *time.Location
}

func (d *windowDetector) check(now time.Time) string {
	t := now.In(d.loc)
	for _, w := range d.windows {
		if w.Contains(t) {
			return ""
		}
	}
	return reasonWindow
}
