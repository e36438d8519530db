// W3C trace context on the client's requests (traceparent, tracestate,
// baggage), from OpenTelemetry's JavaScript API when the application
// has it: the server's spans then join the caller's trace. The API is
// never a dependency of this package: it is the one the application
// passes (ClientOptions.opentelemetry), or else the one a dynamic import
// finds (Node, or a browser with an import map); without either, the
// client sends no trace headers.

/**
 * The part of @opentelemetry/api the client uses.
 * @typedef {object} OpenTelemetryAPI
 * @property {{ inject(context: unknown, carrier: Headers, setter?: { set(carrier: Headers, key: string, value: string): void }): void }} propagation
 * @property {{ active(): unknown }} context
 */

// The specifier is a variable so that bundlers leave the import alone:
// an application without the package builds and runs unchanged.
const specifier = '@opentelemetry/api';

/** @type {Promise<OpenTelemetryAPI | null> | undefined} */
let found;

/**
 * The application's @opentelemetry/api, looked up once; null when it has
 * none.
 * @returns {Promise<OpenTelemetryAPI | null>}
 */
export function findOpenTelemetry() {
  found ??= import(specifier).then(
    (m) => (m?.propagation && m?.context ? /** @type {OpenTelemetryAPI} */ (m) : null),
    () => null,
  );
  return found;
}

const setter = {
  /**
   * @param {Headers} h
   * @param {string} k
   * @param {string} v
   */
  set(h, k, v) {
    h.set(k, v);
  },
};

/**
 * Adds the trace context of the active OpenTelemetry context to h, by
 * the API's global propagator (W3C trace context and baggage unless the
 * application chose others). api: the application's API; undefined:
 * look it up.
 * @param {Headers} h
 * @param {OpenTelemetryAPI | null} [api]
 */
export async function injectTraceContext(h, api) {
  const otel = api === undefined ? await findOpenTelemetry() : api;
  if (!otel) return;
  try {
    otel.propagation.inject(otel.context.active(), h, setter);
  } catch {
    // An application's broken propagator must not fail the request.
  }
}
