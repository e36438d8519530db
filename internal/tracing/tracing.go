// Package tracing sets up OpenTelemetry tracing for a claimcheck process
// (ADR 0250): the tracer provider that exports over OTLP, configured by
// the standard OTEL_* environment variables and the `tracing:` block of
// the config file; the slog handler that puts trace and span ids on log
// records; and Tracer, the engine's and the sweeper's way to start spans
// that costs a nil check when tracing is off.
//
// Tracing is off unless the config enables it or the environment names
// an OTLP endpoint or exporter. Off, nothing is set up: the engine, the
// server and the storage layers get no tracer provider and wrap nothing.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of claimcheck's own spans.
const ScopeName = "github.com/claimcheck/claimcheck"

// Config is the `tracing:` block of the config file. Every field may be
// left empty; the OTEL_* variable named beside it then applies, and
// failing that the OpenTelemetry default. A field that is set wins over
// its variable.
type Config struct {
	// Enabled turns tracing on. Without it, tracing is on when the
	// environment names an exporter: OTEL_EXPORTER_OTLP_ENDPOINT,
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER=otlp.
	// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none keep it off
	// whatever the file says.
	Enabled bool `yaml:"enabled"`
	// Endpoint is the OTLP collector's URL (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
	// OTEL_EXPORTER_OTLP_ENDPOINT; default http://localhost:4318 over
	// HTTP, localhost:4317 over gRPC). Over HTTP it is the whole URL of
	// the traces endpoint when it has a path other than "/", else the base
	// to which /v1/traces is added.
	Endpoint string `yaml:"endpoint"`
	// Protocol is http/protobuf or grpc (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
	// OTEL_EXPORTER_OTLP_PROTOCOL; default http/protobuf).
	Protocol string `yaml:"protocol"`
	// Sampler is one of always_on, always_off, traceidratio,
	// parentbased_always_on, parentbased_always_off,
	// parentbased_traceidratio (OTEL_TRACES_SAMPLER; default
	// parentbased_always_on), and SamplerArg the ratio of the ratio
	// samplers (OTEL_TRACES_SAMPLER_ARG; default 1).
	Sampler    string `yaml:"sampler"`
	SamplerArg string `yaml:"sampler_arg"`
	// ServiceName is the service.name of the spans (OTEL_SERVICE_NAME;
	// default claimcheck). OTEL_RESOURCE_ATTRIBUTES adds attributes.
	ServiceName string `yaml:"service_name"`
	// RecordLabels lists the namespaces whose claims' labels (keys and
	// values) go into the spans of their puts. Spans never carry payload
	// bytes, object keys or API keys; labels only where a namespace is
	// listed here, since their values may be what a team keeps private.
	RecordLabels []string `yaml:"record_labels"`
}

// Validate checks the fields that are set; the OTEL_* variables are
// checked by Setup, when they are read.
func (c Config) Validate() error {
	if c.Endpoint != "" {
		if err := checkEndpoint(c.Endpoint); err != nil {
			return fmt.Errorf("tracing.endpoint %q: %w", c.Endpoint, err)
		}
	}
	if c.Protocol != "" {
		if _, err := protocol(c.Protocol, "tracing.protocol"); err != nil {
			return err
		}
	}
	if c.Sampler != "" || c.SamplerArg != "" {
		if _, err := sampler(c.Sampler, c.SamplerArg, "tracing.sampler", "tracing.sampler_arg"); err != nil {
			return err
		}
	}
	return nil
}

// checkEndpoint refuses an endpoint the exporter could not use: it is
// read as a URL by both exporters (WithEndpointURL), which otherwise only
// logs the failure when the first spans are sent, long after start.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("want an http:// or https:// URL")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return errors.New("the URL's query does not parse")
	}
	return nil
}

// Getenv reads one environment variable; os.Getenv, or a test's map.
type Getenv func(string) string

// On reports whether tracing is on under c and the environment.
func (c Config) On(getenv Getenv) (bool, error) {
	if v := getenv("OTEL_SDK_DISABLED"); strings.EqualFold(v, "true") {
		return false, nil
	}
	switch exp := strings.ToLower(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER %q: claimcheck exports over otlp only (or none)", exp)
	}
	return c.Enabled || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
}

