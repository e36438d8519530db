package client_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta/metatest"
)

// TestTrailListingPageOverHTTP measures what one page (limit 100) of a
// namespace's events costs over HTTP, with the Go client, when the
// namespace's finished claims are compacted (their events in trails, ADR
// 0266) against the same history as rows, side by side on two servers
// built alike (docs/PERFORMANCE.md, "Audit trails folded into
// tombstones"). A claim is put every second, redeemed a second later and
// deleted `live` seconds after its put; the whole listing is walked in
// pages, the two servers in turn, three times. It runs when
// TRAIL_PAGE_CLAIMS (claims per server, at most 3,000: the history spans
// less than the hour after which the sweeper compacts) is set.
func TestTrailListingPageOverHTTP(t *testing.T) {
	n := metatest.MeasuredCount(t, "TRAIL_PAGE_CLAIMS", 3000)
	for _, live := range []int{10, 1000} {
		t.Run(fmt.Sprintf("live=%d", live), func(t *testing.T) {
			ctx := context.Background()
			rows, trails := setup(t), setup(t)
			for _, b := range []*bundle{rows, trails} {
				var refs []claimcheck.Ref
				for i := range n {
					refs = append(refs, b.put(t, "raw", []byte("audited "+strconv.Itoa(i)), claimcheck.PutOptions{}))
					b.clock.Advance(time.Second)
					if _, err := b.redeem(refs[i]); err != nil {
						t.Fatal(err)
					}
					if i >= live {
						if err := b.client.Delete(ctx, refs[i-live]); err != nil {
							t.Fatal(err)
						}
					}
				}
				for _, ref := range refs[max(0, n-live):] {
					if err := b.client.Delete(ctx, ref); err != nil {
						t.Fatal(err)
					}
				}
			}
			trails.clock.Advance(2 * time.Hour)
			if k, err := trails.store.Sweeper().CompactHistory(ctx, 0); err != nil || k != n {
				t.Fatalf("CompactHistory = %d, %v; want %d", k, err, n)
			}
			walk := func(b *bundle) metatest.PageWalk {
				return func(after int64) (int, int64, error) {
					page, err := b.client.NamespaceEvents(ctx, "raw", claimcheck.EventQuery{After: after, Limit: 100})
					if err != nil || len(page) == 0 {
						return 0, 0, err
					}
					return len(page), page[len(page)-1].Seq, nil
				}
			}
			per, events := metatest.SideBySidePages(t, 3, walk(rows), walk(trails))
			if events[0] != events[1] || events[0] < 3*4*n {
				t.Fatalf("listed %d events from rows and %d from trails, want the same, at least %d", events[0], events[1], 3*4*n)
			}
			perRows, perTrails := per[0], per[1]
			t.Logf("over HTTP, %d claims, %d live around a cursor: a page of 100 events costs %v from rows, %v from trails (%.2f×)",
				n, live, perRows, perTrails, float64(perTrails)/float64(perRows))
		})
	}
}
