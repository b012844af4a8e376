package client

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A server limits each user's request rate and answers a request past it
// 429 Too Many Requests with Retry-After, the whole seconds to wait. The
// client waits that long (a little more, so that clients told the same
// do not come back at once) and sends the request again to the same
// server, since another server's answer would only spread the load; after
// maxThrottled waits, or when the server asks for more than
// maxThrottleWait, it gives up with the 429 as an *APIError, whose message
// names the limit. A 429 without Retry-After (too many open streams) is
// an *APIError at once: waiting a second would not help.

// maxThrottleWait is the longest Retry-After the client waits out.
const maxThrottleWait = 30 * time.Second

// maxThrottled is how many 429s one request waits out before it gives up.
const maxThrottled = 20

// throttled is a 429 answer with Retry-After.
type throttled struct {
	after time.Duration
	msg   string // the server's message
}

func (e *throttled) Error() string { return e.msg }

// throttledBy returns the *throttled of a 429 answer with a Retry-After
// in seconds, or nil for any other answer.
func throttledBy(resp *http.Response, msg string) *throttled {
	if resp.StatusCode != http.StatusTooManyRequests {
		return nil
	}
	secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || secs < 0 {
		return nil
	}
	return &throttled{after: time.Duration(secs) * time.Second, msg: msg}
}

// throttle counts one request's waits on 429 answers. It belongs to the
// goroutine making the request.
type throttle struct{ waits int }

// wait waits out e, or returns the error the request gives up with: the
// 429 as an *APIError once it waited maxThrottled times or when e asks
// for more than maxThrottleWait, or ctx's error when ctx ends first.
func (t *throttle) wait(ctx context.Context, e *throttled) error {
	t.waits++
	if t.waits > maxThrottled || e.after > maxThrottleWait {
		return &APIError{Status: http.StatusTooManyRequests, Message: e.msg}
	}
	d := e.after + rand.N(e.after/10+time.Millisecond)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
