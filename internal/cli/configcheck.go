package cli

import (
	"fmt"
	"net"

	"github.com/claimcheck/claimcheck"
)

// validate checks every section of the file as soon as it is read, so
// that serve and the operator commands refuse a bad value at start,
// naming its key, before they open a database or a bucket: the store's
// sections (engine.Config.Validate: policies, tenants, sweeper, tracing,
// subscriptions, the storage and metadata URLs), the http section's
// limits and CORS, and the metrics section. Flags that win over the file
// (serve --listen, --auth) are checked where they are applied.
func (fc fileConfig) validate() error {
	if err := fc.Config.Validate(); err != nil {
		return err
	}
	if err := fc.HTTP.Limits.WithAuthDefaults(fc.Auth).Validate(); err != nil {
		return err // its errors name http.<key>
	}
	return fc.Metrics.validate(fc.Listen)
}

// validate refuses a metrics.listen that is no host:port, or the API's
// own address (the two listeners would collide).
func (m metricsConfig) validate(listen string) error {
	if m.Listen == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(m.Listen)
	if err != nil {
		return &claimcheck.FieldError{Field: "metrics.listen", Got: fmt.Sprintf("%q", m.Listen), Reason: "want host:port, e.g. 0.0.0.0:9090"}
	}
	if m.Listen == listen && port != "0" {
		return &claimcheck.FieldError{Field: "metrics.listen", Got: fmt.Sprintf("%q", m.Listen), Reason: "must differ from listen, the API's address"}
	}
	return nil
}
