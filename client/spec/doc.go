// Package spec reads and writes the paper's job specification strings, such
// as the paper's Example 1
//
//	binaries={sparc=/usr/u/fred/test},min=3,mem>10,mail
//
// and Example 2
//
//	binaries={sparc=/usr/u/fred/sparc/test,mips=/usr/u/fred/mips/test},min=4,args={4},mounts={/usr/u/fred/data},symb_name=test1
//
// A spec is a comma-separated list of items. An item is option=value, a
// bare option (unique, mail), or a comparison on a numeric machine
// attribute, ATTR OP NUMBER with OP one of > >= < <= == != (mem>10,
// rating>=8). A value is a bare word (everything up to the next ',' or '}'
// at that nesting level, trimmed), a double-quoted string in which \" and
// \\ are the only escapes, or a {...} list of values (args, env, keys,
// mounts, machines, copy_in, copy_out; after, afterok and afternotok take
// one job or a list of them, mail_type one type or a list) or of key=value pairs (binaries).
// Whitespace around tokens is ignored.
//
// The options map onto client.JobSpec: binaries, min, symb_name, args,
// env; keys, the comparisons, mounts, machines (what a machine must have);
// unique, max_per_machine, load, memory, queue (placement); time (the
// time limit: minutes, or 90s, 30m, 2h) and signal (a warning before it,
// SIG@LEAD: signal=USR1@60); restart,
// max_restarts; mail (mail the owner, or mail=ADDRESS) and mail_type
// (begin, end, fail, requeue, all; mail_type={begin,end}); copy_in,
// copy_out; cron, catchup, overlap (a schedule: cron="0 3 * * *",
// catchup=none,overlap=allow; the server parses the expression); after,
// afterok, afternotok (the jobs it waits for, by id or name). The package accepts
// the whole language: whether the server can honour an option yet is the
// server's to say.
//
// Parse turns a string into a client.JobSpec, and Format prints a
// client.JobSpec back in the same language, so Parse(Format(s)) gives s
// back for every spec Parse accepts. Errors are *Error values that name the
// line, column and option, such as
//
//	spec:1:23: option min: "x" is not a positive integer
//	spec:1:30: unknown option mem (to compare a machine attribute write mem==10 or mem>=10)
//
// The package only checks the syntax and the per-option rules it can check
// without a server (names, counts, numbers, environment entries, options
// that contradict each other); whether a binary exists or a machine key
// matches anything is for the server to say. It imports nothing of netmgr
// but package client.
package spec
