package sqlmeta

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/claimcheck/claimcheck/meta"
)

// TestFinishPageFindsClaimsByID holds the plan of a sweeper page's finish
// on SQLite: a page of 250 claims of one namespace is found through the
// primary key, one lookup per id. Naming the namespace there made
// SQLite's planner, which has no statistics, read the namespace's index
// instead (every claim of the namespace, for every page), which slowed a
// drain of 2·10^5 due claims tenfold (dialect.namespaceRouting).
func TestFinishPageFindsClaimsByID(t *testing.T) {
	s := openSQLiteStore(t)
	defer s.Close()
	cs := make([]meta.Claim, 250)
	args := []any{int64(1), meta.ReasonExpired, string(meta.ClaimActive)}
	for i := range cs {
		cs[i] = meta.Claim{ID: fmt.Sprintf("cc_%022d", i), Namespace: "orders", State: meta.ClaimActive}
		args = append(args, cs[i].ID)
	}
	var plan []string
	err := s.write(context.Background(), func(q *txq) error {
		in, inArgs := q.oneNamespace(cs)
		rows, err := q.query(`EXPLAIN QUERY PLAN `+finishClaimsStatement(len(cs), in+holdGuard), append(args, inArgs...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			plan = append(plan, detail)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(plan, "\n")
	if !strings.Contains(got, "SEARCH claims USING INDEX sqlite_autoindex_claims_1 (id=?)") {
		t.Errorf("a page's finish does not look its claims up by id:\n%s", got)
	}
}
