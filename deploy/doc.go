// Package deploy holds claimcheck's deployment files — Prometheus alert
// rules (prometheus/alerts.yaml), a Grafana dashboard
// (grafana/claimcheck.json) and an example systemd unit
// (systemd/claimcheck.service) — and the test that validates the first two
// against a running server.
//
// It is a Go module of its own because the validation uses Prometheus'
// rule and PromQL parsers (github.com/prometheus/prometheus), a large
// dependency the core module must not carry.
package deploy
