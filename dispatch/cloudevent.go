package dispatch

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

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
// (a subscription's events_per_request, or Config.EventsPerRequest, above 1): a JSON array of CloudEvents.
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
func MarshalBatch(es []meta.FeedEvent) []byte { return appendBatch(nil, es) }

func appendBatch(b []byte, es []meta.FeedEvent) []byte {
	b = append(b, '[')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCloudEvent(b, e)
	}
	return append(b, ']')
}

// appendCloudEvent appends NewCloudEvent(e).Marshal() to b, written out
// byte for byte as encoding/json writes it (the tests hold the two
// equal) but without its reflection and allocations: a delivery is
// encoded once per event on the machine that serves the puts.
func appendCloudEvent(b []byte, e meta.FeedEvent) []byte {
	b = append(b, `{"specversion":"1.0","id":"`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `","source":"/claimcheck/tenants/`...)
	b = appendJSONText(b, e.Tenant)
	if e.Namespace != "" {
		b = append(b, "/namespaces/"...)
		b = appendJSONText(b, e.Namespace)
	}
	b = append(b, `","type":"`+TypePrefix...)
	b = appendJSONText(b, e.Kind)
	b = append(b, '"')
	if e.ClaimID != "" {
		b = append(b, `,"subject":"`...)
		b = appendJSONText(b, e.ClaimID)
		b = append(b, '"')
	}
	b = append(b, `,"time":`...)
	b = appendJSONTime(b, e.At)
	b = append(b, `,"datacontenttype":"application/json","data":{"seq":"`...) // a string (ADR 0273)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `","at":`...)
	b = appendJSONTime(b, e.At)
	b = append(b, `,"kind":"`...)
	b = appendJSONText(b, e.Kind)
	b = append(b, '"')
	for _, f := range [...]struct{ name, v string }{
		{`,"ns":"`, e.Namespace}, {`,"tenant":"`, e.Tenant}, {`,"claim_id":"`, e.ClaimID},
		{`,"blob_id":"`, e.BlobID}, {`,"actor":"`, e.Actor}, {`,"reason":"`, e.Reason}, {`,"detail":"`, e.Detail},
	} {
		if f.v != "" {
			b = append(b, f.name...)
			b = appendJSONText(b, f.v)
			b = append(b, '"')
		}
	}
	return append(b, "}}"...)
}

// appendJSONTime writes t as encoding/json does (time.Time's
// MarshalJSON: RFC 3339 with nanoseconds, quoted).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendJSONText writes s as the inside of a JSON string, escaped as
// encoding/json escapes it: quote, backslash and control characters,
// <, > and & (HTML-safe), U+2028 and U+2029, and invalid UTF-8 as
// U+FFFD.
func appendJSONText(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
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
