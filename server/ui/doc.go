// Package ui is the dashboard every server serves at /ui: the plain HTML,
// CSS and JavaScript files of a single page (embedded with go:embed, no
// build toolchain), the sign-in that turns an API token into a cookie,
// and the Hub that fans one server's event feed out to every open page
// over Server-Sent Events.
//
// The page reads and acts through the same /v1 JSON API as the CLI; the
// server accepts the cookie as the page's bearer token (see Cookie and
// CSRFHeader), so every action is authorised exactly as the CLI's.
//
// # The dashboard
//
// /ui on every server (server/ui, doc/dashboard.md) is a page of plain
// HTML, CSS and JavaScript embedded with go:embed: no npm, no bundler, no
// framework, nothing to build or audit but three files; the cost is
// hand-written DOM code (about 700 lines) and no component library.
//
// Identity. A browser has no client certificate, and the page must not be a
// second way in, so it signs in with the same API token the CLI uses: `POST
// /ui/login` verifies it as a bearer token and sets it as an HttpOnly,
// Secure, SameSite=Strict cookie, which identifyToken accepts when a
// request has no Authorization header. The token never reaches the page's
// scripts (an XSS cannot exfiltrate it), and there is no second session
// store to replicate: revoking the token ends the session on every server.
// Because a cookie rides along automatically, a state-changing request by
// cookie must carry X-Netmgr-Dashboard (CSRF): SameSite=Strict keeps other
// sites' requests cookie-less, and the custom header forces a CORS
// preflight, which only the group's own origins pass. The page sets a
// strict Content-Security-Policy and builds the DOM with textContent only.
//
// One fan-out per server. Each server owns a ui.Hub: a Raft observer
// publishes the leader changes it sees (a follower sees "leader lost" after
// its heartbeat timeout, before anything can be committed), and one
// goroutine publishes the events it applies, from the state's in-memory
// ring. Pages stream the hub's ring over Server-Sent Events; a new event
// wakes every stream by closing one channel. N pages cost N idle goroutines
// and one copy per event each, never N reads of the history or the state.
// The /v1/events?follow=1 stream stays as it was for the CLI: it reads the
// history per client and ends on a deposed leader, right for `netmgr
// events` but not for a hundred pages.
//
// Failover. Reads use ?stale, so any server answers; writes are forwarded
// to the leader as the CLI's are. When the page's server dies the page
// moves its stream and reads to another server named by /v1/servers; the
// servers allow CORS with credentials for the group's own gossiped API
// addresses only. The cookie is per host name, so this works for servers
// that share one; elsewhere the page asks to sign in on the new server.
package ui
