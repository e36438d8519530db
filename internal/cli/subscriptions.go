package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

// filterFlags are the event filter of a subscription and of
// `events --follow`.
type filterFlags struct {
	types, namespaces, labels []string
}

func (f *filterFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.types, "type", nil, "event types (repeat or separate with commas; default every type): "+strings.Join(claimcheck.EventKinds, ", "))
	cmd.Flags().StringSliceVar(&f.namespaces, "ns", nil, "namespaces of the tenant (repeat or separate with commas; default every one)")
	cmd.Flags().StringArrayVar(&f.labels, "label", nil, "key=value a claim must have (repeat: all of them)")
}

func (f *filterFlags) filter() (claimcheck.EventFilter, error) {
	out := claimcheck.EventFilter{Types: f.types, Namespaces: f.namespaces}
	for _, kv := range f.labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return out, usageError{fmt.Errorf("--label %q: want key=value", kv)}
		}
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[k] = v
	}
	return out, nil
}

// newSubscriptionsCmd is `claimcheck subscriptions
// create|ls|rm|resume|attempts|retry|replay`:
// the key's tenant's webhook subscriptions, through a running server
// (a tenant-wide admin key).
func newSubscriptionsCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subscriptions",
		Short: "Push the tenant's events to a URL: signed CloudEvents webhooks",
		Long: `A subscription POSTs each of the tenant's events that its filter selects to
its URL, as a CloudEvent (structured mode, application/cloudevents+json),
signed with the Standard Webhooks headers webhook-id, webhook-timestamp and
webhook-signature (v1, HMAC-SHA256 over id.timestamp.body under the secret).
Delivery is at least once and in order per claim, from the events after the
subscription was made; the webhook-id is the event's id, the same in every
retry, so a receiver can drop repeats. An event the receiver refuses holds
back its own claim only: it is parked ('claimcheck subscriptions attempts'),
retried on its own backoff, and dead-lettered after subscriptions.max_attempts
or subscriptions.dead_letter_after (24h); 'retry' delivers parked events now,
'replay --since' delivers events again from a point. A receiver whose every
delivery fails for dead_letter_after stops its subscription (state
dead_lettered) until 'claimcheck subscriptions resume'.

With --events-per-request N above 1 (at most 1000) the subscription takes
the batched mode instead: application/cloudevents-batch+json, a JSON array
of up to N events, the webhook-id FIRST-LAST of their ids; it costs the
server less per event. --events-per-request 1 is one event per request;
without the flag the server's subscriptions.events_per_request decides.

Needs a running server and a tenant-wide admin key ($CLAIMCHECK_SERVER,
$CLAIMCHECK_API_KEY or --server, --api-key).

  claimcheck subscriptions create https://hooks.example.com/cc --type all_released,expired_unread --ns orders
  claimcheck subscriptions create https://hooks.example.com/bulk --events-per-request 100
  claimcheck subscriptions ls
  claimcheck subscriptions attempts sub_...
  claimcheck subscriptions replay sub_... --since 2026-01-09T12:00:00Z
  claimcheck subscriptions rm sub_...`,
	}

	cmd.AddCommand(newSubscriptionsCreateCmd(env), newSubscriptionsLsCmd(env),
		newSubscriptionsRmCmd(env), newSubscriptionsResumeCmd(env), newSubscriptionsAttemptsCmd(env),
		newSubscriptionsRetryCmd(env), newSubscriptionsReplayCmd(env))
	return cmd
}

