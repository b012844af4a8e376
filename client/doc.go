// Package client is the Go library for talking to netmgr: the HTTP/JSON wire
// types shared by servers, stubs and the CLI, and clients for the server API
// (with fail-over across servers and leader redirects) and for the stub API.
//
// It is the paper's "API" for programs. It imports nothing else of netmgr:
// the wire format defined here is free to evolve, while the Raft log format
// lives in package fsm and must stay decodable forever; package server
// translates between the two.
package client
