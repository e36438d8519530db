package claimstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
)

// testRoundTrip puts payloads of every shape into namespaces of every
// compression, with the length and digest given and without (a body of
// unknown length streams), and redeems them.
func testRoundTrip(t *testing.T, e *env) {
	e.start(t)
	payloads := []struct {
		name, ct string
		data     []byte
	}{
		{"empty", "", nil},
		{"small", "text/plain", []byte("hello")},
		{"json", "application/json", JSONDoc(256<<10, 1)},
		// Random bytes do not compress: the stored object is as large as
		// the payload, and spans several copy buffers.
		{"random", "", randomBytes(512 << 10)},
	}
	for _, ns := range []string{"orders", "plain", "gz", "auto"} {
		for _, p := range payloads {
			for _, known := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/known=%v", ns, p.name, known), func(t *testing.T) {
					opts := claimcheck.PutOptions{ContentType: p.ct}
					var body io.Reader = onlyReader{bytes.NewReader(p.data)}
					if known {
						opts.Size, opts.Digest = int64(len(p.data)), claimcheck.DigestOf(p.data)
					}
					now := e.now()
					ref, err := e.c().Put(t.Context(), ns, body, opts)
					if err != nil {
						t.Fatal(err)
					}
					if ref.Namespace != ns || ref.Size != int64(len(p.data)) || ref.Digest != claimcheck.DigestOf(p.data) || !claimcheck.ValidClaimID(ref.ID) {
						t.Fatalf("ref %v does not describe the %d bytes put", ref, len(p.data))
					}
					wantTime(t, "created_at", ref.CreatedAt, now.Truncate(time.Second))
					wantTime(t, "expires_at (created + max_age)", ref.ExpiresAt, now.Add(e.policy(ns).TTL.MaxAge.D()).Truncate(time.Second))
					if n := len(ref.String()); n > claimcheck.MaxRefSize {
						t.Errorf("ref is %d bytes, more than %d", n, claimcheck.MaxRefSize)
					}
					if back, err := claimcheck.ParseRef([]byte(ref.String())); err != nil || !sameRef(back, ref) {
						t.Errorf("ref does not parse back: %v, %v", back, err)
					}
					pl, err := e.c().Redeem(t.Context(), ref)
					if err != nil {
						t.Fatal(err)
					}
					if !sameRef(pl.Ref, ref) {
						t.Errorf("redeemed ref %v, want %v", pl.Ref, ref)
					}
					// A payload put without a content type may come back
					// with none or with the generic one a server answers.
					if pl.ContentType != p.ct && (p.ct != "" || pl.ContentType != "application/octet-stream") {
						t.Errorf("content type %q, want %q", pl.ContentType, p.ct)
					}
					got, err := pl.Bytes()
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, p.data) {
						t.Fatalf("redeemed %d bytes differ from the %d put", len(got), len(p.data))
					}
				})
			}
		}
	}
}

// testCompression: the ref records the namespace's compression, and
// auto and zstd leave incompressible data alone (zstd decides on the
// payload's first frame, ADR 0165).
func testCompression(t *testing.T, e *env) {
	e.start(t)
	doc := JSONDoc(200<<10, 2)
	for ns, want := range map[string]string{"orders": "zstd", "plain": "none", "gz": "gzip"} {
		ref := e.put(t, ns, doc, claimcheck.PutOptions{})
		if ref.Compression != want || (want != "none" && ref.StoredSize >= ref.Size) {
			t.Errorf("%s: compression %s stored %d of %d, want %s", ns, ref.Compression, ref.StoredSize, ref.Size, want)
		}
		e.wantRedeem(t, ref, doc)
	}
	if ref := e.put(t, "auto", randomBytes(200<<10), claimcheck.PutOptions{}); ref.Compression != "none" {
		t.Errorf("auto compressed random data: %s", ref.Compression)
	}
	random := randomBytes(200 << 10)
	if ref := e.put(t, "orders", random, claimcheck.PutOptions{}); ref.Compression != "none" || ref.StoredSize != ref.Size {
		t.Errorf("zstd stored random data as %s, %d of %d bytes", ref.Compression, ref.StoredSize, ref.Size)
	} else {
		e.wantRedeem(t, ref, random)
	}
	if ref := e.put(t, "auto", doc, claimcheck.PutOptions{}); ref.Compression != "zstd" {
		t.Errorf("auto did not compress JSON: %s", ref.Compression)
	}
}