// newSubscriptionsCreateCmd is `claimcheck subscriptions create`.
func newSubscriptionsCreateCmd(env Env) *cobra.Command {
	var create struct {
		filter filterFlags
		c      clientFlags
		id     string
		secret string
		per    int
		asJSON bool
	}
	createCmd := &cobra.Command{
		Use:   "create URL [--type T]... [--ns NS]... [--label K=V]... [--id ID] [--secret whsec_...] [--events-per-request N]",
		Short: "Make a subscription; prints its secret, which is never shown again",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := create.filter.filter()
			if err != nil {
				return err
			}
			if create.per < 0 || create.per > claimcheck.MaxEventsPerRequest {
				return usageError{fmt.Errorf("--events-per-request %d: from 1 (one CloudEvent per request) to %d (batched mode), or 0 for the server's default",
					create.per, claimcheck.MaxEventsPerRequest)}
			}
			c, err := create.c.client()
			if err != nil {
				return err
			}
			sub, err := c.CreateSubscription(cmd.Context(), claimcheck.SubscriptionSpec{ID: create.id, URL: args[0], EventFilter: f, Secret: create.secret,
				EventsPerRequest: create.per})
			if err != nil {
				return err
			}
			if create.asJSON {
				return json.NewEncoder(env.Stdout).Encode(sub)
			}
			fmt.Fprintf(env.Stdout, "id:     %s\nurl:    %s\nsecret: %s\n", sub.ID, sub.URL, sub.Secret)
			fmt.Fprintln(env.Stderr, "keep the secret: it is not shown again; receivers verify webhook-signature with it")
			return nil
		},
	}
	create.filter.register(createCmd)
	createCmd.Flags().StringVar(&create.id, "id", "", "the subscription's id (default: one is made up)")
	createCmd.Flags().StringVar(&create.secret, "secret", "", "signing secret, whsec_ and the base64 of 24 to 64 bytes (default: one is made up)")
	createCmd.Flags().IntVar(&create.per, "events-per-request", 0,
		"1: one CloudEvent per request (structured mode); N above 1: batched mode, application/cloudevents-batch+json, up to N events per request (at most 1000); default: the server's subscriptions.events_per_request")
	createCmd.Flags().BoolVar(&create.asJSON, "json", false, "print the subscription as JSON")
	create.c.register(createCmd, env)
	return createCmd
}

// newSubscriptionsLsCmd is `claimcheck subscriptions ls`.
func newSubscriptionsLsCmd(env Env) *cobra.Command {
	var ls struct {
		c      clientFlags
		asJSON bool
	}
	lsCmd := &cobra.Command{
		Use:   "ls [--json]",
		Short: "List the tenant's subscriptions and how delivery stands (never their secrets)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := ls.c.client()
			if err != nil {
				return err
			}
			subs, err := c.Subscriptions(cmd.Context())
			if err != nil {
				return err
			}
			if ls.asJSON {
				enc := json.NewEncoder(env.Stdout)
				for _, s := range subs {
					if err := enc.Encode(s); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tDELIVERED\tPER REQUEST\tTYPES\tNAMESPACES\tURL\tLAST ERROR")
			for _, s := range subs {
				state := s.State
				if !s.Enabled {
					state = "disabled"
				}
				per := "default"
				if s.EventsPerRequest > 0 {
					per = strconv.Itoa(s.EventsPerRequest)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.ID, state, s.Delivered, per, listOrAll(s.Types), listOrAll(s.Namespaces), s.URL, s.LastError)
			}
			return tw.Flush()
		},
	}
	lsCmd.Flags().BoolVar(&ls.asJSON, "json", false, "one JSON object per line")
	ls.c.register(lsCmd, env)
	return lsCmd
}

// newSubscriptionsRmCmd is `claimcheck subscriptions rm`.
func newSubscriptionsRmCmd(env Env) *cobra.Command {
	var rm clientFlags
	rmCmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "Stop and remove subscriptions",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("give the id of a subscription ('claimcheck subscriptions ls' lists them)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := rm.client()
			if err != nil {
				return err
			}
			for _, id := range args {
				if err := c.DeleteSubscription(cmd.Context(), id); err != nil {
					return err
				}
			}
			return nil
		},
	}
	rm.register(rmCmd, env)
	return rmCmd
}

// newSubscriptionsResumeCmd is `claimcheck subscriptions resume`.
func newSubscriptionsResumeCmd(env Env) *cobra.Command {
	var resume clientFlags
	resumeCmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Deliver again to a dead-lettered subscription, from the event that kept failing",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := resume.client()
			if err != nil {
				return err
			}
			return c.ResumeSubscription(cmd.Context(), args[0])
		},
	}
	resume.register(resumeCmd, env)
	return resumeCmd
}

func listOrAll(l []string) string {
	if len(l) == 0 {
		return "*"
	}
	return strings.Join(l, ",")
}
