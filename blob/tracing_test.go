package blob_test

import (
	"context"
	"io"
	"reflect"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/internal/testkit/tracingtest"
)

// spanOf is the span name of each method of Store and of the optional
// abilities that takes a context: a method added to one of them fails
// TestTracingEveryOperation until it is traced and named here.
var spanOf = map[string]string{
	"NewReader": "blob get", "NewRangeReader": "blob get", "NewWriter": "blob put",
	"Attributes": "blob attributes", "Delete": "blob delete", "List": "blob list",
	"DeleteMany": "blob delete_many", "PresignPut": "blob presign",
	"LifecycleRules": "blob get_lifecycle", "PutLifecycleRules": "blob put_lifecycle",
	"BeginAppend": "blob begin_append", "Append": "blob append",
	"CompleteAppend": "blob complete_append", "AbortAppend": "blob abort_append",
	"CORSRules": "blob get_cors", "PutCORSRules": "blob put_cors",
}

var contextType = reflect.TypeFor[context.Context]()

// TestTracingEveryOperation calls every method of Store and of every
// optional ability that takes a context through WithTracing, in a trace,
// and checks that each made exactly one span, named after its operation:
// no storage call goes untraced or unnamed.
func TestTracingEveryOperation(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	mem, err := blob.Open(t.Context(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAbilities{}
	s := blob.WithTracing(carrying{mem, blob.Abilities{BatchDeleter: f, Presigner: f, Lifecycler: f, Appender: f, CORSConfigurer: f}}, tp)
	a := blob.AbilitiesOf(s)
	ctx, parent := tp.Tracer("test").Start(t.Context(), "test")
	defer parent.End()

	for _, target := range []struct {
		iface reflect.Type
		impl  any
	}{
		{reflect.TypeFor[blob.Store](), s},
		{reflect.TypeFor[blob.BatchDeleter](), a.BatchDeleter},
		{reflect.TypeFor[blob.Presigner](), a.Presigner},
		{reflect.TypeFor[blob.Lifecycler](), a.Lifecycler},
		{reflect.TypeFor[blob.Appender](), a.Appender},
		{reflect.TypeFor[blob.CORSConfigurer](), a.CORSConfigurer},
	} {
		v := reflect.ValueOf(target.impl)
		for m := range target.iface.Methods() {
			if m.Type.NumIn() == 0 || m.Type.In(0) != contextType {
				continue // no operation: Close, MaxBatch, CORSRequestHeaders
			}
			exp.Reset()
			out := v.MethodByName(m.Name).Call(arguments(ctx, m.Type))
			if c, ok := out[0].Interface().(io.Closer); ok {
				c.Close() // a stream's span ends at its Close
			}
			want, ok := spanOf[m.Name]
			if !ok {
				t.Errorf("%s.%s has no span name in spanOf", target.iface.Name(), m.Name)
				continue
			}
			if got := tracingtest.Spans(exp.GetSpans()).Names(); len(got) != 1 || got[0] != want {
				t.Errorf("%s.%s made spans %q, want one named %q", target.iface.Name(), m.Name, got, want)
			}
		}
	}
}

// arguments are a call's arguments: ctx first, then zero values, but a
// reader that is empty and a function that returns zero values.
func arguments(ctx context.Context, ft reflect.Type) []reflect.Value {
	args := []reflect.Value{reflect.ValueOf(ctx)}
	for i := 1; i < ft.NumIn(); i++ {
		in := ft.In(i)
		switch {
		case in == reflect.TypeFor[io.Reader]():
			args = append(args, reflect.ValueOf(io.Reader(strings.NewReader(""))))
		case in.Kind() == reflect.Func:
			args = append(args, reflect.MakeFunc(in, func([]reflect.Value) []reflect.Value {
				var zeros []reflect.Value
				for j := range in.NumOut() {
					zeros = append(zeros, reflect.Zero(in.Out(j)))
				}
				return zeros
			}))
		default:
			args = append(args, reflect.Zero(in))
		}
	}
	return args
}
