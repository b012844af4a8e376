package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

// files holds the page: index.html, app.css, app.js.
//
//go:embed static
var files embed.FS

// Static serves the page's files under /ui/. They are public: the page
// itself holds nothing but code, and signs in before it reads anything.
func Static() http.Handler {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic("ui: embedded static directory missing: " + err.Error()) // built in; cannot happen
	}
	fsrv := http.StripPrefix("/ui/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setPageHeaders(w)
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

// setPageHeaders sets the headers that keep the page to itself: no
// framing, no inline scripts or scripts from elsewhere, no sniffing.
func setPageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' https: http:; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}
