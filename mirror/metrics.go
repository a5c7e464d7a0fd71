package mirror

import (
	"net/http"

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
