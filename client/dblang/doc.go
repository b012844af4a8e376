// Package dblang reads and writes the paper's resource manager database
// language, and the init file a stub reads at start.
//
// It lives beside client/spec, the paper's other language, and like it
// belongs to everyone who speaks to the cluster: the server loads a
// database file, the stub reads its init file, the CLI checks and formats
// both. It imports nothing of ours, so the stub reads its init file
// without importing fsm.
//
// A database declares keys (words a machine may have: an architecture, a
// licence, a piece of hardware), machine types, machines, batch queues,
// administrators and whether root may run jobs as root, one declaration per
// line:
//
//	key fpu /* Has hardware fpu */
//	mtype sparc1+ = {sparc, mem=16, rating=8.0}
//	machine flute = sparc1+
//	machine bongo = {sparc1+, mem=32, mounts={/usr/fsys/fs1}}
//	add_q NEW_Q = {nq_maxsize=120, nq_maxactive=100, nq_maxrun=200,\
//	               nq_maxmem=20}
//	admin_id tclark
//
// The grammar:
//
//	file     = { decl NEWLINE }
//	decl     = "key" NAME
//	         | "mtype" NAME "=" list
//	         | "machine" NAME "=" ( NAME | list )
//	         | "add_q" NAME "=" list
//	         | "admin_id" ( NAME | STRING )
//	         | "allow_root_jobs"
//	         | "account" NAME "=" list
//	         | "share" NAME "=" NAME
//	         | "fairshare_halflife" "=" NAME
//	list     = "{" [ item { "," item } ] "}"
//	item     = value [ "=" value ]
//	value    = NAME | PATH | STRING | list
//
// A NAME is a run of letters, digits and _ - . + (sparc1+, mc68020, 16.0;
// numbers are NAMEs read as numbers where a number is wanted: 16, -3, 8.5,
// 1e6). A PATH starts with '/' and runs to a blank, a control character,
// a comment or one of , { } = " \; other paths are written as STRINGs.
// A STRING is double-quoted, ends on its line, and knows two escapes, \"
// and \\. A /* */ comment may stand anywhere a blank may, across lines too.
// A newline ends a declaration, unless a \ ends the line, which joins the
// next line to it; so a {} list must close on its line or be continued.
// Lists nest at most 8 deep.
//
// What the lists hold:
//
//   - mtype: keys (bare names), attr=NUMBER items such as mem=16 and
//     rating=8.0, and mounts={PATH, ...}.
//   - machine: the same, plus at most one mtype. The first bare name that
//     names an mtype is the machine's mtype; a later one is a key when a
//     key of that name is declared, and an error otherwise. So
//     `machine viola = {mips, mathlab}` has mtype mips even though mips is
//     also a key, and a machine that writes `= MTYPE` takes that mtype.
//   - add_q: nq_maxsize, nq_maxactive, nq_maxrun, nq_maxmem (MB) and
//     priority, each =N with N a whole number; limits are 0 or more, and 0
//     means no limit. nq_maxrun is in minutes, as in the paper
//     (nq_maxrun=200), or a whole number with a unit s, m or h
//     (nq_maxrun=90s, 30m, 2h); Format writes whole minutes without a unit
//     and anything else in seconds. kill_grace, the time from the SIGTERM
//     that ends one of the queue's jobs to the SIGKILL, is whole seconds
//     or a whole number with a unit s, m or h, from 1 s to 1 h
//     (kill_grace=30, 45s, 2m); Format writes it in seconds with a unit.
//   - owner-policy settings (owner.go), on an mtype, a machine or in an
//     init file: sleep_on_login=D, sleep_on_input=D, sleep_on_load=NUMBER,
//     load_monitor=PATH, available={"Mon-Fri 18:00-08:00", "Sat-Sun"},
//     vacate_after=D and keep_suspended=yes|no, with D a duration written
//     as nq_maxrun is; on an add_q: vacate_after, keep_suspended and
//     suspend=yes|no (no vacates the queue's jobs at once). A machine's settings
//     override its mtype's (Resolve); the stub merges them with its flags
//     and init file (flags < init file < database). The windows' own
//     syntax is window.go's (ParseWindow, Window.Contains): the server
//     checks it at load time, the stub (stub/owner) follows the windows.
//
// Fair share (shares.go): `account NAME = {share=N, users={USER, ...}}`
// groups users (a user in none is in the account default), `share USER =
// N` gives a user's share within its account (1 by default), and
// `fairshare_halflife = 7d` says how fast past usage is forgotten. An
// add_q may also limit each user: nq_maxuser_active (instances running at
// once) and nq_maxuser_queued (unfinished jobs).
//
// interactive=yes marks the one queue of interactive work (Queue.Interactive):
// netexec -i and --pty jobs that name no queue go there, and its waiting
// work starts before every other queue's.
//
// Prime time (prime.go, schedule.go): an add_q's prime={window="Mon-Fri
// 08:00-18:00", tz="Europe/Paris", priority=20, ...} gives weekly windows
// and the priority and limits in force inside them. Checking tz reads the
// tz database (time.LoadLocation), the package's one read; Schedule says
// when the windows open and close, for the server's leader.
//
// allow_root_jobs takes no arguments and is given at most once. It sets
// Database.AllowRootJobs: root, submitting from a machine of the pool, may
// then run jobs as root. Without it (the default) no job runs as root, and
// a root job submitted from anywhere else is refused either way. Enforcing
// that is the server's; the language only records the choice.
//
// A name must be declared before it is used: a key above the mtypes and
// machines that list it, an mtype above the machines of that type. Names
// are unique within a kind (two keys may not share a name); a key and an
// mtype may share one. A machine inherits its mtype's keys, attributes and
// mounts and its own attributes override the mtype's (Resolve).
//
// Parse checks all of this and reports every problem it finds, each as
// "FILE:LINE:COL: what is wrong; what to do", for example
//
//	isis.db:9:25: key gpu is not declared; declare it with `key gpu` above line 9
//
// and returns no Database when there is any, so a file with an error
// changes nothing. Format prints a Database back in the language; Parse of
// that gives an Equal Database. Only key comments survive the trip.
//
// The init file (ParseInit, FormatInit) uses the same lexical syntax as
// name=value items separated by commas or newlines: mtype=NAME,
// keys={NAME, ...}, mounts={PATH, ...} and NAME=NUMBER for mem, rating,
// nprocs and any other attribute. Its keys need not be declared anywhere.
//
// The package is pure: it imports nothing of netmgr, does no I/O, and every
// function is safe for concurrent use. It knows nothing of jobs, of the
// machines that are up, or of how a database is replicated; those belong to
// the server.
package dblang
