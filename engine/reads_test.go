package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/meta"
	"github.com/claimcheck/claimcheck/meta/sqlmeta"
)

// partialReads is a metadata store that writes read receipts as a store
// writing each namespace by itself does when one of them fails: of a
// batch with reads of namespace "plain" and others, it records those of
// "plain" only and reports the others unrecorded. Its first call waits
// for hold, so that the receipts queued meanwhile make one batch.
type partialReads struct {
	meta.Store
	started chan struct{} // closed when the first call begins
	hold    chan struct{}

	mu    sync.Mutex
	calls [][]meta.Read
}

func (p *partialReads) RecordReads(ctx context.Context, reads []meta.Read) ([]string, error) {
	p.mu.Lock()
	p.calls = append(p.calls, slices.Clone(reads))
	first := len(p.calls) == 1
	p.mu.Unlock()
	if first {
		close(p.started)
		<-p.hold
	}
	var plain, other []meta.Read
	for _, r := range reads {
		if r.Namespace == "plain" {
			plain = append(plain, r)
		} else {
			other = append(other, r)
		}
	}
	if len(plain) == 0 || len(other) == 0 {
		return p.Store.RecordReads(ctx, reads)
	}
	skipped, err := p.Store.RecordReads(ctx, plain)
	if err != nil {
		return skipped, err
	}
	return skipped, &meta.UnrecordedReadsError{Reads: other, Err: errors.New("namespace gz: connection refused")}
}

// TestReadReceiptsNameNamespaceAndRetryOnlyUnrecorded: a redeem's receipt
// carries the claim's namespace, and when the store wrote part of a batch,
// the engine's retry sends only the rest: every read counts once.
func TestReadReceiptsNameNamespaceAndRetryOnlyUnrecorded(t *testing.T) {
	ctx := context.Background()
	m, err := sqlmeta.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "claimcheck.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	p := &partialReads{Store: m, started: make(chan struct{}), hold: make(chan struct{})}
	b := setup(t, func(c *engine.Config) { c.MetaStore = p })

	first := b.put(t, "plain", jsonDoc(100))
	refs := []claimcheck.Ref{b.put(t, "plain", jsonDoc(200)), b.put(t, "gz", jsonDoc(300))}
	if _, err := b.redeem(t, first); err != nil {
		t.Fatal(err)
	}
	// The first batch is being written (and waits): the next two
	// receipts queue up behind it, one batch of two namespaces.
	<-p.started
	for _, ref := range refs {
		if _, err := b.redeem(t, ref); err != nil {
			t.Fatal(err)
		}
	}
	close(p.hold)
	for _, ref := range append(refs, first) {
		info, err := b.store.Stat(ctx, ref)
		if err != nil || info.Reads != 1 {
			t.Errorf("%s: reads %d, %v; want 1", ref.Namespace, info.Reads, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var got [][]string
	for _, call := range p.calls {
		var nss []string
		for _, r := range call {
			nss = append(nss, r.Namespace)
		}
		got = append(got, nss)
	}
	want := [][]string{{"plain"}, {"plain", "gz"}, {"gz"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("namespaces of the RecordReads calls: %v, want %v", got, want)
	}
}
