package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/server/api"
)

// How a live stream begins and ends (ADR 0273).

// streamSkew is how far past this server's clock a Last-Event-ID may
// be before it is refused as past the head: seqs are event times in
// Unix nanoseconds, written by every replica with its own clock, so an
// id a little ahead of this one's is another replica's recent event,
// which this stream reaches within the skew.
const streamSkew = time.Minute

// streamRetryOnShutdown is the reconnection time a stream ended by a
// shutdown tells its client (the SSE retry field): soon, since another
// replica is serving.
const streamRetryOnShutdown = 250 * time.Millisecond

// streamBounds is what streamStart needs of the store.
type streamBounds interface {
	StreamBounds() (retained, head int64)
}

// streamStart resolves where a stream begins: the seq it reads after.
// No id, or 0, is from now (the head); "oldest" is from the oldest event
// retained; an id is checked against the bounds, so that a stream that
// could never send an event, or would silently skip pruned ones, is an
// error the client sees instead of silence.
func streamStart(from api.StreamFrom, b streamBounds) (int64, error) {
	retained, head := b.StreamBounds()
	switch {
	case from.Oldest:
		return 0, nil
	case from.After == 0:
		return head, nil
	case from.After > head+int64(streamSkew):
		return 0, fmt.Errorf("%w: %s: event %d is past the newest event (ids are event times in Unix nanoseconds; "+
			"this server is at %d): give the id of the last event received, %s, or none for from now",
			claimcheck.ErrInvalidArgument, from.Field, from.After, head, api.StreamOldest)
	case from.After < retained:
		return 0, fmt.Errorf("%w: %s: event %d is before the retention bound %d (events.retention): "+
			"events after it may have been pruned; start again with %s, or with none for from now",
			claimcheck.ErrGone, from.Field, from.After, retained, api.StreamOldest)
	}
	return from.After, nil
}

// shutdownKey is the context key of the channel closed when the server
// begins to shut down (ServeWith sets it on every request's context).
type shutdownKey struct{}

// shuttingDown returns the channel closed when the server serving the
// request begins to shut down; nil (never ready) when it was served some
// other way.
func shuttingDown(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(shutdownKey{}).(chan struct{})
	return ch
}

// endStream writes a stream's last message when the server shuts down:
// a named event the client's event handlers do not see ("shutdown", no
// id, so the last event id stays the client's resume point) and a retry
// hint, so that an EventSource or a client of ours reconnects soon,
// with Last-Event-ID, and reaches a replica that serves.
func endStream(w io.Writer, rc *http.ResponseController) {
	_, _ = fmt.Fprintf(w, "retry: %d\nevent: %s\ndata: {\"reason\":\"server shutting down: reconnect with Last-Event-ID\"}\n\n",
		streamRetryOnShutdown.Milliseconds(), api.StreamShutdown)
	_ = rc.Flush()
}
