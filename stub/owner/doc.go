// Package owner decides whether a workstation's owner has it back: the
// stub's owner policy, after the ISIS Resource Manager's stub, which went
// to sleep on a console login, keyboard or mouse use, a load above a
// threshold, or a plug-in load monitor's word, and after HTCondor's
// desktop policy (KeyboardIdle, ConsoleIdle, the non-HTCondor load).
//
// A Watch runs the detectors the Config turns on, one file each (login.go
// reads utmp, input.go the access times of input devices and terminals,
// load.go the load average less the stub's own jobs' share, monitor.go a
// site's load-monitor program) and keeps one verdict: the reason the
// machine is asleep ("console login", "load 3.2 > 2"), or "" while it is
// awake. The stub reports the verdict with its lease renewals and acts on
// its changes (suspending, resuming or vacating its jobs).
//
// What it is not: it never talks to the servers, and it decides nothing
// about jobs; it only says what the owner is doing. Its sources are
// settings (Config), so tests and unusual hosts can point them elsewhere.
package owner
