// Package console serves the operator console: the static pages at
// /console/ that show namespaces, claims and their timelines, deliveries,
// dead letters, holds and live events by calling the HTTP API from the
// browser (ADR 0282).
//
// The pages are built from server/console/web (plain JavaScript modules
// and uPlot, from its committed npm lockfile) into dist/, which is
// committed and embedded here, so that `go build` needs no Node and the
// binary fetches nothing at run time; scripts/console-test.sh builds them
// again and fails when dist/ differs (ADR 0283).
//
// The console holds no credential of its own and the server gives it no
// data: every figure comes from the API the page calls with the API key
// the operator typed, under the same roles and tenant scoping as any
// client. Its answers carry a Content-Security-Policy that allows only
// this origin's scripts, styles and connections, and nothing inline.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed dist
var dist embed.FS

// Prefix is the path the console is served under.
const Prefix = "/console/"

// ContentSecurityPolicy is sent with every answer under Prefix: the
// page's scripts, styles, images and fetches come from its own origin
// only, none inline (no 'unsafe-inline', no eval), it cannot be framed,
// and it posts no form anywhere.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Assets are the embedded files, rooted at dist/ (index.html, app.js,
// app.css).
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded: a build without it does not compile
	}
	return sub
}

// Handler answers GET and HEAD under Prefix with the embedded files,
// index.html for the prefix itself; anything else is 404 (the pages
// route by the URL's fragment, so no other path is a page).
func Handler() http.Handler {
	assets := Assets()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" {
			name = "index.html"
		}
		if name != path.Clean(name) || strings.Contains(name, "/") {
			http.NotFound(w, r) // the build writes a flat directory
			return
		}
		b, err := fs.ReadFile(assets, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", contentType(name))
		// The file names carry no hash: a browser asks again each time,
		// and the answer is small.
		h.Set("Cache-Control", "no-cache")
		if r.Method == http.MethodGet {
			_, _ = w.Write(b) // a browser that hung up has its answer
		}
	})
}

// contentType names the few kinds of file the build writes.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".png":
		return "image/png"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// Mount returns api with the console in front of it: GET /console/... is
// the console's, /console redirects there, every other request is api's.
// The console's own files pass no API limit or metric: they are static
// and the same for everyone, and every call the page then makes is an
// API request like any other.
func Mount(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Prefix, Handler())
	mux.Handle("/console", http.RedirectHandler(Prefix, http.StatusMovedPermanently))
	mux.Handle("/", api)
	return mux
}
