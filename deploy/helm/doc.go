// Package helm holds the test of claimcheck's Helm chart (claimcheck/)
// and of the plain Kubernetes manifests rendered from it
// (../kubernetes/), run without a cluster and without a helm binary:
// the chart is linted and rendered for each values example with Helm's
// own Go packages (what `helm lint` and `helm template` run), and every
// rendered object is decoded strictly against the Kubernetes API types,
// so that an unknown or misspelt field fails.
//
// It is a Go module of its own because Helm and the Kubernetes client
// libraries are large dependencies no other module needs: it builds
// alone, `GOWORK=off go test ./...` in this folder. After changing the
// chart, `GOWORK=off go test ./... -update` rewrites ../kubernetes/ and
// the chart's copy of the alert rules.
package helm
