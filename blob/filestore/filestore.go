// Package filestore is the storage backend of file:// URLs: objects are
// files under a directory. Besides the Store it appends (resumable
// uploads) to the object's own file. Importing the package registers its
// scheme with blob.Open.
//
// URL forms: file:///abs/dir — objects are files under dir, which is
// created if missing. file://./rel/dir (host ".") is a path relative to
// the working directory at the time of Open. Other hosts than "",
// "localhost" and "." are refused, because "file://data/blobs" would
// silently mean "/blobs"; so is the filesystem root. fileblob's query
// parameters (dir_file_mode, ...) pass through.
//
// A write goes to a temp file next to its final path ("<key>.<hex>.tmp")
// and is renamed on a successful Close, so the rename never crosses
// devices and a payload never lands in a RAM-backed /tmp. Close after a
// cancelled ctx removes the temp file. A process killed mid write leaves
// its temp file behind; List shows it like any object, so the backstop
// collects it as debris once it is older than the grace period (an
// active write keeps touching its modification time). No ".attrs"
// sidecar files are written: the store keeps no metadata. Plain keys are
// read and written on their files directly, as the driver would
// (direct.go).
package filestore

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"gocloud.dev/blob/fileblob"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// Scheme is the URL scheme of the backend: file://.
const Scheme = "file"

func init() { blob.Register(Scheme, open) }

// Bucket is the Store for file:// URLs: the portable Bucket over
// gocloud's file driver, plus appending (resumable uploads), which
// needs the object's path on disk.
type Bucket struct {
	*gocloudbucket.Bucket
	dir string // absolute: the bucket's root, as the file driver resolved it
	// sidecars: the URL asked the driver for ".attrs" files
	// ("metadata="), so writes go through it (direct.go).
	sidecars bool
}

var (
	_ blob.Store    = (*Bucket)(nil)
	_ blob.Appender = (*Bucket)(nil)
)

func open(ctx context.Context, u *url.URL) (blob.Store, error) {
	if u.Opaque != "" {
		return nil, fmt.Errorf("blob: open %s: write file:///absolute/dir or file://./relative/dir", u)
	}
	switch u.Host {
	case "", "localhost", ".":
	default:
		return nil, fmt.Errorf("blob: open %s: host %q: write file:///absolute/dir or file://./relative/dir", u, u.Host)
	}
	if strings.Trim(u.Path, "/") == "" {
		// Never the filesystem root or the bare working directory: the
		// backstop deletes unknown objects under the bucket.
		return nil, fmt.Errorf("blob: open %s: no directory", u)
	}
	opener := &fileblob.URLOpener{Options: fileblob.Options{
		CreateDir: true,
		NoTempDir: true,
		Metadata:  fileblob.MetadataDontWrite,
	}}
	b, err := opener.OpenBucketURL(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("blob: open %s: %w", u, err)
	}
	// The root as the driver resolves it (a "." host: relative to the
	// working directory now), for appending to files in place.
	dir := u.Path
	if u.Host == "." {
		dir = strings.TrimPrefix(dir, "/")
	}
	abs, err := filepath.Abs(filepath.FromSlash(dir))
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("blob: open %s: %w", u, err)
	}
	md, set := u.Query()["metadata"]
	sidecars := set && md[0] == string(fileblob.MetadataInSidecar)
	return &Bucket{Bucket: gocloudbucket.New(b, gocloudbucket.Options{}), dir: abs, sidecars: sidecars}, nil
}
