package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The event log and history: reading, and following as the servers
// commit.

// Events returns the committed events with an index greater than after,
// oldest first, as far as the leader still holds them (it keeps the most
// recent few thousand since it started).
func (c *Client) Events(ctx context.Context, after uint64) ([]Event, error) {
	var out []Event
	err := c.do(ctx, http.MethodGet, "/v1/events?after="+strconv.FormatUint(after, 10), nil, &out)
	return out, err
}

// EventsSince returns the committed events after index after whose time
// is at or after since (zero: any), oldest first. The servers keep them
// in their history, across restarts and leader changes, for the history
// retention.
func (c *Client) EventsSince(ctx context.Context, after uint64, since time.Time) ([]Event, error) {
	v := url.Values{"after": {strconv.FormatUint(after, 10)}}
	if !since.IsZero() {
		v.Set("since", since.UTC().Format(time.RFC3339Nano))
	}
	var out []Event
	err := c.do(ctx, http.MethodGet, "/v1/events?"+v.Encode(), nil, &out)
	return out, err
}

// History returns the ended attempts q selects, by end time: the caller's
// own jobs', or (for an admin) anyone's.
func (c *Client) History(ctx context.Context, q HistoryQuery) ([]HistoryAttempt, error) {
	v := url.Values{}
	for k, s := range map[string]string{"user": q.User, "state": q.State, "queue": q.Queue, "machine": q.Machine} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Job != 0 {
		v.Set("job", strconv.FormatUint(q.Job, 10))
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.UTC().Format(time.RFC3339Nano))
	}
	var out []HistoryAttempt
	err := c.do(ctx, http.MethodGet, "/v1/history?"+v.Encode(), nil, &out)
	return out, err
}

// FollowEvents calls fn with every committed event after index after, as
// it happens, until ctx ends or fn returns an error (which it returns).
// When the stream breaks (a server stops, leadership moves) it reconnects
// to any server and resumes after the last event seen, giving up only when
// none has answered for the client's retry period.
func (c *Client) FollowEvents(ctx context.Context, after uint64, fn func(Event) error) error {
	hc := *c.hc
	hc.Timeout = 0 // the stream lasts as long as ctx
	backoff := 25 * time.Millisecond
	clock := c.newRetryClock()
	var last error
	var slow throttle
	for {
		addrs := c.Addrs()
		for i := 0; i < len(addrs); i++ {
			got, err := c.followOnce(ctx, &hc, addrs[i], &after, fn)
			var apiErr *APIError
			var fnErr *callbackError
			var th *throttled
			switch {
			case errors.As(err, &fnErr):
				return fnErr.err
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.As(err, &apiErr):
				return err
			case errors.As(err, &th):
				if err := slow.wait(ctx, th); err != nil {
					return err
				}
				clock.progress()
				i-- // the same server again
				continue
			}
			if got {
				clock.progress()
				backoff = 25 * time.Millisecond
			}
			last = err
			clock.failed(err)
		}
		wait, ok := clock.next(backoff, addrs, last)
		if !ok {
			return &unreachableError{tried: addrs, last: last, stub: c.stub}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// callbackError carries the error of FollowEvents' fn.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

// followOnce streams events from one server, advancing *after. connected
// reports whether the server answered the stream; err is why it ended.
func (c *Client) followOnce(ctx context.Context, hc *http.Client, addr string, after *uint64, fn func(Event) error) (connected bool, err error) {
	u := addr + "/v1/events?follow=1&after=" + strconv.FormatUint(*after, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, &APIError{Message: fmt.Sprintf("build request %s: %v", u, err)}
	}
	c.setIdentity(req)
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		var e ErrorResponse
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if th := throttledBy(resp, msg); th != nil {
			return false, th
		}
		if resp.StatusCode >= 500 {
			return false, &retryable{msg: fmt.Sprintf("%s: %s: %s", u, resp.Status, msg)}
		}
		return false, &APIError{Status: resp.StatusCode, Message: msg}
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev Event
		if err := dec.Decode(&ev); err != nil {
			return true, fmt.Errorf("read events from %s: %w", addr, err)
		}
		if err := fn(ev); err != nil {
			return true, &callbackError{err: err}
		}
		*after = ev.Index
	}
}
