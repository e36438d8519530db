package meta

import (
	"reflect"
	"testing"
)

// TestOperationTable checks the generated table against Store itself:
// every method but Close is an operation, under its own name, once, and
// the table names nothing else. An empty name would make a span "meta "
// and an unlabelled series; a method missing from the table would not
// compile, but one named twice, or a name left over, would.
func TestOperationTable(t *testing.T) {
	methods := map[string]bool{}
	for m := range reflect.TypeFor[Store]().Methods() {
		if m.Name != "Close" {
			methods[m.Name] = true
		}
	}
	seen := map[string]int{}
	for op, name := range opNames {
		if name == "" {
			t.Errorf("operation %d has no name", op)
			continue
		}
		if !methods[name] {
			t.Errorf("operation %d is named %q, which is no method of Store", op, name)
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("operations %d and %d are both named %q", prev, op, name)
		}
		seen[name] = op
	}
	for name := range methods {
		if _, ok := seen[name]; !ok {
			t.Errorf("method %s of Store is no operation: run go generate ./meta", name)
		}
	}
	w := Instrument(nil, Instrumentation{}).(*instrumented)
	for op, o := range w.ops {
		if o.spanName != "meta "+opNames[op] || o.duration == nil || o.results[resError] == nil {
			t.Errorf("operation %q: span name %q, instruments bound: %v", opNames[op], o.spanName, o.duration != nil)
		}
	}
}
