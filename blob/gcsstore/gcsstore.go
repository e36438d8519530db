// Package gcsstore is the storage backend of gs:// URLs: Google Cloud
// Storage, and emulators of its JSON and XML APIs (fake-gcs-server). Its
// optional abilities, each the way GCS offers it (ADR 0230): V4 signed
// URLs for direct uploads, appends by composing objects, lifecycle rules
// and bucket CORS rules. Deletes go one object per request: GCS has no
// batch delete in its object API. Importing the package registers its
// scheme with blob.Open.
//
// URL form: gs://BUCKET?prefix=P&endpoint=URL&anonymous=true&access_id=A&private_key_path=F.
// Credentials come from Google's usual chain (Application Default
// Credentials: GOOGLE_APPLICATION_CREDENTIALS, gcloud's login, the
// metadata server of GCE, GKE workload identity, ...); anonymous=true
// sends requests without any (emulators). prefix puts every key under P.
// endpoint names another service than Google's (an emulator:
// http://127.0.0.1:4443). V4 URLs are signed by access_id with the key
// in private_key_path when given, else by the chain's service account (a
// key file signs itself; workload identity signs through the IAM
// Credentials API, which needs roles/iam.serviceAccountTokenCreator on
// itself).
package gcsstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// Scheme is the URL scheme of the backend: gs://.
const Scheme = gcsblob.Scheme

func init() { blob.Register(Scheme, open) }

// Bucket is the Store for Google Cloud Storage: the portable Bucket, with
// the optional abilities GCS has, done with the storage client itself.
type Bucket struct {
	*gocloudbucket.Bucket
	client *storage.Client
	bucket *storage.BucketHandle
	name   string
	prefix string // of every key, as the URL's prefix gave it
	sign   signer
}

var (
	_ blob.Store          = (*Bucket)(nil)
	_ blob.Presigner      = (*Bucket)(nil)
	_ blob.Lifecycler     = (*Bucket)(nil)
	_ blob.Appender       = (*Bucket)(nil)
	_ blob.CORSConfigurer = (*Bucket)(nil)
)

// signer is who signs V4 URLs; empty fields leave it to the client's
// credentials.
type signer struct {
	accessID   string
	privateKey []byte
	hostname   string // the endpoint's host (an emulator), "" for Google's
	insecure   bool   // the endpoint is plain HTTP
}

// params are the URL's query parameters.
var params = []string{"prefix", "endpoint", "anonymous", "access_id", "private_key_path"}

// open opens a gs:// URL: the storage client from the URL's settings,
// gocloud's bucket over it, and a check that the bucket is there and
// these credentials may use it (checkAccess), so that a wrong name or
// a missing role stops the start instead of the first put.
func open(ctx context.Context, u *url.URL) (blob.Store, error) {
	fail := func(err error) (blob.Store, error) {
		return nil, fmt.Errorf("blob: open %s: %w", gocloudbucket.Redact(u), err)
	}
	if u.Host == "" {
		return fail(errors.New("no bucket: want gs://BUCKET"))
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(params, k) {
			return fail(fmt.Errorf("unknown parameter %q (want %s)", k, strings.Join(params, ", ")))
		}
	}
	var (
		opts []option.ClientOption
		sign signer
	)
	if e := q.Get("endpoint"); e != "" {
		eu, err := url.Parse(e)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
			return fail(fmt.Errorf("endpoint %q: want http://HOST:PORT or https://HOST", e))
		}
		opts = append(opts, option.WithEndpoint(strings.TrimSuffix(e, "/")+"/storage/v1/"))
		sign.hostname, sign.insecure = eu.Host, eu.Scheme == "http"
	}
	if a := q.Get("anonymous"); a != "" {
		anon, err := strconv.ParseBool(a)
		if err != nil {
			return fail(fmt.Errorf("anonymous %q: want true or false", a))
		}
		if anon {
			opts = append(opts, option.WithoutAuthentication())
		}
	}
	sign.accessID = q.Get("access_id")
	if p := q.Get("private_key_path"); p != "" {
		if sign.accessID == "" {
			return fail(errors.New("private_key_path without access_id: name the service account whose key it is"))
		}
		key, err := os.ReadFile(p)
		if err != nil {
			return fail(fmt.Errorf("private_key_path: %w", err))
		}
		sign.privateKey = key
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return fail(fmt.Errorf("%w (set GOOGLE_APPLICATION_CREDENTIALS, run on a workload identity, or add anonymous=true for an emulator)", err))
	}
	gb, err := gcsblob.OpenBucket(ctx, nil, u.Host, &gcsblob.Options{Client: client, GoogleAccessID: sign.accessID, PrivateKey: sign.privateKey})
	if err != nil {
		_ = client.Close()
		return fail(err)
	}
	prefix := q.Get("prefix")
	if prefix != "" {
		gb = gcblob.PrefixedBucket(gb, prefix)
	}
	b := &Bucket{
		Bucket: gocloudbucket.New(gb, gocloudbucket.Options{StartAfter: startOffset(prefix), HTTPStatus: httpStatus}),
		client: client, bucket: client.Bucket(u.Host), name: u.Host, prefix: prefix, sign: sign,
	}
	if err := b.checkAccess(ctx); err != nil {
		_ = b.Close()
		return fail(err)
	}
	return b, nil
}

