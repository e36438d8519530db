package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
	"github.com/claimcheck/claimcheck/server/api"
)

type eventsCmd struct {
	client clientFlags
	ns     string
	tenant string
	since  string
	limit  int
	all    bool
	follow bool
	types  []string
	labels []string
	after  string
}

func newEventsCmd(env Env) *cobra.Command {
	e := &eventsCmd{}
	cmd := &cobra.Command{
		Use:   "events [REF|@REFFILE|-] | --ns NS | --tenant T",
		Short: "Show the audit trail of a claim, a namespace (--ns) or a tenant (--tenant) (JSON lines)",
		Long: `Show the audit trail: who created, redeemed, released and deleted a claim,
and why it ended; who set and lifted legal holds; who created and revoked
API keys. One JSON object per line, oldest first. Kinds:

  created, confirmed, redeemed, first_redeemed, released, expired,
  deleted, reaped   a claim's life (confirmed: after created, for an
      upload confirmed or completed; first_redeemed: after the first read)
      (reason: expired, released, read_retention_over, deleted,
      never_confirmed, aborted)
  hold_set, hold_cleared   a legal hold (reason: its scope, claim or
      namespace; detail: the hold's reason)
  key_created, key_revoked   an API key (detail: key ID; tenant; role)
  auth_failed   a rejected API key
  object_missing, refcount_drift, debris_deleted, dead_letter, …
      findings of the garbage collector

A claim's trail has its lifecycle and its own holds; a namespace's adds
its namespace holds and the keys limited to it; a tenant's has its API
keys (every scope) and the failed authentications with them.

  claimcheck events @ref.json
  claimcheck events --ns orders --since 2026-01-09T00:00:00Z
  claimcheck events --ns orders --since 1h
  claimcheck events --tenant acme

With --follow it streams the tenant's events as they happen (claim
lifecycle included, and all_released, expired_unread, …; see 'claimcheck
subscriptions'), until interrupted, reconnecting after the last event it
printed; --type, --ns and --label filter, --after SEQ resumes after an
event printed before (--after oldest: from the oldest event retained). A
tenant-wide admin key.

  claimcheck events --follow --type all_released,expired_unread --ns orders`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case e.follow && (len(args) > 0 || e.tenant != "" || e.since != ""):
				return usageError{fmt.Errorf("--follow streams the key's tenant's events from now (or --after SEQ): give no reference, --tenant or --since with it")}
			case e.follow:
				return nil
			case len(e.types) > 0 || len(e.labels) > 0 || e.after != "":
				return usageError{fmt.Errorf("--type, --label and --after filter the stream of --follow")}
			case e.tenant != "" && (e.ns != "" || len(args) > 0):
				return usageError{fmt.Errorf("--tenant lists a tenant's events: give no reference and no --ns with it")}
			case len(args) > 1 || (len(args) == 0 && e.ns == "" && e.tenant == ""):
				return usageError{fmt.Errorf("give a reference, --ns NAMESPACE for a namespace's events, or --tenant TENANT for a tenant's")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if e.follow {
				return e.followStream(cmd, env)
			}
			q := claimcheck.EventQuery{Limit: e.limit}
			if e.since != "" {
				t, err := parseSince(e.since, time.Now())
				if err != nil {
					return usageError{err}
				}
				q.Since = t
			}
			c, err := e.client.client()
			if err != nil {
				return err
			}
			var ref claimcheck.Ref
			if len(args) == 1 {
				if ref, err = readRef(args[0], env.Stdin); err != nil {
					return err
				}
				if e.ns != "" {
					ref.Namespace = e.ns
				}
			}
			enc := json.NewEncoder(env.Stdout)
			for {
				var page []claimcheck.Event
				switch {
				case len(args) == 1:
					page, err = c.ClaimEvents(cmd.Context(), ref, q)
				case e.tenant != "":
					page, err = c.TenantEvents(cmd.Context(), e.tenant, q)
				default:
					page, err = c.NamespaceEvents(cmd.Context(), e.ns, q)
				}
				if err != nil {
					return err
				}
				for _, ev := range page {
					if err := enc.Encode(ev); err != nil {
						return err
					}
				}
				want := q.Limit
				if want == 0 {
					want = claimcheck.MaxEventPage
				}
				if !e.all || len(page) < want {
					return nil
				}
				q.After = page[len(page)-1].Seq
			}
		},
	}
	cmd.Flags().StringVar(&e.ns, "ns", "", "namespace: without a reference, list the namespace's events; with one, check the claim is in it")
	cmd.Flags().StringVar(&e.tenant, "tenant", "", "list the tenant's administrative events (API keys, failed authentications); with an API key, its own tenant")
	cmd.Flags().StringVar(&e.since, "since", "", "only events at or after this time: RFC 3339 (2026-01-09T13:24:00Z) or a duration ago (90m, 24h)")
	cmd.Flags().IntVar(&e.limit, "limit", 0, fmt.Sprintf("events per page (1 to %d; default %d)", claimcheck.MaxEventPage, claimcheck.MaxEventPage))
	cmd.Flags().BoolVar(&e.all, "all", true, "fetch every page, not only the first")
	cmd.Flags().BoolVarP(&e.follow, "follow", "f", false, "stream the tenant's events as they happen, until interrupted")
	cmd.Flags().StringSliceVar(&e.types, "type", nil, "with --follow: event types (repeat or separate with commas)")
	cmd.Flags().StringArrayVar(&e.labels, "label", nil, "with --follow: key=value a claim must have (repeat: all of them)")
	cmd.Flags().StringVar(&e.after, "after", "", "with --follow: resume after the event with this seq, or oldest: from the oldest event retained")
	e.client.register(cmd, env)
	return cmd
}

// parseSince reads --since: an RFC 3339 time, or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("--since %q: want an RFC 3339 time (2026-01-09T13:24:00Z) or a duration ago (24h)", s)
	}
	return now.Add(-d), nil
}

// followStream prints the live stream until the context ends.
func (e *eventsCmd) followStream(cmd *cobra.Command, env Env) error {
	ff := filterFlags{types: e.types, labels: e.labels}
	if e.ns != "" {
		ff.namespaces = []string{e.ns}
	}
	f, err := ff.filter()
	if err != nil {
		return err
	}
	after := int64(0)
	switch {
	case e.after == api.StreamOldest:
		after = client.FromOldest
	case e.after != "":
		if after, err = strconv.ParseInt(e.after, 10, 64); err != nil || after < 0 {
			return usageError{fmt.Errorf("--after %q: want the seq of an event printed before, or %s", e.after, api.StreamOldest)}
		}
	}
	c, err := e.client.client()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(env.Stdout)
	err = c.FollowEvents(cmd.Context(), f, after, func(ev claimcheck.Event) error { return enc.Encode(ev) })
	if cmd.Context().Err() != nil {
		return nil // interrupted: the normal end of a follow
	}
	return err
}
