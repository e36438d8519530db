package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

type dlqCmd struct {
	target operatorFlags
	asJSON bool
	all    bool
	tenant string
	ns     string
}

// query is the listing the --tenant and --ns flags select.
func (d *dlqCmd) query() (claimcheck.DeadLetterQuery, error) {
	q := claimcheck.DeadLetterQuery{Tenant: d.tenant, Namespace: d.ns}
	if q.Tenant != "" {
		if err := claimcheck.ValidateTenant(q.Tenant); err != nil {
			return q, usageError{fmt.Errorf("--tenant: %w", err)}
		}
	}
	if q.Namespace != "" {
		if err := claimcheck.ValidateNamespace(q.Namespace); err != nil {
			return q, usageError{fmt.Errorf("--ns: %w", err)}
		}
	}
	return q, nil
}

func (d *dlqCmd) register(cmd *cobra.Command, env Env) {
	d.target.register(cmd, env)
	cmd.Flags().StringVar(&d.tenant, "tenant", "", "only the dead letters of this tenant's namespaces")
	cmd.Flags().StringVar(&d.ns, "ns", "", "only the dead letters of this namespace")
}

// newDLQCmd is `claimcheck dlq ls|retry`: the blobs whose object delete
// failed sweeper.max_attempts times and were parked. Like gc and fsck it
// works on the store itself (no server needed), and is safe beside
// running servers; like the client commands it can instead go through a
// running server's admin API (operatorflags.go).
func newDLQCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Dead letters: blobs whose object delete kept failing, parked for an operator",
		Long: `A blob whose object delete fails sweeper.max_attempts times (default 10, with
growing delays) is parked: it keeps its row, its object, its attempts and its
last error, but the sweeper stops retrying it. Fix the cause (permissions,
bucket policy, an object lock), then 'claimcheck dlq retry'. Quota is never
involved: it was given back when the blob's last claim finished.

Offline: with --config/--data (the same as serve), or with neither flag
and no $CLAIMCHECK_SERVER, both commands open the store directly (./data by
default); that is safe while servers are running.

Through a server: with --server or --api-key, or with $CLAIMCHECK_SERVER
set, they call a running server's admin API instead (an admin key), and see
only the key's tenant (or its one namespace).

Giving flags of both kinds is a usage error. Each run says on stderr
which of the two it did.`,
	}

	cmd.AddCommand(newDLQLsCmd(env), newDLQRetryCmd(env))
	return cmd
}

// newDLQLsCmd is `claimcheck dlq ls`.
func newDLQLsCmd(env Env) *cobra.Command {
	ls := &dlqCmd{}
	lsCmd := &cobra.Command{
		Use:   "ls [--json] [--ns NS] [--tenant T] [--config FILE] [--data DIR | --server URL --api-key KEY]",
		Short: "List parked blobs with their attempts and last error",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := ls.query()
			if err != nil {
				return err
			}
			target, err := ls.target.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer func() { _ = target.Close() }()
			dq := target.deadLetters()
			all := []claimcheck.DeadLetter{}
			for {
				page, err := dq.DeadLetters(cmd.Context(), q)
				if err != nil {
					return err
				}
				all = append(all, page.DeadLetters...)
				if page.Next == "" {
					break
				}
				q.After = page.Next
			}
			if ls.asJSON {
				return json.NewEncoder(env.Stdout).Encode(all)
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BLOB\tNAMESPACE\tOBJECT\tBYTES\tATTEMPTS\tPARKED\tLAST ERROR")
			for _, d := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", d.BlobID, d.Namespace, d.ObjectKey, d.StoredSize, d.Attempts,
					d.ParkedAt.UTC().Format(time.RFC3339), d.LastError)
			}
			return tw.Flush()
		},
	}
	ls.register(lsCmd, env)
	lsCmd.Flags().BoolVar(&ls.asJSON, "json", false, "print JSON")
	return lsCmd
}

// newDLQRetryCmd is `claimcheck dlq retry`.
func newDLQRetryCmd(env Env) *cobra.Command {
	retry := &dlqCmd{}
	retryCmd := &cobra.Command{
		Use:   "retry BLOB-ID...|--all [--ns NS] [--tenant T] [--config FILE] [--data DIR | --server URL --api-key KEY]",
		Short: "Put parked blobs back in the sweeper's queue, due now, with a fresh retry schedule",
		Long: `Put the named parked blobs (or all of them with --all, narrowed by --ns or
--tenant) back in the due index, due now, with their attempts reset. The next
sweep (a server's background sweeper, or 'claimcheck sweep --once') deletes
their objects; a delete that still fails is retried with backoff and parked
again after max_attempts. Blob ids that are not parked (or, remotely, not the
key's to see) are reported and skipped. --all works in batches of 500.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if retry.all == (len(args) > 0) {
				return usageError{errors.New("give blob ids or --all, not both and not neither")}
			}
			if !retry.all && (retry.ns != "" || retry.tenant != "") {
				return usageError{errors.New("--ns and --tenant narrow --all; with blob ids, give only the ids")}
			}
			for _, id := range args {
				if !claimcheck.ValidBlobID(id) {
					return usageError{fmt.Errorf("blob id %q is malformed: want b_ and 22 characters, as dlq ls prints", id)}
				}
			}
			q, err := retry.query()
			if err != nil {
				return err
			}
			target, err := retry.target.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer func() { _ = target.Close() }()
			dq := target.deadLetters()
			n := 0
			report := func(d claimcheck.DeadLetter) {
				n++
				fmt.Fprintf(env.Stdout, "retrying blob %s (%s, %d failed attempts, last: %s)\n", d.BlobID, d.ObjectKey, d.Attempts, d.LastError)
			}
			for _, id := range args {
				d, err := dq.RetryDeadLetter(cmd.Context(), id)
				switch {
				case errors.Is(err, claimcheck.ErrNotFound):
					fmt.Fprintf(env.Stderr, "claimcheck: blob %s is not a dead letter; skipped\n", id)
				case err != nil:
					return err
				default:
					report(d)
				}
			}
			for retry.all {
				page, err := dq.RetryDeadLetters(cmd.Context(), q)
				if err != nil {
					return err
				}
				for _, d := range page.DeadLetters {
					report(d)
				}
				if page.Next == "" {
					break
				}
				q.After = page.Next
			}
			fmt.Fprintf(env.Stdout, "%d dead letters put back; the next sweep deletes their objects\n", n)
			return nil
		},
	}
	retry.register(retryCmd, env)
	retryCmd.Flags().BoolVar(&retry.all, "all", false, "retry every parked blob (of --ns or --tenant, when given)")
	return retryCmd
}
