package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

type sweepCmd struct {
	store  storeFlags
	once   bool
	maxOps int
}

func newSweepCmd(env Env) *cobra.Command {
	s := &sweepCmd{}
	cmd := &cobra.Command{
		Use:   "sweep --once [--config FILE] [--data DIR] [--max-ops N]",
		Short: "Do the store's due work now: finish due claims, collect orphaned blobs, prune old rows",
		Long: `Work on the store directly (no server needed, the same --config/--data as
serve): finish every claim whose due time has passed, delete the objects
of blobs whose grace period is over, then delete the audit events older
than events.retention and the rows of claims finished and blobs collected
longer ago than history.retention (after which a claim answers not_found
instead of gone). A running server does all of this by itself; this is for
operators. It is safe to run while servers are running.

Prints what was done as JSON.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !s.once {
				return usageError{fmt.Errorf("sweep needs --once (the background sweeper runs inside serve)")}
			}
			store, err := s.store.openOffline(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer func() { _ = store.Close() }()
			res, err := store.SweepOnce(cmd.Context(), s.maxOps)
			if err != nil {
				return err
			}
			// Pruning is bounded by the rows past their retention, not
			// by --max-ops, which counts due work.
			compacted, err := store.Sweeper().CompactHistory(cmd.Context(), 0)
			if err != nil {
				return err
			}
			events, err := store.Sweeper().PruneEvents(cmd.Context(), 0)
			if err != nil {
				return err
			}
			claims, blobs, err := store.Sweeper().PruneHistory(cmd.Context(), 0)
			if err != nil {
				return err
			}
			return json.NewEncoder(env.Stdout).Encode(map[string]int{
				"claims_finished": res.ClaimsFinished, "blobs_collected": res.BlobsCollected, "delete_failures": res.DeleteFailures,
				"events_pruned": events, "claims_compacted": compacted, "claims_pruned": claims, "blobs_pruned": blobs,
			})
		},
	}
	s.store.register(cmd)
	cmd.Flags().BoolVar(&s.once, "once", false, "run once now and exit")
	cmd.Flags().IntVar(&s.maxOps, "max-ops", 0, "stop after this many items (0: until nothing is due)")
	return cmd
}
