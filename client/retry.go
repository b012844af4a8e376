package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"
)

// WithGiveUpUnanswered makes a request give up after d, rather than after
// the retry period, while no server has answered it at all (every try
// failed to connect). It is for callers that only guessed where the
// servers are, such as a command run with the default address: a guess
// that nothing answers is better reported at once than retried. Once any
// server answers (even "no leader yet"), the retry period applies.
func WithGiveUpUnanswered(d time.Duration) Option {
	return func(c *Client) { c.giveUpUnanswered = d }
}

// WithWaitNotice calls fn once per request, from the goroutine making it,
// when the request has been retrying for after: fn gets a line saying
// what the request waits for (a server to answer, or the group to elect a
// leader). A command line tool prints it so a user is not left in silence.
func WithWaitNotice(after time.Duration, fn func(msg string)) Option {
	return func(c *Client) { c.noticeAfter, c.notice = after, fn }
}

// retryClock keeps the time of one request's retries: when it gives up,
// whether any server has answered it, and whether its wait notice went
// out. It belongs to the goroutine making the request.
type retryClock struct {
	c        *Client
	start    time.Time
	deadline time.Time
	answered bool // a server answered, if only to say it cannot serve yet
	noticed  bool // the wait notice went out
}

func (c *Client) newRetryClock() *retryClock {
	now := time.Now()
	return &retryClock{c: c, start: now, deadline: now.Add(c.retryFor)}
}

// failed records the error of one try.
func (r *retryClock) failed(err error) {
	var re *retryable
	if errors.As(err, &re) {
		r.answered = true
	}
}

// progress records that a server answered and restarts the retry period,
// for streams that resume after a break.
func (r *retryClock) progress() {
	r.answered = true
	r.deadline = time.Now().Add(r.c.retryFor)
}

// next returns how long to wait before the next round of tries, given the
// backoff the caller would wait, or false when the request should give up.
// It sends the wait notice when its time has come.
func (r *retryClock) next(backoff time.Duration, addrs []string, last error) (time.Duration, bool) {
	now := time.Now()
	if now.Add(backoff).After(r.deadline) {
		return 0, false
	}
	if g := r.c.giveUpUnanswered; g > 0 && !r.answered && now.Add(backoff).After(r.start.Add(g)) {
		return 0, false
	}
	if r.c.notice == nil || r.noticed {
		return backoff, true
	}
	at := r.start.Add(r.c.noticeAfter)
	switch {
	case !now.Before(at):
		r.noticed = true
		r.c.notice(r.waitMessage(addrs, last))
	case now.Add(backoff).After(at):
		backoff = at.Sub(now) // wake in time to tell
	}
	return backoff, true
}

// waitMessage says what a request waits for.
func (r *retryClock) waitMessage(addrs []string, last error) string {
	left := time.Until(r.deadline).Round(time.Second)
	if r.answered {
		return fmt.Sprintf("waiting for the server group to have a leader (%v); trying for %v more", shortErr(last), left)
	}
	where := strings.Join(addrs, ", ")
	if r.c.socket {
		where = "the local stub's socket " + r.c.socketPath
	}
	return fmt.Sprintf("waiting for a server to answer at %s (%v); trying for %v more", where, shortErr(last), left)
}

// shortErr drops the method and URL Go's HTTP client puts before a
// connection error, which the wait message already names.
func shortErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Jittered returns d moved at random within [d/2, 3d/2): the same wait
// on average, but clients that failed together (every stub of a pool at
// its leader's death) do not come back in step, so a new leader and the
// servers around it are asked at the pool's rate rather than all at once.
func Jittered(d time.Duration) time.Duration {
	if d < 2 {
		return d
	}
	return d/2 + rand.N(d)
}
