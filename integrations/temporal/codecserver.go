package temporal

import (
	"net/http"

	"go.temporal.io/sdk/converter"
)

// CodecServerOptions configure NewCodecServerHandler.
type CodecServerOptions struct {
	// Codecs are the codec chain of the workers' data converter, in the
	// order given to converter.NewCodecDataConverter (typically a Codec,
	// possibly with an encryption codec).
	Codecs []converter.PayloadCodec
	// Driver, when set, also resolves External Storage references written
	// by that driver, so the Web UI shows those payloads too (/decode and
	// /download).
	Driver *Driver
	// AllowOrigin, when set, is the origin allowed to call the handler
	// from a browser (the Temporal Web UI's address, for example
	// http://localhost:8233). Empty: no CORS headers.
	AllowOrigin string
}

// NewCodecServerHandler returns an http.Handler for a Temporal codec
// server: POST …/encode and …/decode take and return a JSON Payloads
// object; …/download resolves External Storage references. The Temporal
// Web UI and CLI call it to show offloaded payloads in full. The handler
// matches path suffixes, so it can be mounted under any prefix with
// http.StripPrefix or as is.
//
// The handler reads claims on every decode: protect it like the store
// itself (it is meant for 127.0.0.1 or behind the same authentication as
// the Web UI).
func NewCodecServerHandler(opts CodecServerOptions) (http.Handler, error) {
	var es converter.ExternalStorage
	if opts.Driver != nil {
		es = opts.Driver.ExternalStorage()
	}
	h, err := converter.NewPayloadHTTPHandler(converter.PayloadHTTPHandlerOptions{
		PreStorageCodecs: opts.Codecs,
		ExternalStorage:  es,
	})
	if err != nil {
		return nil, err
	}
	if opts.AllowOrigin == "" {
		return h, nil
	}
	return cors(opts.AllowOrigin, h), nil
}

// cors answers browser preflights and marks responses as readable by
// origin; the Web UI sends the namespace and credentials in headers.
func cors(origin string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Set("Access-Control-Allow-Credentials", "true")
		hd.Add("Vary", "Origin")
		if r.Method == http.MethodOptions {
			hd.Set("Access-Control-Allow-Methods", "POST")
			hd.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.ServeHTTP(w, r)
	})
}
