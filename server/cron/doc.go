// Package cron is the leader's cron duty and the reading of cron=
// expressions: parsing them (robfig/cron: five fields, or six with
// seconds first, @hourly-style names, @every DURATION, an optional
// CRON_TZ= or TZ= prefix, UTC when none), checking a spec's cron options
// at submit, rendering a cron job's schedule with its next firing for the
// API, and the Firer, which commits a CronFire for every cron job due.
//
// It owns when a firing is proposed and how late one may be (the grace).
// It does not decide what a firing does (fsm.CronDue and the fsm's
// CronFire: catch-up, overlap, the missed firings), so a firing proposed
// twice, by one leader or the next, runs once. It reaches the server only
// through a duty.Handle.
package cron
