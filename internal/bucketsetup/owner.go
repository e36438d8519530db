package bucketsetup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/claimcheck/claimcheck/blob"
)

// The owner marker (ADR 0255). A store is its metadata store: the id
// kept there is generated once and shared by every replica on that
// database. At start the store reads blob.OwnerKey at the root of its
// storage: absent, it writes its own; its own, all is well; another
// store's, the start fails naming both, unless the configuration says
// the storage is shared on purpose (storage_shared: true). Two stores on
// one storage would collect each other's objects as debris and replace
// each other's lifecycle rules, so sharing is refused by default.

// Owner is the content of the marker: who owns the storage, without
// secrets.
type Owner struct {
	// ID is the store's id (the metadata store's store_id).
	ID string `json:"store_id"`
	// Metadata describes the metadata store: its URL without password or
	// query.
	Metadata string `json:"metadata"`
	// Since is when the marker was written.
	Since time.Time `json:"since"`
}

func (o Owner) String() string {
	return fmt.Sprintf("store %s (metadata %s, since %s)", o.ID, o.Metadata, o.Since.UTC().Format(time.RFC3339))
}

// SharedKey is the configuration key that lets a second store start on
// storage another store owns.
const SharedKey = "storage_shared"

// ClaimStorage reads the owner marker of storage b (named storage in
// messages) and writes me into it when there is none. It reports whether
// the storage is the store's own (its marker names me.ID): only then does
// the lifecycle set-up take over rules written before rules carried a
// store id. Another store's marker fails the start unless shared, in
// which case it is kept as it is, this store leaves a sharer's marker
// beside it (blob.IsSharerMarker), and a warning names both.
func ClaimStorage(ctx context.Context, b blob.Store, storage string, me Owner, shared bool, log *slog.Logger) (own bool, err error) {
	cur, found, err := readOwner(ctx, b)
	if err != nil {
		return false, err
	}
	if !found {
		if err := writeOwner(ctx, b, me); err != nil {
			return false, err
		}
		// Two stores starting at once both find no marker; the read-back
		// shows the one that wrote last, and the other refuses below.
		if cur, found, err = readOwner(ctx, b); err != nil {
			return false, err
		}
		if !found {
			return false, fmt.Errorf("owner marker %s: written, then not found", blob.OwnerKey)
		}
	}
	if cur.ID == me.ID {
		return true, nil
	}
	if !shared {
		return false, fmt.Errorf("storage %s belongs to %s, and this is %s: two stores on one storage collect each other's objects as debris and replace each other's lifecycle rules; give this store storage of its own, or set %s: true if they share it on purpose (marker object %s)",
			storage, cur, me, SharedKey, blob.OwnerKey)
	}
	// The sharer's marker tells every store's backstop (the owner's too)
	// that objects without a row may be another store's.
	sharer := blob.OwnerKey + "." + me.ID
	if _, found, err := readMarker(ctx, b, sharer); err != nil {
		return false, err
	} else if !found {
		if err := writeMarker(ctx, b, sharer, me); err != nil {
			return false, err
		}
	}
	log.Warn("storage shared on purpose with another store: no store collects debris on it while the marker "+sharer+" is there, and each changes only its own lifecycle rules",
		"storage", storage, "owner", cur.String(), "this_store", me.ID, "config", SharedKey)
	return false, nil
}

// readOwner reads the marker; found is false when there is none.
func readOwner(ctx context.Context, b blob.Store) (o Owner, found bool, err error) {
	return readMarker(ctx, b, blob.OwnerKey)
}

func readMarker(ctx context.Context, b blob.Store, key string) (o Owner, found bool, err error) {
	r, err := b.NewReader(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return Owner{}, false, nil
	}
	if err != nil {
		return Owner{}, false, fmt.Errorf("owner marker %s: %w", key, err)
	}
	defer func() { _ = r.Close() }()
	data, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return Owner{}, false, fmt.Errorf("owner marker %s: %w", key, err)
	}
	if err := json.Unmarshal(data, &o); err != nil || o.ID == "" {
		return Owner{}, false, fmt.Errorf("owner marker %s: not a claimcheck store marker (%q); remove it only if no other store uses this storage", key, bytes.TrimSpace(data[:min(len(data), 200)]))
	}
	return o, true, nil
}

func writeOwner(ctx context.Context, b blob.Store, o Owner) error {
	return writeMarker(ctx, b, blob.OwnerKey, o)
}

func writeMarker(ctx context.Context, b blob.Store, key string, o Owner) error {
	data, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	// A write that fails is cancelled before Close, so no partial
	// marker becomes visible.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.NewWriter(ctx, key)
	if err != nil {
		return fmt.Errorf("owner marker %s: %w", key, err)
	}
	if _, err := w.Write(append(data, '\n')); err != nil {
		cancel()
		_ = w.Close()
		return fmt.Errorf("owner marker %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("owner marker %s: %w", key, err)
	}
	return nil
}
