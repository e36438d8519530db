package kafka

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/internal/testkit/brokertest"
	"github.com/claimcheck/claimcheck/internal/testkit/enginetest"
	"github.com/claimcheck/claimcheck/internal/testkit/testsvc"
	"github.com/claimcheck/claimcheck/sweep"
)

// The vectors are built from bakdata's format as its documentation
// describes it (no JVM client runs here): the flag as the value's first
// byte or in the header, the payload inline or behind an s3://, abs:// or
// gs:// URI, compressed as Kafka's Java client frames each codec (gzip
// stream, snappy-java's xerial framing, LZ4 frame, zstd frame).

func compressVector(t testing.TB, c LargeCompression, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch c {
	case LargeNone:
		return data
	case LargeGzip:
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(data)
		_ = w.Close()
	case LargeSnappy:
		buf.Write(xerialMagic)
		_ = binary.Write(&buf, binary.BigEndian, [2]int32{1, 1})
		for len(data) > 0 { // blocks of 32 KiB, as snappy-java writes
			n := min(len(data), 32<<10)
			block := s2.EncodeSnappy(nil, data[:n])
			_ = binary.Write(&buf, binary.BigEndian, uint32(len(block)))
			buf.Write(block)
			data = data[n:]
		}
	case LargeLZ4:
		w := lz4.NewWriter(&buf)
		_, _ = w.Write(data)
		_ = w.Close()
	case LargeZstd:
		w, _ := zstd.NewWriter(&buf)
		_, _ = w.Write(data)
		_ = w.Close()
	}
	return buf.Bytes()
}