// startOffset makes a listing start at the key token: GCS's page tokens
// are opaque, its startOffset takes an object name (the URL's prefix
// included, which gocloud's prefixed bucket does not add to it).
func startOffset(prefix string) func(token string) func(as func(any) bool) error {
	return func(token string) func(as func(any) bool) error {
		return func(as func(any) bool) error {
			var q *storage.Query
			if !as(&q) {
				return errors.New("cannot set the start of a GCS listing")
			}
			q.StartOffset = prefix + token
			return nil
		}
	}
}

// neededPermissions are what the store does to objects: write, read,
// list (the backstop, fsck), delete (collection) and compose's
// create-and-delete (appends).
var neededPermissions = []string{
	"storage.objects.create", "storage.objects.get", "storage.objects.list", "storage.objects.delete",
}

// checkAccess reads the bucket's metadata (it exists, the credentials
// work) and asks which of the object permissions the store needs the
// credentials lack. A service that cannot answer the second question
// (an emulator) is taken at its word for the first.
func (b *Bucket) checkAccess(ctx context.Context) error {
	_, err := b.bucket.Attrs(ctx)
	switch {
	case errors.Is(err, storage.ErrBucketNotExist):
		return fmt.Errorf("bucket %s does not exist: create it (gcloud storage buckets create gs://%s) or fix the name", b.name, b.name)
	case httpStatus(err) == http.StatusUnauthorized:
		return fmt.Errorf("bucket %s: the credentials were refused: %w (check GOOGLE_APPLICATION_CREDENTIALS or the workload identity)", b.name, err)
	case httpStatus(err) == http.StatusForbidden:
		// Reading bucket metadata needs storage.buckets.get, which
		// roles/storage.objectUser lacks; the objects may still be ours.
	case err != nil:
		return fmt.Errorf("bucket %s: %w", b.name, err)
	}
	granted, err := b.bucket.IAM().TestPermissions(ctx, neededPermissions)
	if err != nil {
		if s := httpStatus(err); s == http.StatusNotFound || s == http.StatusNotImplemented || s == http.StatusBadRequest {
			return nil // the service has no IAM to ask (emulators)
		}
		return fmt.Errorf("bucket %s: test IAM permissions: %w", b.name, err)
	}
	var missing []string
	for _, p := range neededPermissions {
		if !slices.Contains(granted, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("bucket %s: the credentials lack %s: grant roles/storage.objectUser on the bucket (add roles/storage.admin there for lifecycle: manage and bucket_cors: manage)",
			b.name, strings.Join(missing, ", "))
	}
	return nil
}

// httpStatus is the HTTP status of a storage API error, 0 if none.
func httpStatus(err error) int {
	var g *googleapi.Error
	if errors.As(err, &g) {
		return g.Code
	}
	return 0
}

// object is the handle of key, under the URL's prefix.
func (b *Bucket) object(key string) *storage.ObjectHandle {
	return b.bucket.Object(b.prefix + key)
}

// Close implements blob.Store: gocloud's bucket does not own the client.
func (b *Bucket) Close() error {
	return cmp.Or(b.Bucket.Close(), b.client.Close())
}
