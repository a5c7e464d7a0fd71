package mirror

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pastenode/pastenode/ui"
)

// metrics are what a mirror reports on /metrics.
type metrics struct {
	reg     *prometheus.Registry
	expose  http.Handler // serves /metrics
	counted http.Handler // serves every request and counts it
	reloads *prometheus.CounterVec
}

func newMetrics(m *Server) *metrics {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pastenode_mirror_http_requests_total",
		Help: "HTTP requests to the mirror by route and status code.",
	}, []string{"route", "code"})
	mm := &metrics{
		reg:    reg,
		expose: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		// Route names, never paths, are the label values, so that paste
		// ids never become series.
		counted: promhttp.InstrumentHandlerCounter(requests, http.HandlerFunc(m.serve),
			promhttp.WithLabelFromRequest("route", func(r *http.Request) string {
				route, _ := mirrorRoute(r.URL.Path, ui.WantsHTML(r))
				return route
			})),
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
		requests, mm.reloads,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pastenode_mirror_pastes",
			Help: "Pastes in the archive served now.",
		}, func() float64 { return float64(m.Pastes()) }),
	)
	return mm
}
