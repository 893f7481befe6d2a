// Package metrics exposes ams's Prometheus metrics: API requests by route,
// method and status with their latency, webhook deliveries by outcome,
// the leases that ran out unrecorded, and the delivery queue's depth and
// oldest pending age.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// QueueStats reports the delivery queue: how many deliveries are pending
// and how long the oldest due one has waited.
type QueueStats func(ctx context.Context) (pending int64, oldest time.Duration, err error)

// Metrics holds the collectors of one process.
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	deliveries *prometheus.CounterVec
	expired    prometheus.Counter
}

// New returns the metrics of a process, with the Go runtime and process
// collectors registered.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ams_http_requests_total",
			Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ams_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ams_webhook_deliveries_total",
			Help: "Webhook delivery attempts by outcome: succeeded, retry (failed, will be retried), failed (last attempt failed or 410; webhook marked failing).",
		}, []string{"outcome"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ams_webhook_leases_expired_total",
			Help: "Webhook jobs claimed again after their lease ran out with no attempt recorded (the claiming worker died, or its claim or record was lost); counted by the process that claims them again. 0 while no process dies.",
		}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.deliveries, m.expired,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveRequest counts one answered request. route is the matched
// pattern ("GET /v1/messages/{id}"), never the raw path, so ids do not
// multiply the series.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
}

// Delivery counts one webhook delivery attempt by outcome.
func (m *Metrics) Delivery(outcome string) { m.deliveries.WithLabelValues(outcome).Inc() }

// LeaseExpired counts one job claimed again after its lease ran out with
// no attempt recorded.
func (m *Metrics) LeaseExpired() { m.expired.Inc() }

// WatchQueue adds gauges read from stats at each scrape.
func (m *Metrics) WatchQueue(stats QueueStats) {
	read := func(f func(int64, time.Duration) float64) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, age, err := stats(ctx)
			if err != nil {
				return -1
			}
			return f(n, age)
		}
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ams_webhook_queue_depth", Help: "Webhook deliveries pending (due or waiting for a retry); -1 if the store could not be read."},
			read(func(n int64, _ time.Duration) float64 { return float64(n) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ams_webhook_oldest_pending_seconds", Help: "How long the oldest due webhook delivery has waited, in seconds; -1 if the store could not be read."},
			read(func(_ int64, age time.Duration) float64 { return age.Seconds() })),
	)
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
