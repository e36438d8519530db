package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

// extend moves a claim's expiry later (POST /v1/claims/{id}/extend), up to
// its namespace's ttl.max_lifetime.
type extendCmd struct {
	client clientFlags
	by     time.Duration
	until  string
}

func newExtendCmd(env Env) *cobra.Command {
	e := &extendCmd{}
	cmd := &cobra.Command{
		Use:   "extend REF|@REFFILE|- (--by DURATION | --until TIME)",
		Short: "Move a claim's expiry later, up to its namespace's ttl.max_lifetime (JSON of the claim)",
		Long: `Move a claim's expiry later: --by adds to the current expiry (each run
extends again), --until sets it (repeating it changes nothing). An expiry
at or before the current one changes nothing. The namespace's
ttl.max_lifetime, counted from the claim's creation, is the limit.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts claimcheck.ExtendOptions
			switch {
			case e.by != 0 && e.until != "":
				return usageError{fmt.Errorf("--by and --until: give one")}
			case e.by < 0:
				return usageError{fmt.Errorf("--by %s: must be positive", e.by)}
			case e.by > 0:
				opts.By = e.by
			case e.until != "":
				t, err := time.Parse(time.RFC3339, e.until)
				if err != nil {
					return usageError{fmt.Errorf("--until %q: want an RFC 3339 time such as 2026-01-09T13:24:00Z", e.until)}
				}
				opts.ExpiresAt = t
			default:
				return usageError{fmt.Errorf("give --by DURATION or --until TIME")}
			}
			ref, c, err := e.client.claim(args[0], env.Stdin)
			if err != nil {
				return err
			}
			info, err := c.Extend(cmd.Context(), ref, opts)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(info)
		},
	}
	cmd.Flags().DurationVar(&e.by, "by", 0, "add this to the current expiry, e.g. 24h")
	cmd.Flags().StringVar(&e.until, "until", "", "the new expiry, an RFC 3339 time")
	e.client.register(cmd, env)
	return cmd
}
