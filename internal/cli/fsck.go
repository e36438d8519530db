package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/claimcheck/claimcheck/clock"
	"github.com/claimcheck/claimcheck/engine"
	"github.com/claimcheck/claimcheck/sweep"
)

// errDamage makes fsck exit non-zero after its report.
var errDamage = errors.New("fsck found problems")

type fsckCmd struct {
	store   storeFlags
	asJSON  bool
	verify  bool
	rate    int64
	restart bool
}

func newFsckCmd(env Env) *cobra.Command {
	f := &fsckCmd{}
	cmd := &cobra.Command{
		Use:   "fsck [--json] [--verify [--rate BYTES] [--restart]] [--config FILE] [--data DIR]",
		Short: "Check metadata against storage; mark damaged blobs; exit non-zero on damage",
		Long: `Work on the store directly (no server needed, the same --config/--data as
serve). Walks every blob row and the whole bucket and reports: refcount drift
(a refcount hint that disagrees with the live claims, or a committed blob no
claim references), debris (objects without a row, older than backstop_grace),
missing objects (rows whose object is gone), objects whose size is not the
blob's stored size (truncated or grown), objects the storage keeps answering
with an error of its own while it answers others (unreadable), objects it
could not check because the storage did not answer, blobs marked damaged, blobs stuck in
deleting for over an hour (dead letters among them) and namespaces whose
quota counters disagree with their live claims. Exits 1 if it finds any of
them.

fsck goes on past every object it cannot read and reports everything at the
end. The one change fsck makes is to mark blobs with a missing, resized,
unreadable or (with --verify) corrupt object damaged: redeems of them then answer
checksum_mismatch at once, dedup stops sharing them, and the next put of the
same bytes repairs them. 'claimcheck gc' repairs drift and debris; quota
drift is a bug (please report it).

--verify also reads every object whole (decrypting and decompressing it) and
checks the size and sha256 of the original bytes: the scrub. It reads at most
--rate object bytes per second and keeps its position in the database after
every blob, so a run that is stopped resumes where it was (--restart starts
from the first blob again).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			store, err := f.store.openOffline(ctx, env)
			if err != nil {
				return err
			}
			defer func() { _ = store.Close() }()
			rep, err := store.Sweeper().Inspect(ctx, true)
			if err != nil {
				return err
			}
			if _, err := store.Sweeper().MarkFindings(ctx, rep); err != nil {
				return err
			}
			if f.verify {
				if f.rate <= 0 {
					return usageError{fmt.Errorf("--rate %d: must be positive (object bytes per second)", f.rate)}
				}
				sr, err := scrubPaced(ctx, store, f.rate, f.restart)
				if err != nil {
					return err
				}
				rep.Scrub = &sr
			}
			if f.asJSON {
				if err := json.NewEncoder(env.Stdout).Encode(rep); err != nil {
					return err
				}
			} else {
				printFsck(env, rep)
			}
			if rep.Problems() {
				return errDamage
			}
			return nil
		},
	}
	f.store.register(cmd)
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&f.verify, "verify", false, "read and hash every object (the scrub); mark what fails")
	cmd.Flags().Int64Var(&f.rate, "rate", sweep.DefaultScrubRate, "with --verify: object bytes read per second at most")
	cmd.Flags().BoolVar(&f.restart, "restart", false, "with --verify: start from the first blob instead of the saved position")
	return cmd
}

// scrubPaced runs the scrub to the end of its pass at rate bytes per
// second: steps of a quarter second's budget, each followed by a pause
// until the bytes read so far are due at that rate.
func scrubPaced(ctx context.Context, store *engine.Store, rate int64, restart bool) (sweep.ScrubReport, error) {
	if restart {
		if err := store.ResetScrub(ctx); err != nil {
			return sweep.ScrubReport{}, err
		}
	}
	var total sweep.ScrubReport
	start := time.Now()
	for {
		step, err := store.Scrub(ctx, max(rate/4, 1))
		total.Blobs += step.Blobs
		total.Bytes += step.Bytes
		total.Found = append(total.Found, step.Found...)
		total.Cleared = append(total.Cleared, step.Cleared...)
		total.Unchecked = append(total.Unchecked, step.Unchecked...)
		if err != nil {
			return total, err
		}
		if step.PassDone {
			total.PassDone = true
			return total, nil
		}
		due := start.Add(time.Duration(float64(total.Bytes) / float64(rate) * float64(time.Second)))
		if err := clock.Until(ctx, clock.Real{}, due); err != nil {
			return total, err
		}
	}
}

func printFsck(env Env, rep sweep.Report) {
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
	fmt.Fprintf(w, "wrong object size: %d\n", len(rep.WrongSize))
	for _, x := range rep.WrongSize {
		fmt.Fprintf(w, "  blob %s (%s, namespace %s): object %s has %d bytes, stored size %d\n",
			x.Blob.ID, x.Blob.State, x.Blob.Namespace, x.Blob.Key, x.ObjectSize, x.Blob.StoredSize)
	}
	fmt.Fprintf(w, "unreadable objects (the storage keeps answering them with errors): %d\n", len(rep.Unreadable))
	for _, u := range rep.Unreadable {
		fmt.Fprintf(w, "  blob %s (%s, namespace %s): object %s: %s\n", u.Blob.ID, u.Blob.State, u.Blob.Namespace, u.Blob.Key, u.Detail)
	}
	fmt.Fprintf(w, "objects not checked (the storage did not answer): %d\n", len(rep.Unchecked))
	for _, u := range rep.Unchecked {
		fmt.Fprintf(w, "  blob %s (namespace %s): object %s: %s\n", u.Blob.ID, u.Blob.Namespace, u.Blob.Key, u.Error)
	}
	fmt.Fprintf(w, "damaged blobs (marked before this run): %d\n", len(rep.Damaged))
	for _, b := range rep.Damaged {
		fmt.Fprintf(w, "  blob %s (%s, namespace %s) since %s: %s\n", b.ID, b.State, b.Namespace, b.DamagedAt.UTC().Format(time.RFC3339), b.Damage)
	}
	if s := rep.Scrub; s != nil {
		fmt.Fprintf(w, "verified: %d blobs, %d object bytes read; corrupt: %d; found good again: %d\n", s.Blobs, s.Bytes, len(s.Found), len(s.Cleared))
		for _, x := range s.Found {
			fmt.Fprintf(w, "  blob %s (namespace %s): object %s: %s: %s\n", x.BlobID, x.Namespace, x.Key, x.Cause, x.Detail)
		}
		fmt.Fprintf(w, "not verified (could not be read): %d\n", len(s.Unchecked))
		for _, u := range s.Unchecked {
			fmt.Fprintf(w, "  blob %s (namespace %s): object %s: %s\n", u.Blob.ID, u.Blob.Namespace, u.Blob.Key, u.Error)
		}
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
