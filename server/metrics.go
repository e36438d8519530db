package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimcheck/claimcheck/server/api"
)

// routeUnmatched is the route label of requests that match no pattern;
// using it instead of the raw path keeps the label set bounded.
const routeUnmatched = "unmatched"

// metrics are the server's own instruments. They are kept out of the
// handlers: ServeHTTP observes every request from the outside.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		requests: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimcheck_http_requests_total",
			Help: "HTTP requests answered, by route (the mux pattern) and status code.",
		}, []string{"route", "code"})),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "claimcheck_http_request_duration_seconds",
			Help: "Time to answer HTTP requests, by route, including streaming the payload.",
			// Payload transfers take far longer than API calls: 1ms … ~4.4min.
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"route"})),
		inFlight: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "claimcheck_http_requests_in_flight",
			Help: "HTTP requests being answered.",
		})),
	}
}

// register registers c, or returns the collector already registered under
// the same description, so that several Servers can share one registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(fmt.Sprintf("server: register metrics: %v", err))
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	if route == "" {
		route = routeUnmatched
	}
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

// recorder remembers the status written, for the metrics, and turns the
// mux's plain-text answers to unrouted requests (404, 405) into JSON
// errors like all others. It unwraps for http.ResponseController.
type recorder struct {
	http.ResponseWriter
	req     *http.Request
	status  int
	swallow bool // the mux's own body is dropped: the JSON error replaced it
	// allowed lists the methods that work on a path (strict.go): the
	// mux's own Allow offers HEAD wherever GET works, even where HEAD is
	// refused.
	allowed func(*http.Request) string
}

func (rec *recorder) WriteHeader(code int) {
	if rec.status != 0 || code < 200 {
		rec.ResponseWriter.WriteHeader(code)
		return
	}
	rec.status = code
	// The mux has set r.Pattern before calling any handler; it is empty
	// only for its own not-found and method-not-allowed handlers (and
	// path-cleaning redirects, which pass through).
	if rec.req.Pattern == "" && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		rec.swallow = true
		body := api.Error{
			Code:    api.CodeNoRoute,
			Message: fmt.Sprintf("no route for %s %s; the routes are listed in docs/HTTP.md", rec.req.Method, rec.req.URL.Path),
		}
		if code == http.StatusMethodNotAllowed {
			allow := rec.Header().Get("Allow")
			if rec.allowed != nil {
				allow = rec.allowed(rec.req)
				rec.Header().Set("Allow", allow)
			}
			body = api.Error{
				Code:    api.CodeMethodNotAllowed,
				Message: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", rec.req.Method, rec.req.URL.Path, allow),
			}
		}
		writeJSON(rec.ResponseWriter, code, body)
		return
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	if rec.swallow {
		return len(b), nil
	}
	return rec.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController (flushes, deadlines) the
// underlying writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// Flush passes flushes through; promhttp and streaming callers look for
// http.Flusher directly.
func (rec *recorder) Flush() {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	// Not every writer flushes (a test recorder, a wrapped writer); the
	// answer then goes out when the handler returns.
	_ = http.NewResponseController(rec.ResponseWriter).Flush()
}

// statusCode is the status the client got (200 if the handler wrote
// nothing, as net/http does).
func (rec *recorder) statusCode() int {
	if rec.status == 0 {
		return http.StatusOK
	}
	return rec.status
}
