package warnlimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/warnlimit"
)

func TestLimiterLetsOneThroughAPeriodAndCountsTheRest(t *testing.T) {
	w := warnlimit.New(time.Minute)
	t0 := time.Unix(1_000_000, 0)
	if ok, held := w.Allow("a", t0); !ok || held != 0 {
		t.Fatalf("first: %v %d, want through with none held", ok, held)
	}
	for i := range 3 {
		if ok, _ := w.Allow("a", t0.Add(time.Duration(i+1)*time.Second)); ok {
			t.Fatalf("repeat %d within the period let through", i)
		}
	}
	if ok, _ := w.Allow("b", t0.Add(time.Second)); !ok {
		t.Error("another key held back")
	}
	if ok, held := w.Allow("a", t0.Add(time.Minute)); !ok || held != 3 {
		t.Errorf("after the period: %v %d, want through with 3 held", ok, held)
	}
}

func TestLimiterForgetsOldKeysPastMaxKeys(t *testing.T) {
	w := warnlimit.New(time.Minute)
	t0 := time.Unix(1_000_000, 0)
	for i := range warnlimit.MaxKeys {
		w.Allow(fmt.Sprint(i), t0)
	}
	// A minute later every key is old: the next new key clears them, so
	// key 0 is let through again at once.
	later := t0.Add(time.Minute)
	w.Allow("new", later)
	if ok, held := w.Allow("0", later); !ok || held != 0 {
		t.Errorf("an old key after the sweep: %v %d, want through", ok, held)
	}
}
