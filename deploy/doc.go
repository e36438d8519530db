// Package deploy holds claimcheck's deployment files — Prometheus alert
// rules (prometheus/alerts.yaml), a Grafana dashboard
// (grafana/claimcheck.json) and an example systemd unit
// (systemd/claimcheck.service) — and the test that validates the first two
// against a running server.
//
// It is a Go module of its own because the validation uses Prometheus'
// rule and PromQL parsers (github.com/prometheus/prometheus), a large
// dependency the core module must not carry. For the same reason it is not
// in go.work (its versions would be forced on the Temporal module too): it
// builds alone, `GOWORK=off go test ./...` in this folder, against the
// root module by a replace directive.
package deploy
