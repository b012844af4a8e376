package server

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// maxJobPage is the most jobs one page of GET /v1/jobs?limit= holds.
const maxJobPage = 1000

// jobFilter is GET /v1/jobs?owner=&state=&queue=&name=&offset=&limit=: the
// dashboard's filters and paging, so that a page of 10,000 jobs renders
// only the jobs it shows. Without any of them the whole list is answered,
// as before.
type jobFilter struct {
	owner, state, queue, name string
	offset, limit             int
}

// parseJobFilter reads the filters of a jobs request.
func parseJobFilter(q url.Values) (jobFilter, error) {
	f := jobFilter{owner: q.Get("owner"), state: q.Get("state"), queue: q.Get("queue"), name: q.Get("name")}
	for _, p := range []struct {
		key string
		to  *int
	}{{"offset", &f.offset}, {"limit", &f.limit}} {
		if s := q.Get(p.key); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return f, fmt.Errorf("list jobs: %s=%q is not a count", p.key, s)
			}
			*p.to = n
		}
	}
	if f.limit > maxJobPage {
		f.limit = maxJobPage
	}
	return f, nil
}

// any reports whether the request filters or pages at all.
func (f jobFilter) any() bool {
	return f.owner != "" || f.state != "" || f.queue != "" || f.name != "" || f.offset != 0 || f.limit != 0
}

// match reports whether job j passes the filters. name matches a part of
// the job's name.
func (f jobFilter) match(j *fsm.Job) bool {
	return (f.owner == "" || j.Owner == f.owner) &&
		(f.state == "" || jobStateToWire(j.State()) == f.state) &&
		(f.queue == "" || j.Spec.Queue == f.queue) &&
		(f.name == "" || strings.Contains(j.Name, f.name))
}

// page returns the newest-first page of the jobs that pass, in wire form,
// and how many pass in all.
func (f jobFilter) page(v fsm.View, all []*fsm.Job) ([]client.Job, int) {
	limit := f.limit
	if limit == 0 {
		limit = maxJobPage
	}
	out := make([]client.Job, 0, min(limit, len(all)))
	total := 0
	for i := len(all) - 1; i >= 0; i-- {
		j := all[i]
		if !f.match(j) {
			continue
		}
		if total >= f.offset && len(out) < limit {
			out = append(out, jobToWire(v, j))
		}
		total++
	}
	return out, total
}