// Provider is the tracing of one process.
type Provider struct {
	// TracerProvider is nil when tracing is off: pass it on as it is,
	// the packages that take one treat nil as off and wrap nothing.
	TracerProvider trace.TracerProvider
	sdk            *sdktrace.TracerProvider
}

// Shutdown exports the spans still buffered and stops the exporter.
// It does nothing when tracing is off.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// Setup starts tracing under c and the environment (getenv; nil:
// os.Getenv). When it is on, it also sets the global tracer provider and
// the W3C propagators (traceparent, tracestate, baggage), for the
// libraries claimcheck runs that trace through the globals. When it is
// off, the Provider's TracerProvider is nil and nothing is set.
func Setup(ctx context.Context, c Config, getenv Getenv) (*Provider, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	on, err := c.On(getenv)
	if err != nil || !on {
		return &Provider{}, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	exp, err := exporter(ctx, c, getenv)
	if err != nil {
		return nil, err
	}
	res, err := resourceOf(ctx, c, getenv)
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if c.Sampler != "" || c.SamplerArg != "" {
		s, err := sampler(c.Sampler, c.SamplerArg, "tracing.sampler", "tracing.sampler_arg")
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdktrace.WithSampler(s))
	} else if name := getenv("OTEL_TRACES_SAMPLER"); name != "" {
		// The SDK reads these too, but only logs a bad value; a
		// deployment's typo should stop the start instead.
		if _, err := sampler(name, getenv("OTEL_TRACES_SAMPLER_ARG"), "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"); err != nil {
			return nil, err
		}
	}
	tp := sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator())
	return &Provider{TracerProvider: tp, sdk: tp}, nil
}

// Propagator is the W3C trace context and baggage, the propagation
// every claimcheck client and integration speaks.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

const (
	protoHTTP = "http/protobuf"
	protoGRPC = "grpc"
)

func protocol(v, name string) (string, error) {
	switch v {
	case protoHTTP, protoGRPC:
		return v, nil
	}
	return "", fmt.Errorf("%s %q: want %s or %s", name, v, protoHTTP, protoGRPC)
}

// exporter is the OTLP exporter. What the config leaves empty the
// exporter reads from the OTEL_EXPORTER_OTLP_* variables itself
// (headers, timeout, TLS, compression too).
func exporter(ctx context.Context, c Config, getenv Getenv) (sdktrace.SpanExporter, error) {
	proto, name := c.Protocol, "tracing.protocol"
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if proto == "" && getenv(v) != "" {
			proto, name = getenv(v), v
		}
	}
	if proto == "" {
		proto = protoHTTP
	}
	if _, err := protocol(proto, name); err != nil {
		return nil, err
	}
	if proto == protoGRPC {
		var opts []otlptracegrpc.Option
		if c.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(c.Endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	var opts []otlptracehttp.Option
	if c.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(traceURL(c.Endpoint)))
	}
	return otlptracehttp.New(ctx, opts...)
}

// traceURL is the traces endpoint of an OTLP/HTTP base URL, the way
// OTEL_EXPORTER_OTLP_ENDPOINT is read: a URL without a path gets
// /v1/traces.
func traceURL(u string) string {
	rest := u
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexByte(rest, '/'); i < 0 || rest[i:] == "/" {
		return strings.TrimSuffix(u, "/") + "/v1/traces"
	}
	return u
}

func resourceOf(ctx context.Context, c Config, getenv Getenv) (*resource.Resource, error) {
	name := c.ServiceName
	if name == "" {
		name = getenv("OTEL_SERVICE_NAME")
	}
	if name == "" {
		name = "claimcheck"
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(name)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// sampler parses the OTEL_TRACES_SAMPLER names; nameVar and argVar name
// the key or variable in errors.
func sampler(name, arg, nameVar, argVar string) (sdktrace.Sampler, error) {
	ratio := 1.0
	if arg != "" {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("%s %q: want a ratio from 0 to 1", argVar, arg)
		}
		ratio = r
	}
	switch strings.ToLower(name) {
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	}
	return nil, fmt.Errorf("%s %q: want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", nameVar, name)
}
