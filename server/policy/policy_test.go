package policy_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/netmgr/netmgr/server/policy"
)

func TestCompileErrorsNameLineAndColumn(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "def admit(job, user):\n    return (\n", "line 3 column 1"},
		{"bad token", "x = 1\ny = = 2\n", "line 2 column 5"},
		{"undefined", "def priority(job, user, usage, now):\n    return nope\n", "line 2 column 12: undefined: nope"},
		{"top level fails", "x = 1\ny = 1 // 0\n", "line 2 column 7"},
		{"load refused", "load('x.star', 'y')\n", "line 1"},
		{"not a function", "admit = 3\n", "admit is not a function"},
		{"wrong arity", "def priority(job):\n    return 1\n", "line 1 column 1: priority takes 1 parameters"},
		{"runaway top level", "x = [i for i in range(10000000)]\n", "too many steps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Compile(tt.src)
			var pe *policy.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Compile = %v, want a *policy.Error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

const site = `
def admit(job, user):
    if job["instances"] > 100:
        return "at most 100 instances per job here (asked %d)" % job["instances"]
    if job["queue"] == "" and job["time_limit"] == 0:
        return {"time_limit": 3600}
    if user["name"] == "bob":
        return {"queue": "LONG"}
    if user["name"] == "carol":
        return {"priority": -5}
    return None

def priority(job, user, usage, now):
    return -job["time_limit"] - usage["user"] / 1000.0 + 0 * now
`

func TestAdmit(t *testing.T) {
	p, err := policy.Compile(site)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		job  policy.Job
		user policy.User
		want policy.Decision
	}{
		{"refused", policy.Job{Instances: 101, Queue: "BATCH"}, policy.User{Name: "alice"}, policy.Decision{Refuse: "at most 100 instances per job here (asked 101)"}},
		{"limit set", policy.Job{Instances: 1}, policy.User{Name: "alice"}, policy.Decision{TimeLimitSeconds: 3600}},
		{"queue changed", policy.Job{Instances: 1, Queue: "BATCH"}, policy.User{Name: "bob"}, policy.Decision{Queue: "LONG"}},
		{"priority set", policy.Job{Instances: 1, Queue: "BATCH"}, policy.User{Name: "carol"}, policy.Decision{Priority: -5}},
		{"accepted", policy.Job{Instances: 100, Queue: "BATCH"}, policy.User{Name: "alice"}, policy.Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Admit(tt.job, tt.user)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Admit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPriority(t *testing.T) {
	p, err := policy.Compile(site)
	if err != nil {
		t.Fatal(err)
	}
	short, err := p.Priority(policy.Job{TimeLimitSeconds: 60}, policy.User{}, policy.Usage{User: 500}, 1e9)
	if err != nil {
		t.Fatal(err)
	}
	long, err := p.Priority(policy.Job{TimeLimitSeconds: 3600}, policy.User{}, policy.Usage{}, 1e9)
	if err != nil {
		t.Fatal(err)
	}
	if short != -60.5 || long != -3600 {
		t.Errorf("priorities = %v, %v, want -60.5, -3600", short, long)
	}
}

func TestCallErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
		admit           bool
	}{
		{"fails", "def priority(job, user, usage, now):\n    x = 1\n    return job['nope']\n", "site policy priority, line 3", false},
		{"runs out", "def priority(job, user, usage, now):\n    n = 0\n    for i in range(10000000):\n        n += i\n    return n\n", "too many steps", false},
		{"wrong type", "def priority(job, user, usage, now):\n    return 'high'\n", "returned a string, want a number", false},
		{"bool is no number", "def priority(job, user, usage, now):\n    return True\n", "want a number", false},
		{"unknown change", "def admit(job, user):\n    return {'nice': 3}\n", "a change to \"nice\"", true},
		{"priority out of range", "def admit(job, user):\n    return {'priority': 1001}\n", "a priority that is not an int from -1000 to 1000", true},
		{"priority not an int", "def admit(job, user):\n    return {'priority': 1.5}\n", "a priority that is not an int", true},
		{"mutates a frozen input", "def admit(job, user):\n    job['queue'] = 'X'\n", "line 2", true},
		{"wrong admit type", "def admit(job, user):\n    return 3\n", "want None, a string or a dict", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.Compile(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if tt.admit {
				_, err = p.Admit(policy.Job{}, policy.User{})
			} else {
				_, err = p.Priority(policy.Job{}, policy.User{}, policy.Usage{}, 0)
			}
			var pe *policy.Error
			if !errors.As(err, &pe) || pe.Line == 0 {
				t.Fatalf("err = %v, want a *policy.Error with a line", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestNoLeaksBetweenCalls: a global the script tries to change stays as
// it was (globals are frozen), so one call cannot steer the next.
func TestNoLeaksBetweenCalls(t *testing.T) {
	p, err := policy.Compile("seen = []\ndef priority(job, user, usage, now):\n    seen.append(1)\n    return len(seen)\n")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := p.Priority(policy.Job{}, policy.User{}, policy.Usage{}, 0); err == nil || !strings.Contains(err.Error(), "frozen") {
			t.Fatalf("err = %v, want the frozen list refused", err)
		}
	}
}

func TestNoFunctions(t *testing.T) {
	p, err := policy.Compile("x = 1\n")
	if err != nil {
		t.Fatal(err)
	}
	if p.HasAdmit() || p.HasPriority() {
		t.Error("a script without functions has them")
	}
	if d, err := p.Admit(policy.Job{}, policy.User{}); err != nil || d != (policy.Decision{}) {
		t.Errorf("Admit = %+v, %v, want accept", d, err)
	}
}

func TestCacheCompilesOncePerLoad(t *testing.T) {
	var c policy.Cache
	var wg sync.WaitGroup
	progs := make([]*policy.Program, 8)
	for i := range progs {
		wg.Go(func() { progs[i], _ = c.Get(7, site) })
	}
	wg.Wait()
	for _, p := range progs[1:] {
		if p != progs[0] || p == nil {
			t.Fatal("the same load compiled twice")
		}
	}
	if p, err := c.Get(8, ""); p != nil || err != nil {
		t.Errorf("Get of a cleared policy = %v, %v", p, err)
	}
	if _, err := c.Get(9, "x = (\n"); err == nil {
		t.Error("a broken source compiled")
	}
}

// TestRankerRecoversAfterAFailure: a call that runs out of steps or
// fails does not spoil the next call of the same pass.
func TestRankerRecoversAfterAFailure(t *testing.T) {
	p, err := policy.Compile("def priority(job, user, usage, now):\n    if job['id'] == 1:\n        for i in range(10000000):\n            pass\n    if job['id'] == 2:\n        fail('no')\n    return now - job['submitted'] + usage['user'] + user['share'] + job['free']['free_slots']\n")
	if err != nil {
		t.Fatal(err)
	}
	r := p.Ranker(100, policy.Pool{FreeSlots: 3})
	if _, err := r.Priority(policy.Job{ID: 1}, policy.User{Name: "a"}, policy.Usage{}); err == nil || !strings.Contains(err.Error(), "too many steps") {
		t.Fatalf("err = %v, want too many steps", err)
	}
	if _, err := r.Priority(policy.Job{ID: 2}, policy.User{Name: "a"}, policy.Usage{}); err == nil || !strings.Contains(err.Error(), "line 6") {
		t.Fatalf("err = %v, want the fail at line 6", err)
	}
	got, err := r.Priority(policy.Job{ID: 3, SubmittedUnix: 40}, policy.User{Name: "b", Share: 2}, policy.Usage{User: 0.5})
	if err != nil || got != 65.5 {
		t.Errorf("Priority = %v, %v, want 65.5", got, err)
	}
}

// TestJobReadsLikeADict: a job is read as a frozen dict is.
func TestJobReadsLikeADict(t *testing.T) {
	p, err := policy.Compile(`def priority(job, user, usage, now):
    n = 0
    if "cpus" in job and "nope" not in job:
        n += job["cpus"]
    n += job.get("gpus") + job.get("nope", 100)
    n += len(job.keys()) + len([v for k, v in job.items() if k == "licenses"][0])
    n += job["free"]["free_slots"]
    return n
`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Priority(policy.Job{CPUs: 2, GPUs: 1, Licenses: map[string]int{"matlab": 1}, Free: policy.Pool{FreeSlots: 1000}}, policy.User{}, policy.Usage{}, 0)
	if want := float64(2 + 1 + 100 + 14 + 1 + 1000); err != nil || got != want {
		t.Errorf("Priority = %v, %v, want %v", got, err, want)
	}
}

// TestRankerPassBudget: calls within their own budget that together
// spend the pass's stop there, naming it.
func TestRankerPassBudget(t *testing.T) {
	p, err := policy.Compile("def priority(job, user, usage, now):\n    n = 0\n    for i in range(2000):\n        n += i\n    return n\n")
	if err != nil {
		t.Fatal(err)
	}
	r := p.Ranker(0, policy.Pool{})
	r.SetPassSteps(policy.PassSteps / 100)
	for i := range 100000 {
		if _, err := r.Priority(policy.Job{}, policy.User{}, policy.Usage{}); err != nil {
			if !strings.Contains(err.Error(), "budget") || i < 20 {
				t.Fatalf("call %d: %v, want the pass's budget spent after many calls", i, err)
			}
			return
		}
	}
	t.Fatal("100,000 calls of 2,000 loop iterations each stayed within the pass's budget")
}
