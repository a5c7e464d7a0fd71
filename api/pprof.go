package api

import (
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/gorilla/mux"
)

// pprofRoutes serves Go's profiles under /debug/pprof/ to admins only, so
// that a running node can be profiled under load (curl the profile with
// the admin token, then go tool pprof the file). Profiles show the
// process's command line and memory, which is why they are not public.
func (s *Server) pprofRoutes(r *mux.Router) {
	r.PathPrefix("/debug/pprof/").Handler(s.admin(handlePprof)).Methods(http.MethodGet, http.MethodPost).Name("pprof")
}

// handlePprof sends the profile that the path names; the index lists them.
func handlePprof(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		// The index, and every named profile: heap, allocs, goroutine, ...
		pprof.Index(w, r)
	}
}
