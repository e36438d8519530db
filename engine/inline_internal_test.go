package engine

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/claimcheck/claimcheck/blob"
	"github.com/claimcheck/claimcheck/blob/blobtest"
	"github.com/claimcheck/claimcheck/blob/memstore"
	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// TestInlineStoreConformance: the blob conformance suite, with every key
// in the inline form, runs against the rows of a real SQLite database,
// and of PostgreSQL when TEST_DATABASE_URL names one.
func TestInlineStoreConformance(t *testing.T) {
	dsns := map[string]string{"sqlite": "sqlite::memory:"}
	if dsn := os.Getenv("TEST_DATABASE_URL"); dsn != "" {
		dsns["postgres"] = dsn
	}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			blobtest.RunWith(t, func(t *testing.T) blob.Store {
				m, err := sqlmeta.Open(t.Context(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = m.Close() })
				return newInlineStore(memstore.New(), m, clock.NewFake(time.Now()))
			}, blobtest.Options{KeyPrefix: "ns/" + inlineSegment + "/", MaxObjectSize: int(maxInlineObject)})
		})
	}
}

// TestInlineStoreListsBothInPages: a listing walked page by page gives
// the bucket's objects and the rows', each once, and every token is
// printable text (the backstop keeps it in the metadata database, and
// PostgreSQL refuses a NUL in text).
func TestInlineStoreListsBothInPages(t *testing.T) {
	ctx := t.Context()
	m, err := sqlmeta.Open(ctx, "sqlite::memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	objects := memstore.New()
	t.Cleanup(func() { _ = objects.Close() })
	s := newInlineStore(objects, m, clock.NewFake(time.Now()))
	var want []string
	for i := range 3 {
		for _, key := range []string{objectKey("ns", newBlobID(time.Now())), inlineObjectKey("ns", newBlobID(time.Now()))} {
			w, err := s.NewWriter(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(bytes.Repeat([]byte{byte(i)}, 10+i)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			want = append(want, key)
		}
	}
	var got []string
	token := ""
	for range 20 {
		objs, next, err := s.List(ctx, "ns/", token, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			got = append(got, o.Key)
		}
		if strings.ContainsFunc(next, func(r rune) bool { return !unicode.IsPrint(r) }) {
			t.Fatalf("token %q is not printable text", next)
		}
		if next == "" {
			break
		}
		token = next
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
}
