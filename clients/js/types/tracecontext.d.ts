/**
 * The application's @opentelemetry/api, looked up once; null when it has
 * none.
 * @returns {Promise<OpenTelemetryAPI | null>}
 */
export function findOpenTelemetry(): Promise<OpenTelemetryAPI | null>;
/**
 * Adds the trace context of the active OpenTelemetry context to h, by
 * the API's global propagator (W3C trace context and baggage unless the
 * application chose others). api: the application's API; undefined:
 * look it up.
 * @param {Headers} h
 * @param {OpenTelemetryAPI | null} [api]
 */
export function injectTraceContext(h: Headers, api?: OpenTelemetryAPI | null): Promise<void>;
/**
 * The part of
 */
export type OpenTelemetryAPI = {
    propagation: {
        inject(context: unknown, carrier: Headers, setter?: {
            set(carrier: Headers, key: string, value: string): void;
        }): void;
    };
    context: {
        active(): unknown;
    };
};
