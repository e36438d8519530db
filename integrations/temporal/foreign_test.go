package temporal_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	cctemporal "github.com/claimcheck/claimcheck/integrations/temporal"
	"github.com/claimcheck/claimcheck/integrations/temporal/foreignbucket"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
)

func TestParseForeignKey(t *testing.T) {
	h := hexSum([]byte("x"))
	for _, tc := range []struct {
		key  string
		want cctemporal.ForeignKey
	}{
		{"v0/ns/default/wt/Order%2FFlow/wi/order-1/ri/r-1/d/sha256/" + h,
			cctemporal.ForeignKey{Namespace: "default", WorkflowType: "Order/Flow", WorkflowID: "order-1", RunID: "r-1", Hash: h}},
		{"v0/ns/default/wt/W/wi/a%3Ab/ri/null/d/sha256/" + h, // gcsdriver's encoding; a start input without a run
			cctemporal.ForeignKey{Namespace: "default", WorkflowType: "W", WorkflowID: "a:b", Hash: h}},
		{"v0/ns/default/at/Fetch/ai/7/ri/r/d/sha256/" + h,
			cctemporal.ForeignKey{Namespace: "default", ActivityType: "Fetch", ActivityID: "7", RunID: "r", Hash: h}},
		{"v0/ns/default/d/sha256/" + h, cctemporal.ForeignKey{Namespace: "default", Hash: h}}, // gcsdriver, key too long
		{"v0/d/sha256/" + h, cctemporal.ForeignKey{Hash: h}},
	} {
		got, err := cctemporal.ParseForeignKey(tc.key)
		if err != nil || got != tc.want {
			t.Errorf("ParseForeignKey(%q) = %+v, %v; want %+v", tc.key, got, err, tc.want)
		}
	}
	for _, key := range []string{"", "v1/d/sha256/" + h, "v0/d/sha256/abc", "v0/ns/d/sha256/" + h, "v0/xx/y/d/sha256/" + h, "v0/d/md5/" + h} {
		if _, err := cctemporal.ParseForeignKey(key); !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), key) {
			t.Errorf("ParseForeignKey(%q): %v; want invalid, naming the key", key, err)
		}
	}
}

// memBucket is a ForeignBucket on the in-memory blob store.
func memBucket(t *testing.T) (foreignbucket.Bucket, blob.Store) {
	t.Helper()
	s, err := blob.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	return foreignbucket.Of(s), s
}

