// Package spec reads and writes the paper's job specification strings, such
// as
//
//	binaries={x86_64=/bin/sh},min=3,symb_name=job1,env={"A=b"},args={-c,"echo hi"}
//
// A spec is a comma-separated list of option=value. A value is a bare word
// (everything up to the next ',' or '}' at that nesting level, trimmed), a
// double-quoted string in which \" and \\ are the only escapes, or a {...}
// list of values (args, env) or of key=value pairs (binaries). Whitespace
// around tokens is ignored.
//
// Parse turns a string into a client.JobSpec, and Format prints a
// client.JobSpec back in the same language, so Parse(Format(s)) gives s
// back for every spec Parse accepts. Errors are *Error values that name the
// line, column and option, such as
//
//	spec:1:23: option min: "x" is not a positive integer
//
// The package only checks the syntax and the per-option rules it can check
// without a server (names, counts, environment entries); whether a binary
// exists or a machine key matches anything is for the server to say. It
// imports nothing of netmgr but package client.
package spec
