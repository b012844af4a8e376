package main

import (
	"errors"
	"fmt"
	"net"
	"testing"
)

// TestPortTaken recognises a bind to a port in use, as the error itself
// and as the message Raft's and memberlist's transports keep, so that the
// dev agent picks its ports again; another error is not one.
func TestPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = net.Listen("tcp", ln.Addr().String())
	if err == nil {
		t.Fatal("a second listener on a bound port: no error")
	}
	if !portTaken(fmt.Errorf("start gossip: %w", err)) {
		t.Errorf("portTaken(%v) = false, want true", err)
	}
	if !portTaken(errors.New("could not set up network transport: " + err.Error())) {
		t.Errorf("portTaken of the message only (%v) = false, want true", err)
	}
	if portTaken(errors.New("start server: bad config")) {
		t.Error("portTaken of another error = true")
	}
}
