package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestRenderShare(t *testing.T) {
	var b bytes.Buffer
	err := renderShare(&b, client.ShareReport{On: true, Rows: []client.ShareRow{
		{Account: "physics", Share: 10, Usage: 7260.4, Factor: 0.5, Running: 2, Waiting: 198},
		{Account: "physics", User: "alice", Share: 2, Usage: 7260.4, Factor: 0.25, Running: 2, Waiting: 198},
		{Account: "physics", User: "bob", Share: 1, Factor: 1, Waiting: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := "ACCOUNT  USER   SHARE  USAGE  FACTOR  RUNNING  WAITING\n" +
		"physics         10     7260   0.50    2        198\n" +
		"physics  alice  2      7260   0.25    2        198\n" +
		"physics  bob    1      0      1.00    0        1\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := renderShare(&b, client.ShareReport{}); err != nil || !strings.HasPrefix(b.String(), "fair share is not on yet") {
		t.Errorf("off: got %q (%v)", b.String(), err)
	}
}
