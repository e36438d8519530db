package blob

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Opener opens the store a URL of its backend's scheme describes. The
// URL is parsed already; errors say "blob: open <url>: ..." and leave
// out the query, which may carry credentials or key ids.
type Opener func(ctx context.Context, u *url.URL) (Store, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Opener{}
)

// Register makes open the backend of URLs whose scheme is scheme. Each
// backend package registers itself in an init function
// (blob/filestore: file, blob/memstore: mem, blob/s3store: s3,
// blob/gcsstore: gs, blob/azurestore: azblob), so
// importing the package is what makes its scheme open; blob/allstores
// imports every backend claimcheck ships. Registering a scheme twice,
// or a nil opener, panics.
func Register(scheme string, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if open == nil {
		panic("blob: Register of a nil opener for scheme " + scheme)
	}
	if _, dup := registry[scheme]; dup {
		panic("blob: scheme " + scheme + " registered twice")
	}
	registry[scheme] = open
}

// Open opens the store at rawURL with the backend registered for its
// scheme. The concrete type is the backend's; which optional abilities
// it has, AbilitiesOf tells. The URL forms are each backend's (see its
// package): file:///abs/dir, mem://, s3://bucket?endpoint=...,
// gs://bucket, azblob://container.
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("blob: open: %w", err)
	}
	// u.Query drops a pair that does not parse without a word, so the
	// backend's check of its parameters would never see it.
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return nil, fmt.Errorf("blob: open %s: the URL's query does not parse: %w", redact(u), err)
	}
	registryMu.RLock()
	open, ok := registry[u.Scheme]
	schemes := make([]string, 0, len(registry))
	for s := range registry {
		schemes = append(schemes, s)
	}
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("blob: open %s: unsupported scheme %q (%s)", redact(u), u.Scheme, want(schemes))
	}
	return open(ctx, u)
}

// want names the registered schemes for an error message.
func want(schemes []string) string {
	slices.Sort(schemes)
	switch len(schemes) {
	case 0:
		return "no storage backend is registered: import blob/allstores or a backend package"
	case 1:
		return "want " + schemes[0]
	default:
		return "want " + strings.Join(schemes[:len(schemes)-1], ", ") + " or " + schemes[len(schemes)-1]
	}
}

// redact drops the query and user of a URL for error messages: they may
// carry endpoints with credentials or KMS key ids.
func redact(u *url.URL) string {
	v := *u
	v.RawQuery = ""
	v.User = nil
	return v.String()
}