// testStatReleaseDelete follows one claim with named consumers from put
// to delete, checking what Stat reports at each step.
func testStatReleaseDelete(t *testing.T, e *env) {
	e.start(t)
	ctx := t.Context()
	t0 := e.now()
	labels := map[string]string{"workflow": "wf-1", "odd, key": "a=b&c d+e"}
	data := JSONDoc(100_000, 3)
	ref := e.put(t, "orders", data, claimcheck.PutOptions{
		ContentType: "application/json", Labels: labels, ConsumerNames: []string{"audit", "mailer, eu"},
	})

	info := e.stat(t, ref)
	if !sameRef(info.Ref, ref) || info.State != claimcheck.StateActive || info.ContentType != "application/json" ||
		info.Consumers != 2 || info.Reads != 0 || info.Releases != 0 || !info.FirstReadAt.IsZero() || !equalLabels(info.Labels, labels) {
		t.Fatalf("stat = %+v", info)
	}
	wantTime(t, "delete_at (created + max_age)", info.DeleteAt, t0.Add(claimcheck.DefaultMaxAge.D()))

	e.wantRedeem(t, ref, data)
	if info = e.stat(t, ref); info.Reads != 1 || !info.FirstReadAt.Equal(t0) {
		t.Fatalf("stat after a read: reads %d, first read at %v", info.Reads, info.FirstReadAt)
	}

	for range 2 { // a repeated release is idempotent
		if err := e.c().Release(ctx, ref, "mailer, eu"); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	if info = e.stat(t, ref); info.Releases != 1 || !slices.Equal(info.ReleasedBy, []string{"mailer, eu"}) {
		t.Fatalf("after one release: releases %d by %q", info.Releases, info.ReleasedBy)
	}
	wantErr(t, "release by a consumer that is not named", e.c().Release(ctx, ref, "stranger"), claimcheck.ErrInvalidArgument)
	if err := e.c().Release(ctx, ref, "audit"); err != nil {
		t.Fatalf("release: %v", err)
	}
	info = e.stat(t, ref)
	if info.Releases != 2 || info.State != claimcheck.StateActive {
		t.Fatalf("after every release: %+v", info)
	}
	wantTime(t, "delete_at after the last release (+ retention_after_read)", info.DeleteAt, t0.Add(claimcheck.DefaultRetentionAfterRead.D()))

	if err := e.c().Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := e.c().Delete(ctx, ref); err != nil {
		t.Fatalf("deleting a finished claim must not be an error: %v", err)
	}
	_, err := e.redeem(t, ref)
	gone := wantGoneError(t, "redeem after delete", err, claimcheck.ReasonDeleted)
	if gone.ID != ref.ID || !strings.Contains(err.Error(), ref.ID) {
		t.Errorf("error %q (id %q) does not name the claim %s", err, gone.ID, ref.ID)
	}
	wantTime(t, "gone at", gone.At, t0)
	info = e.wantFinished(t, ref, claimcheck.ReasonDeleted)
	if info.Reads != 1 {
		t.Errorf("stat after delete: reads %d, want 1", info.Reads)
	}
	wantTime(t, "deleted_at", info.DeletedAt, t0)
	wantGone(t, "release after delete", e.c().Release(ctx, ref, "audit"), claimcheck.ReasonDeleted)
}

// testReleaseAnonymous: releases without consumer names count distinct
// names; a single consumer may release without a name.
func testReleaseAnonymous(t *testing.T, e *env) {
	e.start(t)
	ctx := t.Context()
	two := e.put(t, "orders", []byte(`{"a":1}`), claimcheck.PutOptions{Consumers: 2})
	for _, c := range []string{"a", "a", "b"} {
		if err := e.c().Release(ctx, two, c); err != nil {
			t.Fatalf("release %s: %v", c, err)
		}
	}
	if info := e.stat(t, two); info.Releases != 2 || info.Consumers != 2 {
		t.Fatalf("after releases by a, a and b: %+v", info)
	}
	wantTime(t, "delete_at after both releases", e.stat(t, two).DeleteAt, e.now().Add(claimcheck.DefaultRetentionAfterRead.D()))

	one := e.put(t, "orders", []byte("one consumer, anonymous"), claimcheck.PutOptions{})
	if err := e.c().Release(ctx, one, ""); err != nil {
		t.Fatal(err)
	}
	if info := e.stat(t, one); info.Releases != 1 {
		t.Fatalf("stat after an anonymous release: %+v", info)
	}
}

// testLookupErrors: unknown claims are not found, in any namespace but
// their own too; malformed ids and namespaces are invalid.
func testLookupErrors(t *testing.T, e *env) {
	e.start(t)
	ctx := t.Context()
	ref := e.put(t, "orders", []byte("payload"), claimcheck.PutOptions{})

	unknown := claimcheck.Ref{ID: unknownID}
	_, err := e.c().Redeem(ctx, unknown)
	wantErr(t, "redeem of an unknown id", err, claimcheck.ErrNotFound)
	if !claimcheck.Permanent(err) {
		t.Errorf("not found is not permanent: %v", err)
	}
	_, err = e.c().Stat(ctx, unknown)
	wantErr(t, "stat of an unknown id", err, claimcheck.ErrNotFound)
	wantErr(t, "release of an unknown id", e.c().Release(ctx, unknown, ""), claimcheck.ErrNotFound)
	wantErr(t, "delete of an unknown id", e.c().Delete(ctx, unknown), claimcheck.ErrNotFound)

	// Ids do not leak across namespaces: another namespace looks like
	// an unknown claim.
	other := ref
	other.Namespace = "other"
	_, err = e.c().Redeem(ctx, other)
	wantErr(t, "redeem in the wrong namespace", err, claimcheck.ErrNotFound)
	_, err = e.c().Stat(ctx, other)
	wantErr(t, "stat in the wrong namespace", err, claimcheck.ErrNotFound)
	// The id alone is enough.
	e.wantRedeem(t, claimcheck.Ref{ID: ref.ID}, []byte("payload"))

	_, err = e.c().Redeem(ctx, claimcheck.Ref{ID: "nonsense"})
	wantErr(t, "redeem of a malformed id", err, claimcheck.ErrInvalidArgument)
	_, err = e.c().Stat(ctx, claimcheck.Ref{ID: "nonsense"})
	wantErr(t, "stat of a malformed id", err, claimcheck.ErrInvalidArgument)
	for _, ns := range []string{"Not/A/Namespace", "../etc", ""} {
		_, err := e.c().Put(ctx, ns, strings.NewReader("abc"), claimcheck.PutOptions{})
		wantErr(t, fmt.Sprintf("put to namespace %q", ns), err, claimcheck.ErrInvalidArgument)
	}
	_, err = e.c().Policy(ctx, "Not/A/Namespace")
	wantErr(t, "policy of a malformed namespace", err, claimcheck.ErrInvalidArgument)
}

// testPolicy: the effective policy of configured namespaces, and the
// built-in one of others.
func testPolicy(t *testing.T, e *env) {
	e.start(t)
	for _, ns := range []string{"small", "plain", "dar", "anything-else"} {
		got, err := e.c().Policy(t.Context(), ns)
		if err != nil {
			t.Fatal(err)
		}
		if want := e.policy(ns); !reflect.DeepEqual(got, want) {
			t.Errorf("policy of %s:\n%+v\nwant\n%+v", ns, got, want)
		}
	}
	p, err := e.c().Policy(t.Context(), "small")
	if err != nil || p.Threshold != 1<<10 || p.MaxSize != 64<<10 || p.TTL.MaxAge != claimcheck.DefaultMaxAge {
		t.Fatalf("small: %+v, %v", p, err)
	}
	raw, _ := json.Marshal(p)
	if !strings.Contains(string(raw), `"max_age":"24h0m0s"`) {
		t.Errorf("policy JSON: %s", raw)
	}
}

// testPutRefusesBadInput: a body that does not match what was declared,
// and malformed options, are refused and store nothing.
func testPutRefusesBadInput(t *testing.T, e *env) {
	e.start(t)
	ctx := t.Context()
	put := func(body io.Reader, opts claimcheck.PutOptions) error {
		_, err := e.c().Put(ctx, "plain", body, opts)
		return err
	}
	for _, body := range []string{"abc", "abcdefghijklmnopqrstuvwxyz"} {
		err := put(strings.NewReader(body), claimcheck.PutOptions{Size: 10})
		wantErr(t, fmt.Sprintf("body of %d bytes, 10 declared", len(body)), err, claimcheck.ErrInvalidArgument)
		if !strings.Contains(err.Error(), "declared") {
			t.Errorf("error %q does not say what was declared", err)
		}
	}
	err := put(onlyReader{strings.NewReader("abc")}, claimcheck.PutOptions{Digest: claimcheck.DigestOf([]byte("abd"))})
	wantErr(t, "body of another digest", err, claimcheck.ErrChecksumMismatch)
	err = put(strings.NewReader("abc"), claimcheck.PutOptions{Size: 3, Digest: claimcheck.DigestOf([]byte("abd"))})
	wantErr(t, "body of another digest, length given", err, claimcheck.ErrChecksumMismatch)
	// Length and digest given are what an object store may be told
	// before the body (ADR 0165): a longer body still fails as the
	// caller's.
	alphabet := "abcdefghijklmnopqrstuvwxyz"
	err = put(strings.NewReader(alphabet), claimcheck.PutOptions{Size: 10, Digest: claimcheck.DigestOf([]byte(alphabet[:10]))})
	wantErr(t, "body longer than its length and digest given", err, claimcheck.ErrInvalidArgument)
	if !strings.Contains(err.Error(), "declared") {
		t.Errorf("error %q does not say what was declared", err)
	}
	for _, opts := range []claimcheck.PutOptions{
		{Digest: "md5:abc"},
		{Size: -1},
		{Consumers: -1},
		{ConsumerNames: []string{"a", "a"}},
		{Consumers: 3, ConsumerNames: []string{"a"}},
		{Labels: map[string]string{"": "x"}},
	} {
		wantErr(t, fmt.Sprintf("put with options %+v", opts), put(strings.NewReader("abc"), opts), claimcheck.ErrInvalidArgument)
	}
	e.wantNothingStored(t, "plain")
}

// testTooLarge: a payload over max_size fails with ErrTooLarge naming the
// limit and stores nothing, whether its length is declared or found out
// while it streams.
func testTooLarge(t *testing.T, e *env) {
	e.start(t)
	data := randomBytes(80 << 10) // "small" takes 64 KiB
	for _, known := range []bool{true, false} {
		opts := claimcheck.PutOptions{}
		if known {
			opts.Size = int64(len(data))
		}
		_, err := e.c().Put(t.Context(), "small", onlyReader{bytes.NewReader(data)}, opts)
		wantErr(t, fmt.Sprintf("put of 80 KiB into a 64 KiB namespace, length known %v", known), err, claimcheck.ErrTooLarge)
		if !strings.Contains(err.Error(), "max_size") {
			t.Errorf("error %q does not name the limit", err)
		}
	}
	// A declared size over the limit is refused before the body counts.
	_, err := e.c().Put(t.Context(), "small", strings.NewReader("x"), claimcheck.PutOptions{Size: 1 << 20})
	wantErr(t, "declared size over max_size", err, claimcheck.ErrTooLarge)
	e.wantNothingStored(t, "small")
	// The limit itself is allowed.
	e.put(t, "small", data[:64<<10], claimcheck.PutOptions{})
}

// testQuotaExceeded: a put that does not fit the namespace's byte or
// claim quota fails with ErrQuotaExceeded; finishing a claim gives its
// quota back.
func testQuotaExceeded(t *testing.T, e *env) {
	e.start(t)
	ctx := t.Context()
	first := e.put(t, "quota", randomBytes(600), claimcheck.PutOptions{})
	for _, known := range []bool{true, false} {
		data := randomBytes(600)
		opts := claimcheck.PutOptions{}
		if known {
			opts.Size = int64(len(data))
		}
		_, err := e.c().Put(ctx, "quota", onlyReader{bytes.NewReader(data)}, opts)
		wantErr(t, fmt.Sprintf("put over the byte quota, length known %v", known), err, claimcheck.ErrQuotaExceeded)
	}
	if err := e.c().Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	e.put(t, "quota", randomBytes(600), claimcheck.PutOptions{})

	e.put(t, "oneclaim", []byte("the one"), claimcheck.PutOptions{})
	_, err := e.c().Put(ctx, "oneclaim", strings.NewReader("a second"), claimcheck.PutOptions{})
	wantErr(t, "put over the claim quota", err, claimcheck.ErrQuotaExceeded)
}

// testChecksumMismatch: an object altered in storage is never handed over
// as good, whatever its compression, small or streamed.
func testChecksumMismatch(t *testing.T, e *env) {
	e.start(t)
	if e.h.Corrupt == nil {
		t.Skip("the harness cannot corrupt stored objects (no Corrupt)")
	}
	seed := uint64(10)
	for _, ns := range []string{"plain", "orders", "gz"} {
		for _, size := range []int{10 << 10, 300 << 10} {
			t.Run(fmt.Sprintf("%s/%d", ns, size), func(t *testing.T) {
				seed++
				ref := e.put(t, ns, JSONDoc(size, seed), claimcheck.PutOptions{})
				e.h.Corrupt(t, ref)
				got, err := e.redeem(t, ref)
				if !errors.Is(err, claimcheck.ErrChecksumMismatch) {
					t.Fatalf("redeem of a corrupted object: %d bytes, %v; want ErrChecksumMismatch", len(got), err)
				}
				if got != nil {
					t.Fatal("corrupt bytes were handed over")
				}
				if !claimcheck.Permanent(err) {
					t.Errorf("a checksum mismatch is not permanent: %v", err)
				}
			})
		}
	}
}

// offloader is what both implementations add to the contract: the offload
// helpers as methods (a client caches the policy they need).
type offloader interface {
	MaybeOffload(ctx context.Context, ns string, data []byte) (claimcheck.Value, error)
	Resolve(ctx context.Context, v claimcheck.Value) ([]byte, error)
}

// testMaybeOffloadResolve: payloads below the namespace's threshold stay
// inline, others become claims; Resolve gives the bytes back either way.
func testMaybeOffloadResolve(t *testing.T, e *env) {
	e.start(t)
	ctx := t.Context()
	below := bytes.Repeat([]byte("x"), int(claimcheck.DefaultThreshold)-1)
	at := bytes.Repeat([]byte("y"), int(claimcheck.DefaultThreshold))
	type offloadFunc func(ns string, data []byte) (claimcheck.Value, error)
	type resolveFunc func(v claimcheck.Value) ([]byte, error)
	ways := map[string]struct {
		offload offloadFunc
		resolve resolveFunc
	}{
		"package functions": {
			func(ns string, data []byte) (claimcheck.Value, error) {
				return claimcheck.MaybeOffload(ctx, e.c(), ns, data)
			},
			func(v claimcheck.Value) ([]byte, error) { return claimcheck.Resolve(ctx, e.c(), v) },
		},
	}
	if o, ok := e.c().(offloader); ok {
		ways["methods"] = struct {
			offload offloadFunc
			resolve resolveFunc
		}{
			func(ns string, data []byte) (claimcheck.Value, error) { return o.MaybeOffload(ctx, ns, data) },
			func(v claimcheck.Value) ([]byte, error) { return o.Resolve(ctx, v) },
		}
	}
	for name, w := range ways {
		t.Run(name, func(t *testing.T) {
			v, err := w.offload("orders", below)
			if err != nil || v.Offloaded() || !bytes.Equal(v.Inline, below) {
				t.Fatalf("below the threshold must stay inline: %+v, %v", v.Ref, err)
			}
			got, err := w.resolve(v)
			if err != nil || !bytes.Equal(got, below) {
				t.Fatalf("resolve inline: %v", err)
			}
			v, err = w.offload("orders", at)
			if err != nil || !v.Offloaded() || v.Inline != nil || v.Ref.Size != int64(len(at)) || v.Ref.Digest != claimcheck.DigestOf(at) {
				t.Fatalf("at the threshold must offload: %+v, %v", v, err)
			}
			got, err = w.resolve(v)
			if err != nil || !bytes.Equal(got, at) {
				t.Fatalf("resolve: %v", err)
			}
			// The namespace's threshold applies.
			tiny := []byte("tiny")
			if v, err := w.offload("small", tiny); err != nil || v.Offloaded() {
				t.Fatalf("small namespace, 4 bytes: %+v, %v; want inline", v, err)
			}
			large := JSONDoc(10<<10, 4)
			v, err = w.offload("small", large)
			if err != nil || !v.Offloaded() || v.Ref.Size != int64(len(large)) {
				t.Fatalf("small namespace, 10 KiB: %+v, %v; want a reference", v, err)
			}
			if got, err := w.resolve(v); err != nil || !bytes.Equal(got, large) {
				t.Fatalf("resolve: %v", err)
			}
			if v, err := w.offload("small", make([]byte, 1<<10)); err != nil || !v.Offloaded() {
				t.Fatalf("small namespace, at its threshold of 1 KiB: %+v, %v", v, err)
			}
		})
	}

	// OffloadAt takes the caller's threshold and put options.
	data := JSONDoc(2<<10, 5)
	v, err := claimcheck.OffloadAt(ctx, e.c(), "orders", data, 1<<10, claimcheck.PutOptions{
		Consumers: 2, ContentType: "application/json", Size: 1, Digest: "sha256:ignored",
	})
	if err != nil || !v.Offloaded() {
		t.Fatalf("OffloadAt over its threshold: %+v, %v", v, err)
	}
	if info := e.stat(t, *v.Ref); info.Consumers != 2 || info.ContentType != "application/json" || info.Ref.Size != int64(len(data)) {
		t.Errorf("claim of OffloadAt: %+v", info)
	}
	if v, err := claimcheck.OffloadAt(ctx, e.c(), "orders", data, 4<<10, claimcheck.PutOptions{}); err != nil || v.Offloaded() {
		t.Errorf("OffloadAt under its threshold: %+v, %v", v, err)
	}
	// A resolve of a finished claim is the claim's error.
	if err := e.c().Delete(ctx, *v.Ref); err != nil {
		t.Fatal(err)
	}
	_, err = claimcheck.Resolve(ctx, e.c(), v)
	wantGone(t, "resolve of a deleted claim", err, claimcheck.ReasonDeleted)
}
