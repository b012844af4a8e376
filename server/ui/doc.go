// Package ui is the dashboard every server serves at /ui: the plain HTML,
// CSS and JavaScript files of a single page (embedded with go:embed, no
// build toolchain), the sign-in that turns an API token into a cookie,
// and the Hub that fans one server's event feed out to every open page
// over Server-Sent Events.
//
// The page reads and acts through the same /v1 JSON API as the CLI; the
// server accepts the cookie as the page's bearer token (see Cookie and
// CSRFHeader), so every action is authorised exactly as the CLI's.
package ui
