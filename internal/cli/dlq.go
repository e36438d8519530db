package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck/meta"
)

type dlqCmd struct {
	store  storeFlags
	asJSON bool
	all    bool
}

// newDLQCmd is `claimcheck dlq ls|retry`: the blobs whose object delete
// failed sweeper.max_attempts times and were parked. Like gc and fsck it
// works on the store itself (no server needed) and is safe beside running
// servers.
func newDLQCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Dead letters: blobs whose object delete kept failing, parked for an operator",
		Long: `A blob whose object delete fails sweeper.max_attempts times (default 10, with
growing delays) is parked: it keeps its row, its object, its attempts and its
last error, but the sweeper stops retrying it. Fix the cause (permissions,
bucket policy, an object lock), then 'claimcheck dlq retry'. Quota is never
involved: it was given back when the blob's last claim finished.

Both commands work on the store directly, with the same --config/--data as
serve, and are safe while servers are running.`,
	}

	ls := &dlqCmd{}
	lsCmd := &cobra.Command{
		Use:   "ls [--json] [--config FILE] [--data DIR]",
		Short: "List parked blobs with their attempts and last error",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := ls.store.openOffline(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer store.Close()
			var all []meta.Blob
			after := ""
			for {
				page, err := store.Sweeper().DeadLetters(cmd.Context(), after, 500)
				if err != nil {
					return err
				}
				if len(page) == 0 {
					break
				}
				all = append(all, page...)
				after = page[len(page)-1].ID
			}
			if ls.asJSON {
				out := make([]deadLetter, len(all))
				for i, b := range all {
					out[i] = deadLetterOf(b)
				}
				return json.NewEncoder(env.Stdout).Encode(out)
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BLOB\tNAMESPACE\tOBJECT\tBYTES\tATTEMPTS\tPARKED\tLAST ERROR")
			for _, b := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", b.ID, b.Namespace, b.Key, b.StoredSize, b.Attempts,
					b.DeadAt.UTC().Format(time.RFC3339), b.LastError)
			}
			return tw.Flush()
		},
	}
	ls.store.register(lsCmd)
	lsCmd.Flags().BoolVar(&ls.asJSON, "json", false, "print JSON")

	retry := &dlqCmd{}
	retryCmd := &cobra.Command{
		Use:   "retry BLOB-ID...|--all [--config FILE] [--data DIR]",
		Short: "Put parked blobs back in the sweeper's queue, due now, with a fresh retry schedule",
		Long: `Put the named parked blobs (or all of them with --all) back in the due index,
due now, with their attempts reset. The next sweep (a server's background
sweeper, or 'claimcheck sweep --once') deletes their objects; a delete that
still fails is retried with backoff and parked again after max_attempts.
Blob ids that are not parked are reported and skipped.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if retry.all == (len(args) > 0) {
				return usageError{fmt.Errorf("give blob ids or --all, not both and not neither")}
			}
			store, err := retry.store.openOffline(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer store.Close()
			back, err := store.Sweeper().RetryDeadLetters(cmd.Context(), args, retry.all)
			if err != nil {
				return err
			}
			taken := make(map[string]bool, len(back))
			for _, b := range back {
				taken[b.ID] = true
				fmt.Fprintf(env.Stdout, "retrying blob %s (%s, %d failed attempts, last: %s)\n", b.ID, b.Key, b.Attempts, b.LastError)
			}
			for _, id := range args {
				if !taken[id] {
					fmt.Fprintf(env.Stderr, "claimcheck: blob %s is not a dead letter; skipped\n", id)
				}
			}
			fmt.Fprintf(env.Stdout, "%d dead letters put back; the next sweep deletes their objects\n", len(back))
			return nil
		},
	}
	retry.store.register(retryCmd)
	retryCmd.Flags().BoolVar(&retry.all, "all", false, "retry every parked blob")
	cmd.AddCommand(lsCmd, retryCmd)
	return cmd
}

// deadLetter is the JSON form of a parked blob in `dlq ls --json`.
type deadLetter struct {
	BlobID     string    `json:"blob_id"`
	Namespace  string    `json:"namespace"`
	Key        string    `json:"object_key"`
	StoredSize int64     `json:"stored_size"`
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"last_error"`
	ParkedAt   time.Time `json:"parked_at"`
	DeletingAt time.Time `json:"deleting_since"`
}

func deadLetterOf(b meta.Blob) deadLetter {
	return deadLetter{BlobID: b.ID, Namespace: b.Namespace, Key: b.Key, StoredSize: b.StoredSize,
		Attempts: b.Attempts, LastError: b.LastError, ParkedAt: b.DeadAt.UTC(), DeletingAt: b.StateAt.UTC()}
}