func writeObject(t *testing.T, s blob.Store, key string, data []byte) {
	t.Helper()
	w, err := s.NewWriter(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// stockObject returns a serialized payload, its stock key and claim data.
func stockObject(t *testing.T, bucket string) ([]byte, string, map[string]string) {
	t.Helper()
	data, err := proto.Marshal(&commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"hello"`)})
	if err != nil {
		t.Fatal(err)
	}
	key := "v0/ns/default/wt/W/wi/wf-1/ri/run-1/d/sha256/" + hexSum(data)
	return data, key, map[string]string{"bucket": bucket, "key": key, "hash_algorithm": "sha256", "hash_value": hexSum(data)}
}

func retrieve(fd converter.StorageDriver, cd map[string]string) ([]*commonpb.Payload, error) {
	return fd.Retrieve(converter.StorageDriverRetrieveContext{Context: context.Background()}, []converter.StorageDriverClaim{{ClaimData: cd}})
}

// A reference whose stored bytes do not hash to its value is refused,
// naming the key and both hashes, and no payload is handed out; so are
// references naming another bucket or missing a field.
func TestForeignDriverRefusesWhatDoesNotVerify(t *testing.T) {
	b, s := memBucket(t)
	data, key, cd := stockObject(t, "payloads")
	fd, err := cctemporal.NewForeignDriver(nil, cctemporal.ForeignOptions{Name: cctemporal.S3DriverName, Buckets: map[string]cctemporal.ForeignBucket{"payloads": b}})
	if err != nil {
		t.Fatal(err)
	}
	writeObject(t, s, key, data)
	ps, err := retrieve(fd, cd)
	if err != nil || string(ps[0].GetData()) != `"hello"` {
		t.Fatalf("retrieve: %v, %v", ps, err)
	}

	altered := append(bytes.Clone(data), 0)
	writeObject(t, s, key, altered)
	ps, err = retrieve(fd, cd)
	if !errors.Is(err, claimcheck.ErrChecksumMismatch) || ps != nil {
		t.Fatalf("altered object: %v, %v; want a checksum mismatch and no payload", ps, err)
	}
	for _, want := range []string{key, hexSum(data), hexSum(altered)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}

	for field, change := range map[string]func(map[string]string){
		`"bucket" "elsewhere"`: func(m map[string]string) { m["bucket"] = "elsewhere" },
		`"hash_value"`:         func(m map[string]string) { delete(m, "hash_value") },
		`"hash_algorithm"`:     func(m map[string]string) { m["hash_algorithm"] = "md5" },
		`"key"`:                func(m map[string]string) { m["key"] = strings.Replace(m["key"], hexSum(data), hexSum(altered), 1) },
	} {
		m := map[string]string{}
		for k, v := range cd {
			m[k] = v
		}
		change(m)
		if _, err := retrieve(fd, m); !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), field) {
			t.Errorf("claim data with %s changed: %v; want invalid, naming it", field, err)
		}
	}
	if _, err := fd.Store(converter.StorageDriverStoreContext{Context: context.Background()}, nil); !errors.Is(err, claimcheck.ErrInvalidArgument) {
		t.Errorf("Store: %v, want refused", err)
	}
}

// The gcsdriver's references, read from fake-gcs-server through the gs://
// backend (Temporal's gcsdriver module cannot be fetched here; the object
// and claim data are written as it writes them).
func TestForeignDriverReadsGCSDriverObjects(t *testing.T) {
	url := testsvc.GCS(t)
	ctx := context.Background()
	s, err := blob.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	bucket := strings.SplitN(strings.TrimPrefix(url, "gs://"), "?", 2)[0]
	data, _, cd := stockObject(t, bucket)
	key := "v0/ns/default/wt/W/wi/order%3A1/ri/run-1/d/sha256/" + hexSum(data) // ':' percent-encoded as gcsdriver does
	cd["key"] = key
	writeObject(t, s, key, data)
	fd, err := cctemporal.NewForeignDriver(nil, cctemporal.ForeignOptions{Name: cctemporal.GCSDriverName,
		Buckets: map[string]cctemporal.ForeignBucket{bucket: foreignbucket.Of(s)}})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := retrieve(fd, cd)
	if err != nil || string(ps[0].GetData()) != `"hello"` {
		t.Fatalf("retrieve: %v, %v", ps, err)
	}
	k, _ := cctemporal.ParseForeignKey(key)
	if k.WorkflowID != "order:1" {
		t.Fatalf("workflow id %q from the gcsdriver key, want order:1", k.WorkflowID)
	}
}

// Adopt refuses a namespace that deletes claims after their first read
// (replay reads them again), before it lists anything.
func TestAdoptRefusesReplayUnsafeNamespace(t *testing.T) {
	b, _ := memBucket(t)
	yes := true
	store := enginetest.Open(t, engine.Config{Namespaces: map[string]claimcheck.Policy{
		"once": {TTL: claimcheck.TTLPolicy{DeleteAfterRead: &yes}}}})
	_, err := cctemporal.Adopt(context.Background(), store, cctemporal.AdoptOptions{Bucket: "b", Objects: b, Namespace: "once", DryRun: true})
	if !errors.Is(err, cctemporal.ErrReplayUnsafe) {
		t.Fatalf("adopt into a delete-after-read namespace: %v, want ErrReplayUnsafe", err)
	}
}

// Adopt leaves alone what the keeper could not end with its run: a
// standalone activity's object, one without an owner, and one whose
// workflow id is longer than a label holds (the keeper would read the
// cut id, find no run, and let the claim expire under a live history).
func TestAdoptLeavesWhatNoRunOwns(t *testing.T) {
	b, s := memBucket(t)
	data, _, _ := stockObject(t, "b")
	h := hexSum(data)
	long := strings.Repeat("w", 300)
	for _, key := range []string{
		"v0/ns/default/at/Fetch/ai/1/ri/r/d/sha256/" + h,
		"v0/d/sha256/" + h,
		"v0/ns/default/wt/W/wi/" + long + "/ri/r/d/sha256/" + h,
		"v0/ns/default/wt/W/wi/ok/ri/r/d/sha256/" + h,
		"other/file",
	} {
		writeObject(t, s, key, data)
	}
	store := openStore(t)
	rep, err := cctemporal.Adopt(context.Background(), store, cctemporal.AdoptOptions{Bucket: "b", Objects: b})
	if err != nil || rep.Counts[cctemporal.AdoptUnowned] != 3 || rep.Counts[cctemporal.AdoptAdopted] != 1 || rep.Deleted != 1 {
		t.Fatalf("adopt: %+v, %v; want 3 unowned, 1 adopted", rep, err)
	}
	left, _, _ := b.List(context.Background(), "", "", 0)
	if len(left) != 4 {
		t.Fatalf("bucket after adoption: %v; want everything but the adopted object", left)
	}
}

// FuzzParseForeignKey: no key makes the parser panic; a key it accepts
// ends in its hash, and a refusal names the key.
func FuzzParseForeignKey(f *testing.F) {
	h := hexSum([]byte("x"))
	for _, k := range []string{"v0/d/sha256/" + h, "v0/ns/a/wt/b/wi/c%2F/ri/null/d/sha256/" + h, "v0/ns/%zz/d/sha256/" + h, "v0//d/sha256/" + h} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		k, err := cctemporal.ParseForeignKey(key)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(key)) {
				t.Fatalf("refusal %v does not name the key", err)
			}
			return
		}
		if !strings.HasSuffix(key, "/d/sha256/"+k.Hash) || len(k.Hash) != 64 {
			t.Fatalf("accepted %q with hash %q", key, k.Hash)
		}
	})
}
