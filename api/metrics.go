package api

import (
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pastenode/pastenode/internal/httpx"
)

type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	creates  prometheus.Counter
	burns    prometheus.Counter
	// tokenCreates counts creates by the name of their create token,
	// never by the token itself.
	tokenCreates *prometheus.CounterVec
}

func newMetrics(store Store) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastenode_http_requests_total",
			Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pastenode_http_request_duration_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route"}),
		creates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pastenode_creates_total", Help: "Pastes created through this node.",
		}),
		burns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pastenode_burns_total", Help: "Burn-after-read pastes handed out by this node.",
		}),
		tokenCreates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastenode_token_creates_total",
			Help: "Pastes created through this node with --create-tokens, by the token's name (\"unnamed\" when its line has none).",
		}, []string{"token"}),
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.latency, m.creates, m.burns, m.tokenCreates,
		gauge("pastenode_pastes", "Live pastes in the store.", func() float64 { n, _ := store.Stats(); return float64(n) }),
		gauge("pastenode_paste_bytes", "Content bytes of the live pastes.", func() float64 { _, b := store.Stats(); return float64(b) }),
		gauge("pastenode_raft_leader", "1 if this node is the Raft leader.", func() float64 {
			if store.Info().State == "leader" {
				return 1
			}
			return 0
		}),
		gauge("pastenode_raft_term", "Current Raft term.", func() float64 { return float64(store.Info().Term) }),
		gauge("pastenode_raft_commit_index", "Raft commit index.", func() float64 { return float64(store.Info().CommitIndex) }),
		gauge("pastenode_raft_applied_index", "Raft applied index.", func() float64 { return float64(store.Info().AppliedIndex) }),
		gauge("pastenode_raft_last_contact_seconds", "Seconds since this node last heard from the leader: 0 on the leader, -1 if never.",
			func() float64 {
				if c := store.Info().LastContact; c >= 0 {
					return c.Seconds()
				}
				return -1
			}),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// instrumentRoutes wraps the handler of every route of router, once, in
// the security headers and the request metrics of its route name
// ("unknown" for a route without one), so that paste ids never become
// label values. gorilla/mux's Use would build the same chain again on every
// request; here a request only runs it.
func (s *Server) instrumentRoutes(router *mux.Router) {
	byName := map[string]*routeMetrics{}
	_ = router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		h := route.GetHandler()
		if h == nil {
			return nil
		}
		name := route.GetName()
		if name == "" {
			name = "unknown"
		}
		rm := byName[name]
		if rm == nil {
			rm = s.metrics.route(name)
			byName[name] = rm
		}
		route.Handler(secureHeaders(instrument(rm, h)))
		return nil
	})
	s.rawMetrics = byName["raw"]
}

// instrument counts the requests next answers and their latency with
// rm's instruments.
func instrument(rm *routeMetrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &httpx.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		rm.observe(r.Method, rec.Code(), start)
	})
}

// observe counts one request of method answered with code on the route,
// and its latency since start: the one place that counts a request, for
// net/http's routes and the fast path alike.
func (rm *routeMetrics) observe(method string, code int, start time.Time) {
	rm.counter(method, code).Inc()
	rm.latency.Observe(time.Since(start).Seconds())
}

func (m *metrics) route(name string) *routeMetrics {
	return &routeMetrics{
		name:     name,
		latency:  m.latency.WithLabelValues(name),
		requests: m.requests,
	}
}

// The methods and status codes whose counters a route keeps at hand;
// others are looked up by label per request.
var (
	hotMethods = [...]string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete}
	hotCodes   = [...]int{200, 201, 204, 206, 304, 400, 403, 404, 405, 413, 429, 500, 503}
)

// routeMetrics are the instruments of one route, with its label values
// resolved: the latency observer at once, the request counters the first
// time a method and code occur (so that /metrics lists only what
// happened).
type routeMetrics struct {
	name     string
	latency  prometheus.Observer
	requests *prometheus.CounterVec
	hot      [len(hotMethods)][len(hotCodes)]atomic.Pointer[prometheus.Counter]
}

// counter returns the request counter of method and code on this route.
func (rm *routeMetrics) counter(method string, code int) prometheus.Counter {
	mi, ci := slices.Index(hotMethods[:], method), slices.Index(hotCodes[:], code)
	if mi < 0 || ci < 0 {
		return rm.requests.WithLabelValues(rm.name, method, strconv.Itoa(code))
	}
	slot := &rm.hot[mi][ci]
	if c := slot.Load(); c != nil {
		return *c
	}
	c := rm.requests.WithLabelValues(rm.name, method, strconv.Itoa(code))
	slot.Store(&c)
	return c
}
