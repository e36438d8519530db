package server

import (
	"fmt"
	"net/http"
	"time"
)

// Live event streams per tenant (ADR 0270). A stream polls the metadata
// store for as long as it is open, so one tenant opening streams without
// bound would grow the server's idle work for everyone; this process
// counts them per tenant (http.max_event_streams_per_tenant). Past the
// bound a new stream is refused rate_limited (429, Retry-After), like the payload
// streams per key (http.max_streams_per_key, limits.go): the client may
// try again once one of its streams has closed.

// DefaultMaxEventStreamsPerTenant is http.max_event_streams_per_tenant
// in `claimcheck serve` when unset.
const DefaultMaxEventStreamsPerTenant = 16

// acquireEventStream takes one of tenant's stream slots; release gives
// it back when the stream ends.
// A refusal carries Retry-After, as every rate_limited answer does.
func (s *Server) acquireEventStream(w http.ResponseWriter, tenant string) (release func(), err error) {
	release, ok := s.eventStreams.acquire(tenant)
	if !ok {
		w.Header().Set("Retry-After", retryAfterSeconds(time.Second))
		return nil, &rateLimited{
			limit: fmt.Sprintf("%d event streams open at once per tenant on this server, and tenant %s has them (http.max_event_streams_per_tenant)",
				s.limits.MaxEventStreamsPerTenant, tenant),
			retryAfter: time.Second,
		}
	}
	return release, nil
}