func memStore(t *testing.T) blob.Store {
	t.Helper()
	s, err := blob.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func putObject(t *testing.T, s blob.Store, key string, data []byte) {
	t.Helper()
	w, err := s.NewWriter(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// Every placement of the flag × inline or behind each URI scheme × every
// compression the header names decodes to the payload.
func TestDecodeLargeVectors(t *testing.T) {
	ctx := context.Background()
	payload := brokertest.Body(100_000)
	stores := map[string]blob.Store{"s3://payloads": memStore(t), "abs://container": memStore(t), "gs://bucket": memStore(t)}
	cfg := LargeMessageConfig{Buckets: map[string]ObjectReader{}}
	for b, s := range stores {
		cfg.Buckets[b] = s
	}
	for _, comp := range []LargeCompression{LargeNone, LargeGzip, LargeSnappy, LargeLZ4, LargeZstd} {
		stored := compressVector(t, comp, payload)
		for _, where := range []string{"inline", "s3://payloads", "abs://container", "gs://bucket"} {
			body, flag := stored, largeInline
			if where != "inline" {
				key := "prefix/orders/values/" + strings.Repeat("ab", 8) + string(rune('a'+comp))
				putObject(t, stores[where], key, stored)
				body, flag = []byte(where+"/"+key), largeBacked
			}
			for _, headers := range []bool{false, true} {
				hs := []kgo.RecordHeader{}
				value := append([]byte{flag}, body...)
				if headers {
					value = body
					hs = append(hs, kgo.RecordHeader{Key: HeaderLargeValue, Value: []byte{flag}})
					hs = append(hs, kgo.RecordHeader{Key: HeaderLargeCompression, Value: []byte{byte(comp)}})
				} else if comp != LargeNone {
					continue // without headers there is no compression header
				}
				got, err := DecodeLarge(ctx, cfg, value, hs, false)
				if err != nil || !bytes.Equal(got, payload) {
					t.Errorf("compression %d, %s, headers %v: %d bytes, %v; want the payload", comp, where, headers, len(got), err)
				}
			}
		}
	}
	// A key, flagged in its own header.
	got, err := DecodeLarge(ctx, cfg, []byte("k1"), []kgo.RecordHeader{{Key: HeaderLargeKey, Value: []byte{0}}}, true)
	if err != nil || string(got) != "k1" {
		t.Fatalf("key: %q, %v", got, err)
	}
}

// What cannot be read is refused, naming the header or URI as the
// record carries it; a missing object is permanent (not found).
func TestDecodeLargeRefusals(t *testing.T) {
	ctx := context.Background()
	cfg := LargeMessageConfig{Buckets: map[string]ObjectReader{"s3://payloads": memStore(t)}, MaxSize: 1000}
	for _, tc := range []struct {
		name    string
		value   []byte
		headers []kgo.RecordHeader
		want    string
	}{
		{"flag byte", []byte{7, 'x'}, nil, "first byte of the value is 7"},
		{"flag header", []byte("x"), []kgo.RecordHeader{{Key: HeaderLargeValue, Value: []byte{2}}}, "header " + HeaderLargeValue + " is 2"},
		{"flag header length", []byte("x"), []kgo.RecordHeader{{Key: HeaderLargeValue, Value: []byte{0, 0}}}, HeaderLargeValue + " has 2 bytes"},
		{"compression", []byte("x"), []kgo.RecordHeader{{Key: HeaderLargeValue, Value: []byte{0}}, {Key: HeaderLargeCompression, Value: []byte{9}}}, HeaderLargeCompression + " is 9"},
		{"scheme", append([]byte{1}, "http://payloads/k"...), nil, `URI "http://payloads/k": scheme "http"`},
		{"bucket", append([]byte{1}, "s3://other/k"...), nil, `URI "s3://other/k": s3://other is not one of the configured buckets`},
		{"corrupt gzip", []byte("not gzip"), []kgo.RecordHeader{{Key: HeaderLargeValue, Value: []byte{0}}, {Key: HeaderLargeCompression, Value: []byte{1}}}, HeaderLargeCompression + " 1"},
		{"too large", append([]byte{0}, make([]byte, 10)...), []kgo.RecordHeader{{Key: HeaderLargeCompression, Value: []byte{4}}}, HeaderLargeCompression},
		{"empty", nil, nil, "empty value"},
	} {
		v := tc.value
		if tc.name == "too large" {
			v = append([]byte{0}, compressVector(t, LargeZstd, make([]byte, 5000))...)
		}
		_, err := DecodeLarge(ctx, cfg, v, tc.headers, false)
		if !claimcheck.Permanent(err) || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a permanent error containing %q", tc.name, err, tc.want)
		}
	}
	_, err := DecodeLarge(ctx, cfg, append([]byte{1}, "s3://payloads/gone"...), nil, false)
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, claimcheck.ErrNotFound) || !strings.Contains(err.Error(), "s3://payloads/gone") {
		t.Fatalf("missing object: %v; want not found, naming the URI", err)
	}
}

// rawStore opens a store whose namespace "raw" keeps payloads as they are
// on storage, and a reader of that storage as a stock consumer reads it.
func rawStore(t *testing.T, storage string) (*engine.Store, blob.Store) {
	t.Helper()
	no := false
	store := enginetest.Open(t, engine.Config{Storage: storage, Sweeper: sweep.Config{Disabled: true},
		Namespaces: map[string]claimcheck.Policy{"raw": {Threshold: 1024, Compression: claimcheck.CompressionNone,
			TTL: claimcheck.TTLPolicy{MaxAge: claimcheck.Duration(time.Hour), DeleteAfterRead: &no}}}})
	r, err := blob.Open(context.Background(), storage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return store, r
}

// A Publisher writing bakdata's format: a stock consumer (DecodeLarge with
// nothing but the URI's bucket) reads every value, inline and offloaded,
// in both placements; claimcheck's consumer reads them too, through the
// reference, and releases. Files, and MinIO through the s3:// backend.
func TestLargeMessageWriterRoundTrip(t *testing.T) {
	for _, backend := range []string{"files", "minio"} {
		t.Run(backend, func(t *testing.T) {
			storage := "file://" + filepath.ToSlash(t.TempDir())
			prefix := "s3://claimcheck-files/"
			if backend == "minio" {
				var bucket string
				storage, _, bucket = testsvc.S3(t)
				prefix = "s3://" + bucket + "/"
			}
			store, objects := rawStore(t, storage)
			bucket := strings.TrimSuffix(prefix, "/")
			stock := LargeMessageConfig{Buckets: map[string]ObjectReader{bucket: objects}}
			addrs, prod := startKafka(t, 1)
			for _, headers := range []bool{false, true} {
				p, err := NewPublisher(t.Context(), store, prod, PublisherConfig{Namespace: "raw",
					LargeMessage: &LargeMessageWriter{URIPrefix: prefix, Headers: headers}})
				if err != nil {
					t.Fatal(err)
				}
				small, big := []byte("small value"), brokertest.Body(50_000)
				recs := []*kgo.Record{{Topic: topic, Value: small}, {Topic: topic, Value: big}}
				if err := p.Publish(t.Context(), recs...); err != nil {
					t.Fatal(err)
				}
				fetched := fetchAll(t, addrs, 2*(boolInt(headers)+1))
				fetched = fetched[len(fetched)-2:]
				for i, want := range [][]byte{small, big} {
					got, err := DecodeLarge(t.Context(), stock, fetched[i].Value, fetched[i].Headers, false)
					if err != nil || !bytes.Equal(got, want) {
						t.Fatalf("headers %v, record %d as a stock consumer reads it: %d bytes, %v", headers, i, len(got), err)
					}
					m, err := resolve(t.Context(), store, &stock, fetched[i])
					if err != nil || m.Err != nil || !bytes.Equal(m.Body, want) {
						t.Fatalf("headers %v, record %d as claimcheck reads it: %+v, %v", headers, i, m, err)
					}
					if (m.Ref != nil) != (i == 1) {
						t.Fatalf("headers %v, record %d: ref %v; want one for the offloaded value only", headers, i, m.Ref)
					}
				}
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fetchAll reads the topic from the start until it has n records.
func fetchAll(t *testing.T, addrs []string, n int) []*kgo.Record {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), waitLong)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		f := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d records of %d", len(out), n)
		}
		out = append(out, f.Records()...)
	}
	return out
}

// A writer refuses a namespace whose objects are not the payload.
func TestLargeMessageWriterRefusesStoredForms(t *testing.T) {
	store, _ := brokertest.Open(t) // zstd by default
	_, prod := startKafka(t, 1)
	_, err := NewPublisher(t.Context(), store, prod, PublisherConfig{Namespace: nsAcks, LargeMessage: &LargeMessageWriter{URIPrefix: "s3://b/"}})
	if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "compression: none") {
		t.Fatalf("namespace with compression: %v", err)
	}
	raw, _ := rawStore(t, "file://"+filepath.ToSlash(t.TempDir()))
	_, err = NewPublisher(t.Context(), raw, prod, PublisherConfig{Namespace: "raw", LargeMessage: &LargeMessageWriter{URIPrefix: "http://b/"}})
	if !errors.Is(err, claimcheck.ErrInvalidArgument) || !strings.Contains(err.Error(), "LargeMessage.URIPrefix") {
		t.Fatalf("http prefix: %v", err)
	}
}

// FuzzDecodeLarge: no record makes DecodeLarge panic or hand out more
// than MaxSize bytes, and every refusal is permanent or a read of a
// configured bucket.
func FuzzDecodeLarge(f *testing.F) {
	f.Add([]byte{0, 'x'}, []byte{}, byte(0), false)
	f.Add([]byte("s3://payloads/k"), []byte{1}, byte(0), true)
	f.Add(compressVector(f, LargeZstd, make([]byte, 3000)), []byte{0}, byte(4), true)
	f.Add(append([]byte{0}, compressVector(f, LargeSnappy, []byte("snappy payload"))...), []byte{}, byte(2), true)
	f.Add([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}, []byte{0}, byte(2), true)
	f.Fuzz(func(t *testing.T, value, flag []byte, comp byte, withComp bool) {
		s, _ := blob.Open(context.Background(), "mem://")
		defer func() { _ = s.Close() }()
		putObject(t, s, "k", []byte("stored"))
		cfg := LargeMessageConfig{Buckets: map[string]ObjectReader{"s3://payloads": s}, MaxSize: 4096}
		var hs []kgo.RecordHeader
		if len(flag) > 0 {
			hs = append(hs, kgo.RecordHeader{Key: HeaderLargeValue, Value: flag})
		}
		if withComp {
			hs = append(hs, kgo.RecordHeader{Key: HeaderLargeCompression, Value: []byte{comp}})
		}
		out, err := DecodeLarge(context.Background(), cfg, value, hs, false)
		if err != nil && !claimcheck.Permanent(err) {
			t.Fatalf("a refusal that is not permanent: %v", err)
		}
		if int64(len(out)) > cfg.MaxSize {
			t.Fatalf("%d bytes out, MaxSize %d", len(out), cfg.MaxSize)
		}
	})
}

// failingReader is a bucket whose service is down.
type failingReader struct{}

func (failingReader) NewReader(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.New("connection refused")
}

// A consumer tells an outage (the record is re-read) from a record that
// can never be read (the handler is told, the record dead-lettered).
func TestLargeMessageResolveOutageOrLoss(t *testing.T) {
	cfg := &LargeMessageConfig{Buckets: map[string]ObjectReader{"s3://down": failingReader{}, "s3://up": memStore(t)}}
	down := &kgo.Record{Topic: topic, Value: append([]byte{1}, "s3://down/k"...)}
	if m, err := resolve(t.Context(), nil, cfg, down); err == nil {
		t.Fatalf("outage: %+v; want an error to retry", m)
	}
	gone := &kgo.Record{Topic: topic, Value: append([]byte{1}, "s3://up/missing"...)}
	m, err := resolve(t.Context(), nil, cfg, gone)
	if err != nil || m.Err == nil || !errors.Is(m.Err, claimcheck.ErrNotFound) || m.Body != nil {
		t.Fatalf("missing object: %+v, %v; want Message.Err (not found) and no body", m, err)
	}
	if got := claimcheck.ResolveFailure(m.Err); got != "not_found" {
		t.Fatalf("metric label %q, want not_found", got)
	}
}

// With headers, the writer says the compression (none) as well as the flag.
func TestLargeMessageWriterHeaders(t *testing.T) {
	w := LargeMessageWriter{URIPrefix: "s3://b/", Headers: true}
	v, hs := w.encode(largeBacked, []byte("s3://b/k"))
	if string(v) != "s3://b/k" || len(hs) != 2 || hs[0].Key != HeaderLargeValue || hs[0].Value[0] != 1 ||
		hs[1].Key != HeaderLargeCompression || hs[1].Value[0] != 0 {
		t.Fatalf("value %q, headers %v", v, hs)
	}
	if v, hs := (LargeMessageWriter{URIPrefix: "s3://b/"}).encode(largeInline, []byte("x")); string(v) != "\x00x" || hs != nil {
		t.Fatalf("first-byte placement: %q, %v", v, hs)
	}
}
