package main

import (
	"testing"
)

func TestLeftovers(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want []string // pids
	}{{
		name: "only the stub",
		out: `self 40
stub 8
PID   PPID  STAT COMMAND
    1     0 S    /sbin/docker-init -- /bin/sh /chaos/stub.sh --name=stub1
    7     1 S    /bin/sh /chaos/stub.sh --name=stub1
    8     7 S    /bin/netmgr stub --name=stub1
    9     8 S    netmgr supervise --host /data/attempts
   40     0 S    sh -c echo
   45    40 R    ps -o pid,ppid,stat,args
`,
	}, {
		name: "the exec shell replaced by ps, and the loop's sleep",
		out: `self 40
stub
PID   PPID  STAT COMMAND
    1     0 S    /sbin/docker-init -- /bin/sh /chaos/stub.sh
    7     1 S    /bin/sh /chaos/stub.sh
   39     7 S    sleep 1
   40     0 R    ps -o pid,ppid,stat,args
`,
	}, {
		name: "a job and an orphan left",
		out: `self 40
stub 8
PID   PPID  STAT COMMAND
    1     0 S    /sbin/docker-init -- /bin/sh /chaos/stub.sh
    7     1 S    /bin/sh /chaos/stub.sh
    8     7 S    /bin/netmgr stub
   20     8 S    /bin/sh /chaos/job.sh 30 0
   21    20 S    sleep 1
   30     1 Z    [sh]
   31     1 S    netmgr supervise --host /data/attempts
   40     0 R    ps -o pid,ppid,stat,args
`,
		want: []string{"20", "21", "30"},
	}, {
		name: "a supervisor host with no stub",
		out: `self 40
stub
PID   PPID  STAT COMMAND
    1     0 S    /sbin/docker-init -- /bin/sh /chaos/stub.sh
    7     1 S    /bin/sh /chaos/stub.sh
   31     1 S    netmgr supervise --host /data/attempts
   40     0 R    ps -o pid,ppid,stat,args
`,
		want: []string{"31"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			left, err := leftovers(tt.out)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range left {
				got = append(got, p.PID)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
	if _, err := leftovers("sh: ps: not found\n"); err == nil {
		t.Errorf("got no error for output without a process list, want one")
	}
}
