package sqlmeta

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/meta"
)

// TestPostgresRecordReadsInPart: on PostgreSQL each namespace of a batch
// of receipts is written by itself, so a batch can be written in part.
// A group the database refuses (here a namespace PostgreSQL cannot
// store: a NUL byte) leaves the others written, and RecordReads names
// exactly the reads it did not write, so that a retry counts none twice.
func TestPostgresRecordReadsInPart(t *testing.T) {
	dsn := os.Getenv("TEST_DATABASE_URL")
	if dsn == "" {
		t.Skip("TEST_DATABASE_URL is not set: skipping the PostgreSQL check of receipts written in part")
	}
	s := openPostgresStore(t, dsn)
	defer s.Close()
	base := time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC)
	a := seedActiveClaims(t, s, "a", base, 2)
	b := seedActiveClaims(t, s, "b", base, 1)
	ctx := context.Background()
	at := base.Add(time.Minute)
	bad := meta.Read{ClaimID: b[0], Namespace: "b\x00", At: at.Add(1)}
	skipped, err := s.RecordReads(ctx, []meta.Read{
		{ClaimID: a[0], Namespace: "a", At: at},
		bad,
		{ClaimID: b[0], Namespace: "b", At: at.Add(2)},
		{ClaimID: a[1], Namespace: "a", At: at.Add(3)},
	})
	unrecorded, ok := errors.AsType[*meta.UnrecordedReadsError](err)
	if !ok || !slices.Equal(unrecorded.Reads, []meta.Read{bad}) || len(skipped) != 0 {
		t.Fatalf("RecordReads with a namespace PostgreSQL refuses: skipped %v, %v; want an UnrecordedReadsError of that read alone", skipped, err)
	}
	for _, id := range []string{a[0], a[1], b[0]} {
		if c, err := s.Claim(ctx, id); err != nil || c.Reads != 1 {
			t.Errorf("claim %s after the batch: reads %d, %v; want 1", id, c.Reads, err)
		}
	}
}
