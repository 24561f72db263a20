package api

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed web/index.html web/app.js web/app.css
var webFS embed.FS

//go:embed web/openapi.json
var openAPI []byte

// webHandler serves the single page and its two assets; nothing is loaded
// from the internet.
func webHandler() http.Handler {
	sub, _ := fs.Sub(webFS, "web")
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
		switch r.URL.Path {
		case "/", "/index.html":
			b, _ := webFS.ReadFile("web/index.html")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(b)
		case "/static/app.js", "/static/app.css":
			r2 := r.Clone(r.Context())
			r2.URL.Path = r.URL.Path[len("/static"):]
			files.ServeHTTP(w, r2)
		default:
			http.NotFound(w, r)
		}
	})
}
