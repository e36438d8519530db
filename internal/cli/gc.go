package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck/sweep"
)

type gcCmd struct {
	store  storeFlags
	dryRun bool
	asJSON bool
}

// errGCFindings makes gc exit non-zero after its report: objects that are
// damaged (marked now) or could not be checked.
var errGCFindings = errors.New("gc found damaged objects or objects it could not check (listed above)")

func newGCCmd(env Env) *cobra.Command {
	g := &gcCmd{}
	cmd := &cobra.Command{
		Use:   "gc [--dry-run] [--json] [--config FILE] [--data DIR]",
		Short: "Collect garbage now: due claims, orphaned blobs past grace, and a backstop pass",
		Long: `Work on the store directly (no server needed, the same --config/--data as
serve). Finishes due claims, deletes the objects of blobs whose grace period
is over (each re-checked against live claims in the transaction that marks
it deleting), then runs a whole backstop pass: refcounts recounted from
claims, committed blobs without a claim orphaned (collected after
backstop_grace), objects without a row older than backstop_grace deleted,
rows whose object is missing reported. Safe while servers are running.

With --dry-run nothing changes: it prints what would be reclaimed now
(count, bytes, oldest) and what is still within its grace period.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := g.store.openOffline(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer func() { _ = store.Close() }()
			if g.dryRun {
				rep, err := store.Sweeper().Inspect(cmd.Context(), false)
				if err != nil {
					return err
				}
				if g.asJSON {
					return json.NewEncoder(env.Stdout).Encode(map[string]any{
						"reclaimable": rep.Reclaimable, "in_grace": rep.InGrace, "blobs_scanned": rep.Blobs})
				}
				fmt.Fprintf(env.Stdout, "would reclaim now: %s\nwithin grace:      %s\n", rep.Reclaimable, rep.InGrace)
				return nil
			}
			res, err := store.SweepOnce(cmd.Context(), 0)
			if err != nil {
				return err
			}
			bs, err := store.Sweeper().Backstop().Run(cmd.Context(), 0)
			if err != nil {
				return err
			}
			if g.asJSON {
				if err := json.NewEncoder(env.Stdout).Encode(struct {
					ClaimsFinished int                  `json:"claims_finished"`
					BlobsCollected int                  `json:"blobs_collected"`
					DeleteFailures int                  `json:"delete_failures"`
					Backstop       sweep.BackstopResult `json:"backstop"`
				}{res.ClaimsFinished, res.BlobsCollected, res.DeleteFailures, bs}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(env.Stdout, "claims finished: %d\nblobs collected: %d (delete failures: %d)\n",
					res.ClaimsFinished, res.BlobsCollected, res.DeleteFailures)
				if bs.Skipped {
					fmt.Fprintln(env.Stdout, "backstop: skipped, another process is running it")
					return nil
				}
				fmt.Fprintf(env.Stdout, "backstop: %d blobs checked, %d refcounts repaired, %d blobs orphaned, %d objects listed, %d debris objects deleted (%d bytes), %d missing objects, %d unreadable, %d not checked\n",
					bs.BlobsScanned, bs.DriftFixed, bs.Orphaned, bs.ObjectsListed, bs.DebrisDeleted, bs.DebrisBytes, bs.MissingObjects, bs.Unreadable, bs.Unchecked)
				for _, f := range bs.Findings {
					fmt.Fprintf(env.Stdout, "  blob %s (namespace %s): object %s: %s: %s\n", f.BlobID, f.Namespace, f.Key, f.Cause, f.Detail)
				}
			}
			if len(bs.Findings) > 0 {
				// Every finding is printed above; the exit status says there were some.
				return errGCFindings
			}
			return nil
		},
	}
	g.store.register(cmd)
	cmd.Flags().BoolVar(&g.dryRun, "dry-run", false, "report what would be reclaimed; change nothing")
	cmd.Flags().BoolVar(&g.asJSON, "json", false, "print JSON")
	return cmd
}
