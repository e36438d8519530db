package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck"
)

type rewrapKeysCmd struct {
	store  storeFlags
	ns     string
	dryRun bool
	asJSON bool
}

// newRewrapKeysCmd is `claimcheck rewrap-keys`: the second step of a
// master key rotation (ADR 0075), on the store directly like gc and fsck.
func newRewrapKeysCmd(env Env) *cobra.Command {
	c := &rewrapKeysCmd{}
	cmd := &cobra.Command{
		Use:   "rewrap-keys [--ns NS] [--dry-run] [--json] [--config FILE] [--data DIR]",
		Short: "Rotate the master key: rewrap every data key with the current master_key",
		Long: `Work on the store directly (no server needed, the same --config/--data as
serve, so the same master_key and previous_master_keys). Every live data key
still wrapped by a master key in previous_master_keys is unwrapped with it
and wrapped again with master_key. Only the small wrapped keys in the
metadata database change: no object is read or rewritten. Each key is
changed with a compare-and-swap, so running it on several machines at once,
or again after an interruption, is safe. Destroyed keys are left alone.
Each rewrapped key is logged as a data_key_rewrapped event of its namespace.

It prints the counts (rewrapped, already current, failed) and the live data
keys per master key. Exits 1 if a key could not be rewrapped (its master key
is not configured, or the stored key was altered).

With --dry-run nothing changes: it reports what a run would do, checks that
every key to rewrap unwraps, and exits 1 while any live key is left on a
master key other than master_key. After a rewrap, that is the check that the
old key can be removed from previous_master_keys (docs/OPERATIONS.md).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.ns != "" {
				if err := claimcheck.ValidateNamespace(c.ns); err != nil {
					return usageError{err}
				}
			}
			store, err := c.store.openOffline(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer func() { _ = store.Close() }()
			ctx := claimcheck.WithActor(cmd.Context(), offlineActor(env))
			rep, err := store.RewrapDataKeys(ctx, claimcheck.RewrapOptions{Namespace: c.ns, DryRun: c.dryRun})
			if err != nil {
				return err
			}
			if c.asJSON {
				if err := json.NewEncoder(env.Stdout).Encode(rep); err != nil {
					return err
				}
			} else {
				printRewrapReport(env.Stdout, rep)
			}
			switch {
			case rep.Failed > 0:
				return fmt.Errorf("%d data keys could not be rewrapped: keep their master keys configured", rep.Failed)
			case rep.DryRun && rep.Pending() > 0:
				return fmt.Errorf("%d live data keys are wrapped by a master key other than master_key %s: run rewrap-keys", rep.Pending(), rep.MasterKeyID)
			}
			return nil
		},
	}
	c.store.register(cmd)
	cmd.Flags().StringVar(&c.ns, "ns", "", "only this namespace's data key")
	cmd.Flags().BoolVar(&c.dryRun, "dry-run", false, "report what would be rewrapped; change nothing")
	cmd.Flags().BoolVar(&c.asJSON, "json", false, "print the report as JSON")
	return cmd
}

func printRewrapReport(w io.Writer, rep claimcheck.RewrapReport) {
	verb := "rewrapped"
	if rep.DryRun {
		verb = "would rewrap"
	}
	fmt.Fprintf(w, "master_key: %s\n", rep.MasterKeyID)
	fmt.Fprintf(w, "%s: %d, already current: %d, failed: %d, destroyed meanwhile: %d\n",
		verb, rep.Rewrapped, rep.AlreadyCurrent, rep.Failed, rep.Destroyed)
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "  failed: namespace %s, data key %s (master key %s): %s\n", f.Namespace, f.KeyID, f.MasterKeyID, f.Error)
	}
	fmt.Fprintln(w, "live data keys by master key:")
	if len(rep.ByMasterKey) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, id := range slices.Sorted(maps.Keys(rep.ByMasterKey)) {
		note := ""
		if id == rep.MasterKeyID {
			note = " (master_key)"
		}
		fmt.Fprintf(w, "  %s%s: %d\n", id, note, rep.ByMasterKey[id])
	}
}
