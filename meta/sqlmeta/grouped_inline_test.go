package sqlmeta

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// TestInlineGroupStoresEveryRow: inline objects written while another
// insert of their namespace runs are written together, and each row
// holds exactly its own bytes; two writes of one key in a group (which
// one statement cannot do) still both complete, one after the other,
// and the key holds one of them whole.
func TestInlineGroupStoresEveryRow(t *testing.T) {
	dsn := os.Getenv("TEST_DATABASE_URL")
	if dsn == "" {
		t.Skip("TEST_DATABASE_URL is not set: statement groups are PostgreSQL's")
	}
	s := openPostgresStore(t, dsn)
	ctx := context.Background()
	const ns = "inlinegroup"
	// The group's statement itself writes a batch of distinct keys.
	var batch []*inlineReq
	for i := range 3 {
		batch = append(batch, &inlineReq{ctx: ctx, key: fmt.Sprintf("%s/inline/b_batch%d", ns, i), data: []byte{byte(i), 1, 2}, now: time.Now()})
	}
	if err := s.putInlineGroupOnce(batch); err != nil {
		t.Fatalf("one statement for three rows: %v", err)
	}
	for _, r := range batch {
		if got, err := s.InlineObjectBytes(ctx, r.key); err != nil || !bytes.Equal(got, r.data) {
			t.Fatalf("%s written by the group: %v, %v; want %v", r.key, got, err, r.data)
		}
	}
	if err := s.DeleteInlineObjects(ctx, []string{batch[0].key, batch[1].key, batch[2].key}); err != nil {
		t.Fatal(err)
	}
	g := &s.inlineGroups
	release := holdGroupKey(g, ns)

	type write struct {
		key  string
		data []byte
	}
	var writes []write
	for i := range 6 {
		writes = append(writes, write{fmt.Sprintf("%s/inline/b_%d", ns, i), bytes.Repeat([]byte{byte(i)}, 1000+i)})
	}
	twice := ns + "/inline/b_twice"
	writes = append(writes, write{twice, []byte("first")}, write{twice, []byte("second")})
	var wg sync.WaitGroup
	for _, w := range writes {
		wg.Go(func() {
			if err := s.PutInlineObject(ctx, w.key, w.data, time.Now()); err != nil {
				t.Errorf("put %s: %v", w.key, err)
			}
		})
	}
	for g.Waiting(ns) < len(writes) {
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()

	for _, w := range writes[:6] {
		got, err := s.InlineObjectBytes(ctx, w.key)
		if err != nil || !bytes.Equal(got, w.data) {
			t.Errorf("%s: %d bytes, %v; want its own %d", w.key, len(got), err, len(w.data))
		}
	}
	if got, err := s.InlineObjectBytes(ctx, twice); err != nil || (string(got) != "first" && string(got) != "second") {
		t.Errorf("%s: %q, %v; want one of the two writes whole", twice, got, err)
	}
	rows, err := s.ListInlineObjects(ctx, ns+"/", "", 100)
	if err != nil || len(rows) != 7 {
		t.Fatalf("listed %d rows (%v), want 7", len(rows), err)
	}
	if err := s.DeleteInlineObjects(ctx, []string{writes[0].key, twice, ns + "/inline/never"}); err != nil {
		t.Fatal(err)
	}
	if rows, err := s.ListInlineObjects(ctx, ns+"/", "", 100); err != nil || len(rows) != 5 {
		t.Fatalf("after deleting two (and one missing key): %d rows, %v", len(rows), err)
	}
}
