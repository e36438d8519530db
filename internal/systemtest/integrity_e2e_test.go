package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// Integrity under damage (ADR 0095) through the real binary: objects are
// altered, truncated and deleted underneath a running server, on SQLite +
// files and on PostgreSQL + MinIO.

// integrityConfig: "plain" stores payloads uncompressed, so a flipped byte
// decompresses fine and only the digest at the end catches it.
const integrityConfig = `
namespaces:
  plain:
    compression: none
  zipped:
    compression: zstd
`

// damageStore is a running server and a way to damage its objects.
type damageStore struct {
	bin, url string
	store    []string // --config/--data flags of the offline commands
	c        *client.Client
	m        meta.Store
	// read and write an object's bytes, or delete it, behind the server.
	read   func(key string) []byte
	write  func(key string, b []byte)
	remove func(key string)
	// exists reports whether the bucket holds an object at key.
	exists func(key string) bool
	// damageAt damages the object at key one way picked by r (from a
	// worker goroutine: errors, not t.Fatal) and says how.
	damageAt func(r *mrand.Rand, key string) (string, error)
	// cutMeta cuts the xl.meta of the MinIO object at key, so that MinIO
	// answers 500 about it (nil unless on MinIO with TEST_S3_DATA_DIR).
	cutMeta func(key string) error
}

