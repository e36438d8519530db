package dispatch

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

// CloudEvents 1.0 in the structured content mode of the HTTP binding,
// written out (ADR 0240 says why not the SDK): the body is the event as
// one JSON object, Content-Type application/cloudevents+json. The
// signature covers exactly these bytes, so the receiver verifies what it
// parses.

// ContentType is the media type of a delivery's body.
const ContentType = "application/cloudevents+json"

// BatchContentType is the media type of a delivery in the batched mode
// (Config.EventsPerRequest above 1): a JSON array of CloudEvents.
const BatchContentType = "application/cloudevents-batch+json"

// TypePrefix starts every CloudEvents type: "claimcheck." and the event's
// kind (claimcheck.EventKinds).
const TypePrefix = "claimcheck."

// CloudEvent is a delivery's body.
type CloudEvent struct {
	SpecVersion     string           `json:"specversion"`
	ID              string           `json:"id"`
	Source          string           `json:"source"`
	Type            string           `json:"type"`
	Subject         string           `json:"subject,omitempty"`
	Time            time.Time        `json:"time"`
	DataContentType string           `json:"datacontenttype"`
	Data            claimcheck.Event `json:"data"`
}

// EventID is an event's stable id: its seq, the same in every delivery
// of it, in the live stream (the SSE id), and as the webhook-id.
func EventID(seq int64) string { return strconv.FormatInt(seq, 10) }

// Public is the event as the API shows it.
func Public(e meta.FeedEvent) claimcheck.Event {
	return claimcheck.Event{Seq: e.Seq, At: e.At, Kind: e.Kind, Namespace: e.Namespace, Tenant: e.Tenant,
		ClaimID: e.ClaimID, BlobID: e.BlobID, Actor: e.Actor, Reason: e.Reason, Detail: e.Detail}
}

// NewCloudEvent wraps an event. Its source is the namespace the event
// happened in, or the tenant for events outside every namespace.
func NewCloudEvent(e meta.FeedEvent) CloudEvent {
	source := "/claimcheck/tenants/" + e.Tenant
	if e.Namespace != "" {
		source += "/namespaces/" + e.Namespace
	}
	return CloudEvent{SpecVersion: "1.0", ID: EventID(e.Seq), Source: source, Type: TypePrefix + e.Kind,
		Subject: e.ClaimID, Time: e.At, DataContentType: "application/json", Data: Public(e)}
}

// Marshal is the body of a delivery.
func (c CloudEvent) Marshal() []byte {
	b, _ := json.Marshal(c) // strings and times only: it always marshals
	return b
}

// MarshalBatch is the body of a batched delivery: the events' CloudEvents
// as one JSON array, in the order given.
func MarshalBatch(es []meta.FeedEvent) []byte {
	b := []byte{'['}
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, NewCloudEvent(e).Marshal()...)
	}
	return append(b, ']')
}

// Match reports whether filter selects e. Events of another tenant never
// match: the caller reads the feed of the filter's tenant.
func Match(f claimcheck.EventFilter, e meta.FeedEvent) bool {
	if len(f.Types) > 0 && !slices.Contains(f.Types, e.Kind) {
		return false
	}
	if len(f.Namespaces) > 0 && !slices.Contains(f.Namespaces, e.Namespace) {
		return false
	}
	for k, v := range f.Labels {
		if have, ok := e.Labels[k]; !ok || have != v {
			return false
		}
	}
	return true
}
