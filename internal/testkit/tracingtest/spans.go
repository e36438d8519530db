// Package tracingtest reads the spans a test exported to OpenTelemetry's
// in-memory exporter: find a span by name, its children, its
// attributes. The engine's and the server's tracing tests share it.
package tracingtest

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Spans are the ended spans of one step of a test.
type Spans []tracetest.SpanStub

// Named is the one span named name; the test fails when there is not
// exactly one.
func (sp Spans) Named(t testing.TB, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range sp {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans: %v", len(found), name, sp.Names())
	}
	return found[0]
}

// WithCount is the one span named name whose attribute key is 1 (a page
// of background work that did one item; its last page finds nothing).
func (sp Spans) WithCount(t testing.TB, name, key string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range sp {
		if v, _ := Attr(s, key); s.Name == name && v.AsInt64() == 1 {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q with %s = 1, want 1; spans: %v", len(found), name, key, sp.Names())
	}
	return found[0]
}

// Names are the spans' names, in the order they ended.
func (sp Spans) Names() []string {
	var n []string
	for _, s := range sp {
		n = append(n, s.Name)
	}
	return n
}

// Children counts the spans whose parent is p, by name.
func (sp Spans) Children(p tracetest.SpanStub) map[string]int {
	out := map[string]int{}
	for _, s := range sp {
		if s.Parent.SpanID() == p.SpanContext.SpanID() && s.Parent.TraceID() == p.SpanContext.TraceID() {
			out[s.Name]++
		}
	}
	return out
}

// WantChildren fails the test unless p has a child of each name.
func (sp Spans) WantChildren(t testing.TB, p tracetest.SpanStub, names ...string) {
	t.Helper()
	kids := sp.Children(p)
	for _, n := range names {
		if kids[n] == 0 {
			t.Fatalf("span %s has no child %q; children: %v", p.Name, n, kids)
		}
	}
}

// Attr is the attribute key of s.
func Attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// WantAttr fails the test unless s has attribute key with the value
// want (compared as attribute.Value.AsInterface gives it: int64, bool,
// string, ...).
func WantAttr(t testing.TB, s tracetest.SpanStub, key string, want any) {
	t.Helper()
	v, ok := Attr(s, key)
	if !ok {
		t.Fatalf("span %s has no attribute %s; has %v", s.Name, key, s.Attributes)
	}
	if got := v.AsInterface(); got != want {
		t.Fatalf("span %s: %s = %v (%T), want %v (%T)", s.Name, key, got, got, want, want)
	}
}

// Linked reports whether s links to the span of to.
func Linked(s tracetest.SpanStub, to tracetest.SpanStub) bool {
	for _, l := range s.Links {
		if l.SpanContext.SpanID() == to.SpanContext.SpanID() && l.SpanContext.TraceID() == to.SpanContext.TraceID() {
			return true
		}
	}
	return false
}
