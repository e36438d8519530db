// Package deploy holds claimcheck's deployment files — Prometheus alert
// rules (prometheus/alerts.yaml), a Grafana dashboard
// (grafana/claimcheck.json), an example systemd unit
// (systemd/claimcheck.service) and the container image's Containerfile
// (container/, built by scripts/image.sh) — and the tests that validate
// the first two against a running server and the Containerfile
// statically. The Helm chart and the plain Kubernetes manifests
// (helm/claimcheck, kubernetes/) are tested by the module in helm/.
//
// It is a Go module of its own because the validation uses Prometheus'
// rule and PromQL parsers (github.com/prometheus/prometheus), a large
// dependency the core module must not carry. For the same reason it is not
// in go.work (its versions would be forced on the Temporal module too): it
// builds alone, `GOWORK=off go test ./...` in this folder, against the
// root module by a replace directive.
package deploy
