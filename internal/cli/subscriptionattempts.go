package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// The parked events of a subscription (ADR 0277): `claimcheck
// subscriptions attempts|retry|replay`.

// newSubscriptionsAttemptsCmd is `claimcheck subscriptions attempts`.
func newSubscriptionsAttemptsCmd(env Env) *cobra.Command {
	var attempts struct {
		c      clientFlags
		asJSON bool
	}
	cmd := &cobra.Command{
		Use:   "attempts ID [--json]",
		Short: "List a subscription's parked and dead-lettered events and their attempts",
		Long: `An event the receiver refused parks its claim: the claim's later events
wait behind it while other claims' events are delivered. A parked event is
retried on its own backoff and dead-lettered after subscriptions.max_attempts
(when set) or subscriptions.dead_letter_after; its claim's later events then
go on. 'claimcheck subscriptions retry ID' delivers them all now.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := attempts.c.client()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
			enc := json.NewEncoder(env.Stdout)
			if !attempts.asJSON {
				fmt.Fprintln(tw, "SEQ\tCLAIM\tKIND\tSTATE\tATTEMPTS\tNEXT ATTEMPT\tLAST ERROR")
			}
			for cursor := ""; ; {
				page, err := c.SubscriptionAttempts(cmd.Context(), args[0], cursor, 0)
				if err != nil {
					return err
				}
				for _, a := range page.Attempts {
					if attempts.asJSON {
						if err := enc.Encode(a); err != nil {
							return err
						}
						continue
					}
					next := "-"
					if a.NextAttempt != nil {
						next = a.NextAttempt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", a.Event.Seq, a.Event.ClaimID, a.Event.Kind, a.State, a.Attempts, next, a.LastError)
				}
				if cursor = page.Next; cursor == "" {
					break
				}
			}
			if attempts.asJSON {
				return nil
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&attempts.asJSON, "json", false, "one JSON object per line")
	attempts.c.register(cmd, env)
	return cmd
}

// newSubscriptionsRetryCmd is `claimcheck subscriptions retry`.
func newSubscriptionsRetryCmd(env Env) *cobra.Command {
	var retry clientFlags
	cmd := &cobra.Command{
		Use:   "retry ID",
		Short: "Deliver a subscription's parked and dead-lettered events now",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := retry.client()
			if err != nil {
				return err
			}
			n, err := c.RetrySubscription(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "retried: %d\n", n.Retried)
			return nil
		},
	}
	retry.register(cmd, env)
	return cmd
}

// newSubscriptionsReplayCmd is `claimcheck subscriptions replay`.
func newSubscriptionsReplayCmd(env Env) *cobra.Command {
	var replay struct {
		c     clientFlags
		since string
	}
	cmd := &cobra.Command{
		Use:   "replay ID --since TIME|SEQ",
		Short: "Deliver a subscription's events again from a point: an RFC 3339 time or an event seq",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if replay.since == "" {
				return usageError{fmt.Errorf("--since: required (an RFC 3339 time such as 2026-01-09T12:00:00Z, or an event seq)")}
			}
			c, err := replay.c.client()
			if err != nil {
				return err
			}
			r, err := c.ReplaySubscription(cmd.Context(), args[0], replay.since)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "cursor: %d\n", r.Cursor)
			return nil
		},
	}
	cmd.Flags().StringVar(&replay.since, "since", "", "deliver the events at or after this RFC 3339 time, or after this event seq")
	replay.c.register(cmd, env)
	return cmd
}
