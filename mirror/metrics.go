package mirror

import (
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are what a mirror reports on /metrics.
type metrics struct {
	reg      *prometheus.Registry
	handler  http.Handler
	requests *prometheus.CounterVec
	reloads  *prometheus.CounterVec
	// hot keeps the request counters of each route for the usual codes,
	// resolved the first time they occur, so that a request looks up no
	// labels.
	hot map[string]*[len(hotCodes)]atomic.Pointer[prometheus.Counter]
}

// The routes mirrorRoute names and the status codes whose counters are
// kept at hand; others are looked up by label per request.
var (
	routeNames = []string{"index", "healthz", "metrics", "static", "api_meta", "api_unknown", "raw", "view", "unknown"}
	hotCodes   = [...]int{200, 206, 304, 400, 404, 405, 500, 503}
)

// count counts one request to route answered with code.
func (mm *metrics) count(route string, code int) {
	slots, ci := mm.hot[route], slices.Index(hotCodes[:], code)
	if slots == nil || ci < 0 {
		mm.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
		return
	}
	if c := slots[ci].Load(); c != nil {
		(*c).Inc()
		return
	}
	c := mm.requests.WithLabelValues(route, strconv.Itoa(code))
	slots[ci].Store(&c)
	c.Inc()
}

func newMetrics(m *Server) *metrics {
	reg := prometheus.NewRegistry()
	mm := &metrics{
		reg:     reg,
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastenode_mirror_http_requests_total",
			Help: "HTTP requests to the mirror by route and status code.",
		}, []string{"route", "code"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastenode_mirror_reloads_total",
			Help: "Archive files loaded after a change, by result (ok, error).",
		}, []string{"result"}),
	}
	mm.hot = make(map[string]*[len(hotCodes)]atomic.Pointer[prometheus.Counter], len(routeNames))
	for _, name := range routeNames {
		mm.hot[name] = new([len(hotCodes)]atomic.Pointer[prometheus.Counter])
	}
	mm.reloads.WithLabelValues("ok")
	mm.reloads.WithLabelValues("error")
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		mm.requests, mm.reloads,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pastenode_mirror_pastes",
			Help: "Pastes in the archive served now.",
		}, func() float64 { return float64(m.Pastes()) }),
	)
	return mm
}