func (d *damageStore) key(t *testing.T, ref claimcheck.Ref) string {
	t.Helper()
	ctx := context.Background()
	c, err := d.m.Claim(ctx, ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.m.Blob(ctx, c.BlobID)
	if err != nil {
		t.Fatal(err)
	}
	return b.Key
}

// damage alters the object of ref: "flip" a byte near the end, "truncate"
// it by a quarter, "delete" it.
func (d *damageStore) damage(t *testing.T, ref claimcheck.Ref, how string) {
	t.Helper()
	key := d.key(t, ref)
	switch how {
	case "flip":
		b := d.read(key)
		b[len(b)-10] ^= 0x40
		d.write(key, b)
	case "truncate":
		b := d.read(key)
		d.write(key, b[:len(b)*3/4])
	case "delete":
		d.remove(key)
	default:
		t.Fatalf("unknown damage %q", how)
	}
}

// startDamageStore runs a server on SQLite + files, or, with pg, on
// PostgreSQL + MinIO (skipped without them).
func startDamageStore(t *testing.T, pg bool, config string) *damageStore {
	t.Helper()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claimcheck.yaml")
	d := &damageStore{bin: bin}
	ctx := context.Background()
	if !pg {
		if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		data := filepath.Join(dir, "data")
		d.store = []string{"--config", cfg, "--data", data}
		objects := filepath.Join(data, "blobs")
		path := func(key string) string { return filepath.Join(objects, filepath.FromSlash(key)) }
		d.read = func(key string) []byte {
			b, err := os.ReadFile(path(key))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		d.write = func(key string, b []byte) {
			if err := os.WriteFile(path(key), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		d.remove = func(key string) {
			if err := os.Remove(path(key)); err != nil {
				t.Fatal(err)
			}
		}
		d.exists = func(key string) bool {
			_, err := os.Stat(path(key))
			return err == nil
		}
		d.damageAt = func(r *mrand.Rand, key string) (string, error) {
			b, err := os.ReadFile(path(key))
			if err != nil || len(b) < 20 {
				return "", fmt.Errorf("already gone: %v", err)
			}
			switch r.IntN(3) {
			case 0:
				b[r.IntN(len(b))] ^= 0x20
				return "flip", os.WriteFile(path(key), b, 0o600)
			case 1:
				return "truncate", os.WriteFile(path(key), b[:r.IntN(len(b))], 0o600)
			default:
				return "delete", os.Remove(path(key))
			}
		}
		d.url = startServer(t, bin, dir, d.store...)
		m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(data, "claimcheck.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		d.m = m
	} else {
		dsn, _ := testsvc.Postgres(t)
		storage, s3c, bucket := testsvc.S3(t)
		full := fmt.Sprintf("metadata: %q\nstorage: %q\n%s", dsn, storage, config)
		if err := os.WriteFile(cfg, []byte(full), 0o600); err != nil {
			t.Fatal(err)
		}
		d.store = []string{"--config", cfg}
		d.read = func(key string) []byte {
			out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
			if err != nil {
				t.Fatal(err)
			}
			defer out.Body.Close()
			b, err := io.ReadAll(out.Body)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		d.write = func(key string, b []byte) {
			if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
				t.Fatal(err)
			}
		}
		d.remove = func(key string) {
			if _, err := s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
				t.Fatal(err)
			}
		}
		d.exists = func(key string) bool {
			_, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
			return err == nil
		}
		// MinIO's own data directory, when known: an object whose
		// xl.meta is cut answers 500 to every request (ADR 0255).
		xl := os.Getenv("TEST_S3_DATA_DIR")
		if xl != "" {
			d.cutMeta = func(key string) error {
				return os.Truncate(filepath.Join(xl, bucket, filepath.FromSlash(key), "xl.meta"), 20)
			}
		}
		d.damageAt = func(r *mrand.Rand, key string) (string, error) {
			out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
			if err != nil {
				return "", err
			}
			b, err := io.ReadAll(out.Body)
			_ = out.Body.Close()
			if err != nil || len(b) < 20 {
				return "", fmt.Errorf("unreadable already: %v", err)
			}
			put := func(b []byte) error {
				_, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)})
				return err
			}
			ways := 3
			if xl != "" {
				ways = 4
			}
			switch r.IntN(ways) {
			case 0:
				b[r.IntN(len(b))] ^= 0x20
				return "flip", put(b)
			case 1:
				return "truncate", put(b[:r.IntN(len(b))])
			case 2:
				_, err := s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
				return "delete", err
			default:
				return "500", d.cutMeta(key)
			}
		}
		d.url = startServer(t, bin, dir, d.store...)
		m, err := sqlmeta.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		d.m = m
	}
	c, err := client.New(d.url)
	if err != nil {
		t.Fatal(err)
	}
	d.c = c
	return d
}

func randomPayload(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// redeemBytes redeems ref with the Go client and returns the verified bytes.
func redeemBytes(c *client.Client, ref claimcheck.Ref) ([]byte, error) {
	p, err := c.Redeem(context.Background(), ref)
	if err != nil {
		return nil, err
	}
	return p.Bytes()
}

// streamPut puts body as a stream: the client cannot hash it first, so the
// server gets the whole body (no digest-first shortcut).
func streamPut(t *testing.T, c *client.Client, ns string, body []byte) claimcheck.Ref {
	t.Helper()
	ref, err := c.Put(context.Background(), ns, io.MultiReader(bytes.NewReader(body)), claimcheck.PutOptions{})
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	return ref
}

func TestIntegrityDamagedBlobRepairedByPut(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(map[bool]string{false: "sqlite+files", true: "postgres+minio"}[pg], func(t *testing.T) {
			d := startDamageStore(t, pg, integrityConfig)
			ctx := context.Background()
			for _, how := range []string{"flip", "truncate", "delete"} {
				for _, ns := range []string{"plain", "zipped"} {
					for _, digestFirst := range []bool{false, true} {
						name := fmt.Sprintf("%s/%s/digest-first=%v", how, ns, digestFirst)
						payload := randomPayload(t, 200<<10)
						if ns == "zipped" {
							payload = photosJSON(200 << 10)
							payload = append(payload, []byte(name)...)
						}
						ref := streamPut(t, d.c, ns, payload)
						d.damage(t, ref, how)

						// The damaged claim answers a typed error, never
						// other bytes and never 500.
						if _, err := redeemBytes(d.c, ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
							t.Fatalf("%s: redeem of a damaged object: %v, want checksum mismatch", name, err)
						}
						resp, err := http.Get(d.url + "/v1/claims/" + ref.ID)
						if err != nil {
							t.Fatal(err)
						}
						body, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusUnprocessableEntity || !bytes.Contains(body, []byte(`"checksum_mismatch"`)) {
							t.Fatalf("%s: plain GET of a damaged blob: %d %s, want 422 checksum_mismatch", name, resp.StatusCode, body)
						}
						if _, stderr, code := run(t, d.bin, nil, "get", "--server="+d.url, ref.ID, "-o", filepath.Join(t.TempDir(), "out")); code != 5 {
							t.Fatalf("%s: claimcheck get of a damaged blob: exit %d, want 5: %s", name, code, stderr)
						}

						// The same bytes again: the put repairs the blob.
						var ref2 claimcheck.Ref
						if digestFirst {
							ref2, err = d.c.Put(ctx, ns, bytes.NewReader(payload), claimcheck.PutOptions{})
							if err != nil {
								t.Fatalf("%s: digest-first put: %v", name, err)
							}
						} else {
							ref2 = streamPut(t, d.c, ns, payload)
						}
						for _, r := range []claimcheck.Ref{ref2, ref} {
							got, err := redeemBytes(d.c, r)
							if err != nil || !bytes.Equal(got, payload) {
								t.Fatalf("%s: redeem of %s after the repairing put: %d bytes, %v", name, r.ID, len(got), err)
							}
						}
						c1, _ := d.m.Claim(ctx, ref.ID)
						c2, _ := d.m.Claim(ctx, ref2.ID)
						if c1.BlobID != c2.BlobID {
							t.Fatalf("%s: the repairing put stored blob %s, want the repaired %s", name, c2.BlobID, c1.BlobID)
						}
					}
				}
			}
			// fsck finds nothing left: every damaged blob was repaired
			// and every replaced object deleted.
			if out, stderr, code := run(t, d.bin, nil, append([]string{"fsck", "--verify"}, d.store...)...); code != 0 {
				t.Fatalf("fsck --verify after the repairs: exit %d\n%s%s", code, out, stderr)
			}
		})
	}
}

// A digest-first put onto a healthy blob whose object vanished without
// anyone noticing: the existence check sees it, marks the blob and asks
// for the body, which repairs it.
func TestIntegrityDigestFirstChecksObject(t *testing.T) {
	t.Parallel()
	d := startDamageStore(t, false, integrityConfig)
	ctx := context.Background()
	payload := randomPayload(t, 100<<10)
	ref := streamPut(t, d.c, "plain", payload)
	d.damage(t, ref, "delete")
	ref2, err := d.c.Put(ctx, "plain", bytes.NewReader(payload), claimcheck.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []claimcheck.Ref{ref, ref2} {
		if got, err := redeemBytes(d.c, r); err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("redeem %s: %d bytes, %v", r.ID, len(got), err)
		}
	}
	evs, err := d.m.Events(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range evs {
		kinds[e.Kind]++
	}
	if kinds[meta.EventBlobDamaged] != 1 || kinds[meta.EventBlobRepaired] != 1 {
		t.Fatalf("events %v: want one blob_damaged and one blob_repaired", kinds)
	}
}

// fsck compares sizes: a truncated object is found and marked without
// reading it; --verify finds a flipped byte.
func TestIntegrityFsckFindsTruncationAndCorruption(t *testing.T) {
	t.Parallel()
	d := startDamageStore(t, false, integrityConfig)
	short := streamPut(t, d.c, "plain", randomPayload(t, 100<<10))
	flipped := streamPut(t, d.c, "plain", randomPayload(t, 100<<10))
	streamPut(t, d.c, "zipped", photosJSON(50<<10)) // healthy
	d.damage(t, short, "truncate")
	d.damage(t, flipped, "flip")

	out, stderr, code := run(t, d.bin, nil, append([]string{"fsck"}, d.store...)...)
	if code != 1 || !strings.Contains(out, "wrong object size: 1") || !strings.Contains(out, d.key(t, short)) {
		t.Fatalf("fsck with a truncated object: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = run(t, d.bin, nil, append([]string{"fsck", "--verify", "--rate", "100000000"}, d.store...)...)
	if code != 1 || !strings.Contains(out, "corrupt: 2") || !strings.Contains(out, d.key(t, flipped)) ||
		!strings.Contains(out, "damaged blobs (marked before this run): 1") {
		t.Fatalf("fsck --verify with a flipped byte: exit %d\n%s%s", code, out, stderr)
	}
	// Both are marked: redeems answer at once, without streaming.
	for _, r := range []claimcheck.Ref{short, flipped} {
		if _, err := d.c.Redeem(context.Background(), r); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
			t.Fatalf("redeem %s after fsck marked it: %v", r.ID, err)
		}
	}
}

// fsck and gc go on past an object MinIO answers with 500 (its xl.meta
// cut): they name it with the other damage at the end, in text and JSON,
// and exit 1 (ADR 0255).
func TestIntegrityFsckGoesOnPastUnreadable(t *testing.T) {
	t.Parallel()
	d := startDamageStore(t, true, integrityConfig)
	if d.cutMeta == nil {
		t.Skip("TEST_S3_DATA_DIR is not set: skipping (scripts/minio.sh prints it)")
	}
	unreadable := streamPut(t, d.c, "plain", randomPayload(t, 100<<10))
	short := streamPut(t, d.c, "plain", randomPayload(t, 100<<10))
	healthy := photosJSON(50 << 10)
	good := streamPut(t, d.c, "zipped", healthy)
	if err := d.cutMeta(d.key(t, unreadable)); err != nil {
		t.Fatal(err)
	}
	d.damage(t, short, "truncate")

	out, stderr, code := run(t, d.bin, nil, append([]string{"fsck", "--json"}, d.store...)...)
	var rep struct {
		Unreadable []struct {
			Blob struct {
				Key string `json:"Key"`
			} `json:"blob"`
		} `json:"unreadable"`
		WrongSize []json.RawMessage `json:"wrong_size"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || len(rep.Unreadable) != 1 || len(rep.WrongSize) != 1 {
		t.Fatalf("fsck --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	out, stderr, code = run(t, d.bin, nil, append([]string{"fsck"}, d.store...)...)
	if code != 1 || !strings.Contains(out, "unreadable objects (the storage keeps answering them with errors): 1") ||
		!strings.Contains(out, d.key(t, unreadable)) || !strings.Contains(out, "wrong object size: 1") {
		t.Fatalf("fsck: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = run(t, d.bin, nil, append([]string{"gc"}, d.store...)...)
	if code != 1 || !strings.Contains(out, "unreadable") || !strings.Contains(out, d.key(t, unreadable)) {
		t.Fatalf("gc: exit %d\n%s%s", code, out, stderr)
	}
	if got, err := redeemBytes(d.c, good); err != nil || !bytes.Equal(got, healthy) {
		t.Fatalf("redeem of the healthy claim: %v", err)
	}
	if _, err := redeemBytes(d.c, unreadable); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("redeem of the unreadable claim: %v; want checksum mismatch", err)
	}
}

// A client that does not read trailers must not see a cleanly ended
// download of bytes that failed verification: the connection is aborted.
// The Go client, which reads the trailer, gets checksum_mismatch as before.
func TestIntegrityRedeemAbortsForPlainClients(t *testing.T) {
	t.Parallel()
	d := startDamageStore(t, false, integrityConfig)
	payload := randomPayload(t, 300<<10)
	ref := streamPut(t, d.c, "plain", payload)
	url := d.url + "/v1/claims/" + ref.ID
	// Each client sees fresh damage: a repairing put in between, since a
	// blob once found damaged is refused before any byte is sent.
	fresh := func() {
		t.Helper()
		streamPut(t, d.c, "plain", payload) // repairs (or is a plain dedup hit)
		if got, err := redeemBytes(d.c, ref); err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("redeem after the repair: %v", err)
		}
		d.damage(t, ref, "flip")
	}
	out := filepath.Join(t.TempDir(), "out")

	d.damage(t, ref, "flip")
	if b, err := exec.Command("curl", "-sS", "-o", out, url).CombinedOutput(); err == nil {
		t.Fatalf("curl -o ended successfully on a corrupt payload: %s", b)
	}
	fresh()
	if b, err := exec.Command("wget", "-q", "-t", "1", "-O", out, url).CombinedOutput(); err == nil {
		t.Fatalf("wget ended successfully on a corrupt payload: %s", b)
	}
	fresh()
	resp, err := http.Get(url) // net/http, no TE: trailers
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err == nil {
		t.Fatalf("plain net/http GET: status %d, read error %v; want 200 and a broken body", resp.StatusCode, err)
	}
	fresh()
	if _, err := redeemBytes(d.c, ref); !errors.Is(err, claimcheck.ErrChecksumMismatch) {
		t.Fatalf("Go client: %v, want checksum mismatch from the trailer", err)
	}
}

// Crypto-shredding erases (ADR 0096): after destroy-key answered, copies
// of every file of the SQLite metadata store hold neither the wrapped data
// key, nor a label of a shredded claim, nor the plaintext's digest.
func TestIntegrityShredForensics(t *testing.T) {
	t.Setenv("CLAIMCHECK_MASTER_KEY", "BQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU=")
	d := startDamageStore(t, false, "namespaces:\n  vault:\n    encryption: aes-256-gcm\n")
	ctx := context.Background()
	payload := []byte("salary of employee 4711: 123456")
	label := "needle-" + strings.ToLower(rand.Text())
	ref, err := d.c.Put(ctx, "vault", bytes.NewReader(payload), claimcheck.PutOptions{Labels: map[string]string{"person": label}})
	if err != nil {
		t.Fatal(err)
	}
	dk, err := d.m.LiveDataKey(ctx, "vault")
	if err != nil {
		t.Fatal(err)
	}
	digestHex := strings.TrimPrefix(ref.Digest, "sha256:")
	// A resumable upload in progress: its bytes arrive in clear, and its
	// declared sha256 is kept until it completes (ADR 0255).
	upload := bytes.Repeat([]byte("medical record of patient 0815; "), 100)
	uploadSum := sha256.Sum256(upload)
	uploadHex := hex.EncodeToString(uploadSum[:])
	loc := tusRequest(t, "POST", d.url+"/v1/namespaces/vault/tus", nil, http.StatusCreated,
		"Upload-Length", strconv.Itoa(len(upload)), "Upload-Metadata", "sha256 "+base64Std([]byte(uploadHex))).Header.Get("Location")
	tusRequest(t, "PATCH", loc, upload[:len(upload)/2], http.StatusNoContent,
		"Upload-Offset", "0", "Content-Type", "application/offset+octet-stream")
	secrets := map[string][]byte{
		"wrapped key":          dk.Wrapped,
		"wrapped key (base64)": []byte(base64Std(dk.Wrapped)),
		"label value":          []byte(label),
		"plaintext digest":     []byte(digestHex),
		"upload's sha256":      []byte(uploadHex),
	}
	blobFiles := func() map[string][]byte {
		out := map[string][]byte{}
		root := filepath.Join(d.store[3], "blobs")
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				b, rerr := os.ReadFile(p)
				if rerr == nil {
					out[p] = b
				}
			}
			return nil
		})
		return out
	}
	uploaded := func() bool {
		for _, b := range blobFiles() {
			if bytes.Contains(b, upload[:100]) {
				return true
			}
		}
		return false
	}
	if !uploaded() {
		t.Fatal("before the shred no object holds the upload's bytes: the scan cannot see them")
	}
	files := func() map[string][]byte {
		out := map[string][]byte{}
		dir := filepath.Dir(d.store[3]) // --data DIR
		matches, _ := filepath.Glob(filepath.Join(d.store[3], "claimcheck.db*"))
		if len(matches) == 0 {
			t.Fatalf("no metadata files under %s", dir)
		}
		for _, f := range matches {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(f)] = b
		}
		return out
	}
	// The check finds them before the shred, so it can find them at all.
	before := files()
	for what, s := range secrets {
		found := false
		for _, b := range before {
			found = found || bytes.Contains(b, s)
		}
		if !found && what != "wrapped key" {
			t.Fatalf("before the shred the %s is in no file: the scan cannot see it", what)
		}
	}
	if _, stderr, code := run(t, d.bin, nil, "destroy-key", "--server="+d.url, "vault", "--confirm", "vault"); code != 0 {
		t.Fatalf("destroy-key: exit %d: %s", code, stderr)
	}
	for name, b := range files() {
		for what, s := range secrets {
			if bytes.Contains(b, s) {
				t.Errorf("after destroy-key, %s still holds the %s", name, what)
			}
		}
	}
	if _, err := redeemBytes(d.c, ref); !errors.Is(err, claimcheck.ErrGone) {
		t.Fatalf("redeem after the shred: %v, want gone", err)
	}
	if uploaded() {
		t.Error("after destroy-key an object still holds the bytes of the upload in progress")
	}
	head := tusRequest(t, "HEAD", loc, nil, http.StatusGone)
	if !strings.Contains(head.Header.Get("Claimcheck-Error"), "key_destroyed") || strings.Contains(head.Header.Get("Upload-Metadata"), "sha256") {
		t.Errorf("HEAD of the upload after the shred: Claimcheck-Error %q, Upload-Metadata %q; want key_destroyed and no sha256",
			head.Header.Get("Claimcheck-Error"), head.Header.Get("Upload-Metadata"))
	}
}

// tusRequest sends one tus request and fails the test unless it is
// answered want.
func tusRequest(t *testing.T, method, url string, body []byte, want int, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Tus-Resumable", "1.0.0")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s %s; want %d", method, url, resp.Status, b, want)
	}
	return resp
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
