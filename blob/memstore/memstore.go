// Package memstore is the in-memory storage backend, for tests: each
// mem:// URL opens a fresh, empty store that lives as long as the
// process. It has none of the optional abilities. Importing the package
// registers its scheme with blob.Open.
package memstore

import (
	"context"
	"net/url"

	"gocloud.dev/blob/memblob"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// Scheme is the URL scheme of the backend: mem://.
const Scheme = "mem"

func init() { blob.Register(Scheme, open) }

// New returns a fresh, empty in-memory store.
func New() *gocloudbucket.Bucket {
	return gocloudbucket.New(memblob.OpenBucket(nil), gocloudbucket.Options{})
}

func open(context.Context, *url.URL) (blob.Store, error) { return New(), nil }
