package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RingSize is how many recent events a Hub keeps for pages that connect
// or reconnect; a server seeds a new Hub with as many from its history.
const RingSize = 500

// keepAlive is how often an idle stream sends a ping event, so that
// proxies keep it open and the page notices a stream whose server hangs
// (it gives up one silent for 25 s).
const keepAlive = 10 * time.Second

// Event is one line of the dashboard's timeline: an event of the group's
// history, or a leadership change this server saw.
type Event struct {
	// Seq numbers the events of one Hub from 1.
	Seq uint64 `json:"seq"`
	// Key identifies the event across servers, so that a page that moves
	// to another server shows it once ("i42" for the history event of
	// index 42, "elected-s2-7" for s2's election in term 7).
	Key string `json:"key"`
	// At is when it happened (history events) or was seen (leadership).
	At time.Time `json:"at"`
	// Kind is the history event's kind, or leader_lost / leader_elected.
	Kind string `json:"kind"`
	// Text says what happened, for the timeline.
	Text string `json:"text"`
	// Server is the server that saw it.
	Server string `json:"server"`
	// Index, Job, Instance and Machine are the history event's.
	Index    uint64 `json:"index,omitempty"`
	Job      uint64 `json:"job,omitempty"`
	Instance int    `json:"instance,omitempty"`
	Machine  string `json:"machine,omitempty"`
	// Leader and Term name the new leader of a leader_elected event.
	Leader string `json:"leader,omitempty"`
	Term   uint64 `json:"term,omitempty"`
}

// Hub fans one server's events out to every open page: the server
// publishes each event once, and each page's stream copies from the
// ring. A hundred pages cost a hundred idle goroutines and a memory copy
// per event, not a hundred reads of the history.
type Hub struct {
	// Server is this server's name, set on every event.
	Server string
	// epoch tells one Hub's sequence numbers from another's (another
	// server, or this one after a restart).
	epoch string

	mu sync.Mutex
	// ring holds the last RingSize events; once full, oldest is the
	// position of the oldest and each new event takes its place, so a
	// Publish moves no other event.
	ring    []published
	oldest  int
	seq     uint64
	changed chan struct{}
	subs    int
}

// published is an event of the ring with its Server-Sent Events frame,
// encoded once at Publish for every stream that writes it when a stream
// is open (nil when none was: a stream that connects later encodes the
// past events it sends itself, so a server nobody watches encodes none).
type published struct {
	Event
	frame []byte
}

// NewHub returns an empty hub for the named server.
func NewHub(server string) *Hub {
	return &Hub{Server: server, epoch: strconv.FormatInt(time.Now().UnixNano(), 36), changed: make(chan struct{})}
}

// Publish adds e to the timeline and wakes every stream. It never blocks
// for long, so Raft's observer may call it.
func (h *Hub) Publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	e.Seq = h.seq
	if e.Server == "" {
		e.Server = h.Server
	}
	p := published{Event: e}
	if h.subs > 0 {
		p.frame = h.frame(e)
	}
	if len(h.ring) < RingSize {
		h.ring = append(h.ring, p)
	} else {
		h.ring[h.oldest] = p
		h.oldest = (h.oldest + 1) % RingSize
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// Subscribers is how many streams are open.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.subs
}

// frame is e's Server-Sent Events frame.
func (h *Hub) frame(e Event) []byte {
	data, err := json.Marshal(e)
	if err != nil {
		// An Event is strings and numbers: this cannot happen.
		data = []byte(`{}`)
	}
	return fmt.Appendf(nil, "id: %s:%d\ndata: %s\n\n", h.epoch, e.Seq, data)
}

// since returns the events after seq, oldest first, and a channel closed
// at the next Publish. The ring's events have consecutive numbers.
func (h *Hub) since(seq uint64) ([]published, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.ring)
	if n == 0 || seq >= h.seq {
		return nil, h.changed
	}
	skip := 0
	if first := h.ring[h.oldest].Seq; seq >= first {
		skip = int(seq - first + 1)
	}
	out := make([]published, 0, n-skip)
	for i := skip; i < n; i++ {
		out = append(out, h.ring[(h.oldest+i)%n])
	}
	return out, h.changed
}

// Recent returns the events the hub holds, oldest first.
func (h *Hub) Recent() []Event {
	ps, _ := h.since(0)
	evs := make([]Event, len(ps))
	for i, p := range ps {
		evs[i] = p.Event
	}
	return evs
}

// ServeHTTP streams the timeline as Server-Sent Events: first the events
// the hub holds (or those after Last-Event-ID when the page reconnects
// to this same hub), then each event as it is published, until the page
// goes away or done is closed. The caller has checked who asks.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.Stream(w, r, nil)
}

// Stream is ServeHTTP that also ends when done is closed (the server
// stops).
func (h *Hub) Stream(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
	var after uint64
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last")
	}
	if ep, n, ok := strings.Cut(last, ":"); ok && ep == h.epoch {
		after, _ = strconv.ParseUint(n, 10, 64)
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	h.mu.Lock()
	h.subs++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.subs--
		h.mu.Unlock()
	}()
	// A page reconnects half a second after its stream breaks.
	if _, err := fmt.Fprintf(w, "retry: 500\nevent: hello\ndata: {\"server\":%q}\n\n", h.Server); err != nil {
		return
	}
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	for {
		evs, changed := h.since(after)
		for _, e := range evs {
			if e.frame == nil {
				e.frame = h.frame(e.Event)
			}
			if _, err := w.Write(e.frame); err != nil {
				return
			}
			after = e.Seq
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-changed:
		case <-ping.C:
			if _, err := fmt.Fprint(w, "event: ping\ndata: {}\n\n"); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-done:
			return
		}
	}
}
