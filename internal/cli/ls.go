package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

// ls lists a namespace's claims (GET /v1/namespaces/{ns}/claims): a table
// by default, JSON lines with --json. It prints one page by default
// (--limit, DefaultListLimit claims) and says on stderr how to go on
// (--cursor) when there are more, since a namespace of 10^7 claims takes
// minutes to walk (ADR 0262); --all follows the cursor to the end, a page
// at a time, so a large namespace never sits in memory whole.
type lsCmd struct {
	client         clientFlags
	labels         []string
	state, order   string
	expiresWithin  time.Duration
	expiresBefore  string
	expiresAfter   string
	cursor         string
	limit, pageLen int
	all            bool
	json           bool
}

func newLsCmd(env Env) *cobra.Command {
	l := &lsCmd{}
	cmd := &cobra.Command{
		Use:   "ls NS",
		Short: "List a namespace's claims, newest first (label selector, state, expiry window)",
		Long: `List the claims of namespace NS, newest first (or --order expiring: live
claims, soonest expiry first). One page of --limit claims (default 100) is
printed; when more may follow, stderr says how to go on (--cursor), and
--all walks the whole namespace. Filters combine (AND):

  claimcheck ls temporal -l temporal.workflow_id=order-42 -l temporal.run_id=8f1c…
  claimcheck ls orders --state active --expires-within 1h --order expiring

Needs a producer or admin key of the namespace's tenant.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			labels, err := claimcheck.ParseLabelSelector(l.labels)
			if err != nil {
				return usageError{fmt.Errorf("--label: %w", err)}
			}
			opts := claimcheck.ListOptions{Labels: labels, State: claimcheck.ClaimState(l.state),
				Order: claimcheck.ListOrder(l.order), Limit: l.pageLen}
			for _, p := range []struct {
				flag, val string
				dst       *time.Time
			}{{"--expires-before", l.expiresBefore, &opts.ExpiresBefore}, {"--expires-after", l.expiresAfter, &opts.ExpiresAfter}} {
				if p.val == "" {
					continue
				}
				t, err := time.Parse(time.RFC3339, p.val)
				if err != nil {
					return usageError{fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-01-09T13:24:00Z", p.flag, p.val)}
				}
				*p.dst = t
			}
			if l.expiresWithin > 0 {
				if !opts.ExpiresBefore.IsZero() {
					return usageError{fmt.Errorf("--expires-within and --expires-before: give one")}
				}
				opts.ExpiresBefore = time.Now().Add(l.expiresWithin)
			}
			if l.limit < 0 {
				return usageError{fmt.Errorf("--limit %d: must not be negative", l.limit)}
			}
			if l.all {
				if cmd.Flags().Changed("limit") {
					return usageError{fmt.Errorf("--all and --limit: give one")}
				}
				l.limit = 0
			}
			opts.Cursor = l.cursor
			if l.limit > 0 && l.limit < opts.Limit {
				opts.Limit = l.limit
			}
			if err := opts.Validate(); err != nil {
				return usageError{err}
			}
			c, err := l.client.client()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
			if !l.json {
				fmt.Fprintln(tw, "ID\tSTATE\tSIZE\tCREATED\tEXPIRES\tDELETE AT\tLABELS")
			}
			enc := json.NewEncoder(env.Stdout)
			printed := 0
			for {
				page, err := c.List(cmd.Context(), args[0], opts)
				if err != nil {
					return err
				}
				for _, ci := range page.Claims {
					printed++
					if l.json {
						if err := enc.Encode(ci); err != nil {
							return err
						}
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", ci.Ref.ID, ci.State, ci.Ref.Size,
						ci.Ref.CreatedAt.UTC().Format(time.RFC3339), ci.Ref.ExpiresAt.UTC().Format(time.RFC3339),
						fmtTime(ci.DeleteAt), fmtLabels(ci.Labels))
				}
				if page.Next == "" {
					return tw.Flush()
				}
				if l.limit > 0 && printed >= l.limit {
					if err := tw.Flush(); err != nil {
						return err
					}
					fmt.Fprintf(env.Stderr, "more claims may follow: go on with claimcheck ls %s --cursor %s (and the same filters), or list every claim with --all\n", args[0], page.Next)
					return nil
				}
				opts.Cursor = page.Next
				// Every page ends where the printing stops, so the cursor
				// given on stderr resumes exactly after the last claim.
				if l.limit > 0 {
					opts.Limit = min(opts.Limit, l.limit-printed)
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&l.labels, "label", "l", nil, "only claims with this label, KEY=VALUE (repeat: all must match)")
	f.StringVar(&l.state, "state", "", "only claims in this state: pending, active or deleted")
	f.StringVar(&l.order, "order", "newest", "newest (by creation) or expiring (live claims, soonest expiry first)")
	f.DurationVar(&l.expiresWithin, "expires-within", 0, "only claims expiring within this duration from now")
	f.StringVar(&l.expiresBefore, "expires-before", "", "only claims expiring before this RFC 3339 time")
	f.StringVar(&l.expiresAfter, "expires-after", "", "only claims expiring at or after this RFC 3339 time")
	f.IntVar(&l.limit, "limit", claimcheck.DefaultListLimit, "print at most this many claims, then the cursor to go on with on stderr (0: all, as --all)")
	f.BoolVar(&l.all, "all", false, "print every claim, following the cursor page by page")
	f.StringVar(&l.cursor, "cursor", "", "go on from this cursor (printed on stderr by a listing that stopped at --limit)")
	f.IntVar(&l.pageLen, "page", claimcheck.DefaultListLimit, fmt.Sprintf("claims per request, 1 to %d", claimcheck.MaxListLimit))
	f.BoolVar(&l.json, "json", false, "one ClaimInfo JSON object per line instead of a table")
	l.client.register(cmd, env)
	return cmd
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func fmtLabels(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	b, _ := json.Marshal(m)
	return string(b)
}
