package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// errDamage makes fsck exit non-zero after its report.
var errDamage = errors.New("fsck found problems")

type fsckCmd struct {
	store  storeFlags
	asJSON bool
}

func newFsckCmd(env Env) *cobra.Command {
	f := &fsckCmd{}
	cmd := &cobra.Command{
		Use:   "fsck [--json] [--config FILE] [--data DIR]",
		Short: "Check metadata against storage, read-only; exit non-zero on damage",
		Long: `Work on the store directly (no server needed, the same --config/--data as
serve) and change nothing. Walks every blob row and the whole bucket and
reports: refcount drift (a refcount hint that disagrees with the live claims,
or a committed blob no claim references), debris (objects without a row,
older than backstop_grace), missing objects (rows whose object is gone),
blobs stuck in deleting for over an hour (dead letters among them) and
namespaces whose quota counters disagree with their live claims. Exits 1 if
it finds any of them;
'claimcheck gc' repairs all but missing objects and quota drift, which need
an operator (quota drift is a bug: please report it).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := f.store.openOffline(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer store.Close()
			rep, err := store.Sweeper().Inspect(cmd.Context(), true)
			if err != nil {
				return err
			}
			if f.asJSON {
				if err := json.NewEncoder(env.Stdout).Encode(rep); err != nil {
					return err
				}
			} else {
				w := env.Stdout
				fmt.Fprintf(w, "blobs checked: %d, objects listed: %d\n", rep.Blobs, rep.ObjectsListed)
				fmt.Fprintf(w, "refcount drift: %d\n", len(rep.Drift))
				for _, d := range rep.Drift {
					fmt.Fprintf(w, "  blob %s (%s): refcount %d, live claims %d\n", d.BlobID, d.State, d.Refcount, d.Live)
				}
				fmt.Fprintf(w, "debris: %d objects, %d bytes\n", len(rep.Debris), rep.DebrisBytes)
				for _, o := range rep.Debris {
					fmt.Fprintf(w, "  %s (%d bytes, modified %s)\n", o.Key, o.Size, o.ModTime.UTC().Format(time.RFC3339))
				}
				fmt.Fprintf(w, "missing objects: %d\n", len(rep.Missing))
				for _, b := range rep.Missing {
					fmt.Fprintf(w, "  blob %s (%s, namespace %s): object %s not found\n", b.ID, b.State, b.Namespace, b.Key)
				}
				fmt.Fprintf(w, "quota drift: %d namespaces\n", len(rep.QuotaDrift))
				for _, d := range rep.QuotaDrift {
					c, s := d.Counters, d.Claims
					fmt.Fprintf(w, "  namespace %s: counters used=%d reserved=%d active=%d pending=%d, live claims used=%d reserved=%d active=%d pending=%d\n",
						c.Name, c.UsedBytes, c.ReservedBytes, c.ActiveClaims, c.PendingClaims, s.UsedBytes, s.ReservedBytes, s.ActiveClaims, s.PendingClaims)
				}
				fmt.Fprintf(w, "stuck in deleting (over %s): %d\n", rep.StuckThreshold, len(rep.StuckDeleting))
				for _, b := range rep.StuckDeleting {
					fmt.Fprintf(w, "  blob %s since %s, %d failed attempts: %s\n", b.ID, b.StateAt.UTC().Format(time.RFC3339), b.Attempts, b.LastError)
				}
			}
			if rep.Problems() {
				return errDamage
			}
			return nil
		},
	}
	f.store.register(cmd)
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	return cmd
}
