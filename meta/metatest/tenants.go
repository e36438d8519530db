package metatest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/claimcheck/claimcheck/meta"
)

// pendingInTenant runs put step 1 for p in a namespace of tenant t.
// Reserve -1 stands for a put of unknown size (nothing reserved).
func (h *harness) pendingInTenant(p put, t meta.TenantQuota) (meta.CreatePendingParams, error) {
	unknown := p.Reserve == -1
	p.Reserve = 0
	cp := h.pendingParams(p)
	if unknown {
		cp.Claim.Size, cp.Claim.ReservedBytes = 0, 0
	}
	cp.Tenant = t
	err := h.s.CreatePending(h.ctx(), cp)
	if err == nil {
		h.track(cp.Claim.ID, cp.Blob.ID)
	}
	return cp, err
}

func wantTenantQuotaError(t *testing.T, what string, err error, tenant, resource string) {
	t.Helper()
	var qe *meta.QuotaError
	if !errors.As(err, &qe) || qe.Tenant != tenant || qe.Resource != resource {
		t.Fatalf("%s: error = %v, want a %s quota error of tenant %s", what, err, resource, tenant)
	}
}

// testTenantQuota: a tenant's quota holds over all its namespaces
// together, on reservation, on a commit that outgrows its reservation and
// on a digest-first hit; a refused operation changes nothing; finishing
// frees the tenant's room; another tenant is not affected.
func testTenantQuota(t *testing.T, h *harness) {
	acme := meta.TenantQuota{Tenant: "acme", Bytes: 1000, Claims: 3}
	a1, err := h.pendingInTenant(put{NS: "a", Size: 600}, acme)
	if err != nil {
		t.Fatalf("first reservation: %v", err)
	}
	h.commit(a1, put{NS: "a", Size: 600})

	// 600 used in namespace a: 500 more in namespace b does not fit.
	_, err = h.pendingInTenant(put{NS: "b", Size: 500}, acme)
	wantTenantQuotaError(t, "reservation over the tenant's bytes", err, "acme", "bytes")
	var qe *meta.QuotaError
	errors.As(err, &qe)
	if qe.Used != 600 || qe.Limit != 1000 || qe.Requested != 500 || qe.Namespace != "b" {
		t.Errorf("quota error = %+v, want used 600 of 1000, requested 500, in namespace b", qe)
	}
	h.wantCounters("b", counters{})

	// A reservation of 0 (size unknown) fits, but its commit may not grow
	// past the tenant's limit; the claim stays pending and reserved.
	b1, err := h.pendingInTenant(put{NS: "b", Size: 1, Reserve: -1}, acme)
	if err != nil {
		t.Fatalf("reservation of 0 bytes: %v", err)
	}
	cp := h.commitParams(b1, put{NS: "b", Size: 500})
	cp.Tenant = acme
	_, err = h.s.Commit(h.ctx(), cp)
	wantTenantQuotaError(t, "commit outgrowing the tenant's bytes", err, "acme", "bytes")
	if c := h.claim(b1.Claim.ID); c.State != meta.ClaimPending {
		t.Errorf("claim after a refused commit is %s, want pending", c.State)
	}
	cp = h.commitParams(b1, put{NS: "b", Size: 400})
	cp.Tenant = acme
	if _, err := h.s.Commit(h.ctx(), cp); err != nil {
		t.Fatalf("commit that fits: %v", err)
	}

	// Claims: 2 used of 3; one more fits, the fourth does not.
	if _, err := h.pendingInTenant(put{NS: "c", Size: 1, Reserve: -1}, acme); err != nil {
		t.Fatalf("third claim: %v", err)
	}
	_, err = h.pendingInTenant(put{NS: "c", Size: 1, Reserve: -1}, acme)
	wantTenantQuotaError(t, "fourth claim", err, "acme", "claims")

	// Another tenant, and a put without a tenant, are not limited by acme.
	if _, err := h.pendingInTenant(put{NS: "d", Size: 900}, meta.TenantQuota{Tenant: "other", Bytes: 1000}); err != nil {
		t.Fatalf("other tenant: %v", err)
	}

	// Finishing gives the tenant its room back.
	h.finish(a1.Claim.ID, meta.ReasonDeleted)
	if _, err := h.pendingInTenant(put{NS: "b", Size: 100}, meta.TenantQuota{Tenant: "acme", Bytes: 1000}); err != nil {
		t.Fatalf("reservation after a finish: %v", err)
	}

	got, err := h.s.Tenants(h.ctx())
	if err != nil {
		t.Fatalf("Tenants: %v", err)
	}
	want := []meta.TenantUsage{
		{Name: "acme", Namespaces: 3, UsedBytes: 400, ReservedBytes: 100, ActiveClaims: 1, PendingClaims: 2, FinishedClaims: 1},
		{Name: "other", Namespaces: 1, ReservedBytes: 900, PendingClaims: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Tenants = %+v, want %+v", got, want)
	}
}

// testTenantMove: a namespace moved to another tenant (SetTenants at
// start, or a put naming the new tenant) counts for the new tenant with
// all its usage.
func testTenantMove(t *testing.T, h *harness) {
	if _, err := h.pendingInTenant(put{NS: "a", Size: 300}, meta.TenantQuota{Tenant: "old"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.pendingInTenant(put{NS: "b", Size: 10}, meta.TenantQuota{Tenant: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := h.s.SetTenants(h.ctx(), map[string]string{"a": "new"}, ""); err != nil {
		t.Fatalf("SetTenants: %v", err)
	}
	_, err := h.pendingInTenant(put{NS: "c", Size: 100}, meta.TenantQuota{Tenant: "new", Bytes: 350})
	wantTenantQuotaError(t, "moved namespace brings its usage", err, "new", "bytes")
	got, err := h.s.Tenants(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	want := []meta.TenantUsage{
		{Name: "new", Namespaces: 1, ReservedBytes: 300, PendingClaims: 1},
		{Name: "old", Namespaces: 1, ReservedBytes: 10, PendingClaims: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Tenants after the move = %+v, want %+v", got, want)
	}
	// others: every namespace the map does not name.
	if err := h.s.SetTenants(h.ctx(), map[string]string{"a": "new"}, "new"); err != nil {
		t.Fatal(err)
	}
	// A put that names its tenant moves its namespace too.
	if _, err := h.pendingInTenant(put{NS: "b", Size: 5}, meta.TenantQuota{Tenant: "third"}); err != nil {
		t.Fatal(err)
	}
	if got, _ = h.s.Tenants(h.ctx()); len(got) != 2 || got[0].Name != "new" || got[1] != (meta.TenantUsage{Name: "third", Namespaces: 1, ReservedBytes: 15, PendingClaims: 2}) {
		t.Errorf("Tenants after a put moved b = %+v", got)
	}
}

// testTenantQuotaConcurrent: reservations in two namespaces of one tenant
// race for its last bytes; exactly as many as fit are admitted (on
// PostgreSQL the tenant row serialises them), and the others get a quota
// error, never another failure.
func testTenantQuotaConcurrent(t *testing.T, h *harness) {
	acme := meta.TenantQuota{Tenant: "acme", Bytes: 1000}
	var (
		wg               sync.WaitGroup
		admitted, denied atomic.Int64
	)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := []string{"a", "b", "c"}[i%3]
			_, err := h.pendingInTenant(put{NS: ns, Size: 100}, acme)
			var qe *meta.QuotaError
			switch {
			case err == nil:
				admitted.Add(1)
			case errors.As(err, &qe) && qe.Tenant == "acme":
				denied.Add(1)
			default:
				t.Errorf("reservation: %v", err)
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 10 || denied.Load() != 14 {
		t.Errorf("admitted %d, denied %d; want 10 and 14 (1000 bytes of tenant quota, 100 each)", admitted.Load(), denied.Load())
	}
}

// testTenantAllotmentGivenBack: room a namespace drew from its tenant's
// quota and no longer uses goes to another namespace that needs it, so a
// tenant's usage can reach its limit whichever namespaces use it; a put
// past the limit is still refused, in any namespace, and a lowered limit
// is not passed on the strength of room drawn under the old one.
func testTenantAllotmentGivenBack(t *testing.T, h *harness) {
	acme := meta.TenantQuota{Tenant: "acme", Bytes: 1000, Claims: 10}
	a1, err := h.pendingInTenant(put{NS: "a", Size: 100}, acme)
	if err != nil {
		t.Fatalf("put in a: %v", err)
	}
	h.finish(a1.Claim.ID, meta.ReasonDeleted)
	// Namespace a uses nothing now: b may use the whole quota.
	var last meta.CreatePendingParams
	for i := range 10 {
		if last, err = h.pendingInTenant(put{NS: "b", Size: 100}, acme); err != nil {
			t.Fatalf("put %d of 10 in b (the tenant's whole quota): %v", i+1, err)
		}
	}
	_, err = h.pendingInTenant(put{NS: "a", Size: 1}, acme)
	wantTenantQuotaError(t, "put in a with the tenant full", err, "acme", "bytes")
	_, err = h.pendingInTenant(put{NS: "b", Size: 1}, acme)
	wantTenantQuotaError(t, "put in b with the tenant full", err, "acme", "bytes")
	h.wantCounters("a", counters{})

	// A finish in b frees room that a can draw.
	h.finish(last.Claim.ID, meta.ReasonDeleted)
	if _, err := h.pendingInTenant(put{NS: "a", Size: 100}, acme); err != nil {
		t.Fatalf("put in a after a finish in b: %v", err)
	}

	// Lowered limits count at once: 1000 bytes are in use.
	_, err = h.pendingInTenant(put{NS: "b", Size: 1}, acme)
	wantTenantQuotaError(t, "put at the limit", err, "acme", "bytes")
	_, err = h.pendingInTenant(put{NS: "b", Size: 1, Reserve: -1}, meta.TenantQuota{Tenant: "acme", Claims: 5})
	wantTenantQuotaError(t, "put past a lowered claims limit", err, "acme", "claims")
	if _, err := h.pendingInTenant(put{NS: "b", Size: 100}, meta.TenantQuota{Tenant: "acme", Bytes: 2000}); err != nil {
		t.Fatalf("put under a raised limit: %v", err)
	}
}

// testTenantAllotmentConcurrent: puts and finishes in many namespaces
// of one tenant at once. The tenant's usage is never seen past its limit,
// refusals are quota errors and nothing else, no more claims are live at
// the end than the limit holds, and once every claim is
// finished one namespace can use the whole quota: no allotment is left
// stranded in the others.
func testTenantAllotmentConcurrent(t *testing.T, h *harness) {
	const limit = 2000
	acme := meta.TenantQuota{Tenant: "acme", Bytes: limit}
	workers, rounds := 8, 12
	if testing.Short() {
		rounds = 6
	}
	var (
		wg               sync.WaitGroup
		admitted, denied atomic.Int64
		done             = make(chan struct{})
		watching         sync.WaitGroup
		live             sync.Mutex
		left             []string // claims live once every worker is done
	)
	watching.Add(1)
	go func() { // the usage, as often as it can be read
		defer watching.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			us, err := h.s.Tenants(h.ctx())
			if err != nil {
				t.Errorf("Tenants: %v", err)
				return
			}
			for _, u := range us {
				if u.Name == "acme" && u.UsedBytes+u.ReservedBytes > limit {
					t.Errorf("tenant usage %d+%d passed its limit %d", u.UsedBytes, u.ReservedBytes, limit)
				}
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := fmt.Sprintf("n%d", w)
			var mine []string
			for r := range rounds {
				cp, err := h.pendingInTenant(put{NS: ns, Size: 100}, acme)
				var qe *meta.QuotaError
				switch {
				case err == nil:
					admitted.Add(1)
					mine = append(mine, cp.Claim.ID)
				case errors.As(err, &qe) && qe.Tenant == "acme":
					denied.Add(1)
				default:
					t.Errorf("put: %v", err)
					return
				}
				if r%3 == 2 && len(mine) > 0 { // finish one of every three
					if _, _, err := h.s.FinishClaim(h.ctx(), mine[0], meta.ReasonDeleted, h.now(), false); err != nil {
						t.Errorf("finish: %v", err)
						return
					}
					mine = mine[1:]
				}
			}
			live.Lock()
			left = append(left, mine...)
			live.Unlock()
		}()
	}
	wg.Wait()
	close(done)
	watching.Wait()
	// Had every put been admitted, workers*(rounds-rounds/3) claims of
	// 100 bytes would be live now: more than the limit holds.
	if len(left)*100 > limit || denied.Load() == 0 {
		t.Errorf("%d claims live, %d admitted, %d denied: want at most %d live and some denied",
			len(left), admitted.Load(), denied.Load(), limit/100)
	}
	for _, id := range left {
		if _, _, err := h.s.FinishClaim(h.ctx(), id, meta.ReasonDeleted, h.now(), false); err != nil {
			t.Errorf("finish: %v", err)
		}
	}
	for i := range limit / 100 {
		if _, err := h.pendingInTenant(put{NS: "n0", Size: 100}, acme); err != nil {
			t.Fatalf("put %d of %d in one namespace after every claim finished: %v", i+1, limit/100, err)
		}
	}
	_, err := h.pendingInTenant(put{NS: "n1", Size: 1}, acme)
	wantTenantQuotaError(t, "put past the limit", err, "acme", "bytes")
}
