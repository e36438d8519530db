package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/internal/masterkey"
	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/meta"
)

// dataKeyIDPrefix starts every data key id (base64url, never '.').
const dataKeyIDPrefix = masterkey.DataKeyIDPrefix

// MasterKeyID names a master key without revealing it: the first 8 bytes
// of its sha256, in hex, after "mk_". It is stored beside every data key
// the master key wraps.
func MasterKeyID(key []byte) string { return masterkey.ID(key) }

// ParseMasterKey decodes a master key: 32 bytes in standard or URL-safe
// base64 (with or without padding).
func ParseMasterKey(s string) ([]byte, error) { return masterkey.Parse("master_key", s) }

// keyring holds the master keys (internal/masterkey); nil when none is
// configured.
type keyring = masterkey.Ring

// sealKey is a namespace's data key, unwrapped: what encrypts and
// decrypts its objects (internal/storedform).
type sealKey = storedform.Key

func newSealKey(dk meta.DataKey, key []byte) (*sealKey, error) {
	return storedform.NewKey(dk.ID, dk.CreatedAt, key)
}

// encryptedObjectKey is where an encrypted blob's bytes live.
func encryptedObjectKey(ns, blobID, keyID string) string {
	return sealedKey(objectKey(ns, blobID), keyID)
}

// sealedKey is the key of an object, in the bucket or inline, whose
// bytes are encrypted under data key keyID: the key names its data key.
func sealedKey(key, keyID string) string { return key + "." + keyID }

// dataKeyOfObject returns the data key id an object key names, if any.
func dataKeyOfObject(key string) (string, bool) { return masterkey.DataKeyOfObject(key) }

// namespaceKey returns the live data key of ns, creating it on first use.
func (s *Store) namespaceKey(ctx context.Context, ns string) (*sealKey, error) {
	if s.keys == nil {
		return nil, fmt.Errorf("%w: namespace %s is encrypted but no master_key is configured", claimcheck.ErrUnavailable, ns)
	}
	dk, err := s.meta.LiveDataKey(ctx, ns)
	if errors.Is(err, meta.ErrNotFound) {
		key := make([]byte, 32)
		rand.Read(key)
		id := newID(dataKeyIDPrefix, s.clock.Now())
		dk, err = s.meta.CreateDataKey(ctx, meta.DataKey{
			ID: id, Namespace: ns, MasterKeyID: s.keys.ID(),
			Wrapped: s.keys.Wrap(ns, id, key), CreatedAt: s.clock.Now(),
		})
		if err == nil && dk.ID == id {
			s.log.InfoContext(ctx, "created the data key of an encrypted namespace", "namespace", ns, "key", id, "master_key", s.keys.ID())
			return newSealKey(dk, key)
		}
	}
	if err != nil {
		return nil, metaErr("data key of "+ns, err)
	}
	key, err := s.keys.Unwrap(dk)
	if err != nil {
		return nil, err
	}
	return newSealKey(dk, key)
}

// objectKeyOf returns the key that decrypts the object of blob b of
// namespace ns, nil for a plain object. A destroyed key answers a
// *GoneError (reason key_destroyed) for claim id.
func (s *Store) objectKeyOf(ctx context.Context, id, ns string, b meta.Blob) (*sealKey, error) {
	keyID, ok := dataKeyOfObject(b.Key)
	if !ok {
		return nil, nil
	}
	dk, err := s.meta.DataKey(ctx, keyID)
	if err != nil {
		return nil, metaErr("redeem "+id, err)
	}
	if dk.Namespace != ns || dk.Namespace != b.Namespace {
		// Dedup never crosses namespaces; a key of another namespace here
		// means the rows were tampered with.
		return nil, fmt.Errorf("redeem %s: %w: object %s names data key %s of another namespace", id, claimcheck.ErrChecksumMismatch, b.Key, keyID)
	}
	if dk.Destroyed() {
		return nil, &claimcheck.GoneError{ID: id, Reason: claimcheck.ReasonKeyDestroyed, At: dk.DestroyedAt}
	}
	if s.keys == nil {
		return nil, fmt.Errorf("redeem %s: %w: the object is encrypted (data key %s of namespace %s) but no master_key is configured", id, claimcheck.ErrUnavailable, keyID, ns)
	}
	key, err := s.keys.Unwrap(dk)
	if err != nil {
		return nil, fmt.Errorf("redeem %s: %w", id, err)
	}
	return newSealKey(dk, key)
}

// DestroyNamespaceKey destroys the data key of encrypted namespace ns
// (crypto-shredding): every object written under it becomes unreadable
// for good, and redeems of its claims answer gone with reason
// key_destroyed. The next put to ns creates a new key. It fails with
// ErrHeld while the namespace or any of its claims is on legal hold, and
// with ErrNotFound when ns has no data key. It is an admin operation.
func (s *Store) DestroyNamespaceKey(ctx context.Context, ns string) error {
	if err := claimcheck.ValidateNamespace(ns); err != nil {
		return fmt.Errorf("destroy key: %w", err)
	}
	dk, err := s.meta.DestroyDataKey(ctx, ns, s.clock.Now())
	if errors.Is(err, meta.ErrHeld) {
		return fmt.Errorf("destroy key of %s: %w: %v; lift the holds first", ns, claimcheck.ErrHeld, err)
	}
	if errors.Is(err, meta.ErrNotFound) {
		return fmt.Errorf("destroy key of %s: %w: the namespace has no data key (nothing was encrypted, or it is destroyed already)", ns, claimcheck.ErrNotFound)
	}
	if errors.Is(err, meta.ErrShredIncomplete) {
		s.log.ErrorContext(ctx, "data key destroyed, but old copies may remain in the metadata store's files", "namespace", ns, "err", err)
		return fmt.Errorf("destroy key of %s: %w: the key is destroyed and unreadable, but erasing its old copies did not finish: %v", ns, claimcheck.ErrUnavailable, err)
	}
	if err != nil {
		return metaErr("destroy key of "+ns, err)
	}
	s.log.WarnContext(ctx, "data key destroyed: the namespace's encrypted objects are unreadable for good", "namespace", ns, "key", dk.ID, "actor", claimcheck.ActorFrom(ctx))
	// The shred finished the namespace's uploads in progress and made
	// their staging blobs due for collection (ADR 0255): their bytes,
	// which arrived in clear, are deleted now rather than at the
	// sweeper's next tick. Bounded; what remains the sweeper collects.
	if _, err := s.sweeper.RunOnce(ctx, shredCollectOps); err != nil {
		s.log.WarnContext(ctx, "destroy key: collecting the bytes of ended uploads failed; the sweeper retries", "namespace", ns, "err", err)
	}
	return nil
}

// shredCollectOps bounds the collection a shred runs before it answers.
const shredCollectOps = 1000

// validateEncryption refuses a config where a namespace needs encryption
// and no master key is set, naming the setting, and a malformed master
// key.
func (c Config) validateEncryption() error {
	policies, defaults, err := c.Policies()
	if err != nil {
		return err
	}
	var need []string
	for _, ns := range slices.Sorted(maps.Keys(policies)) {
		if policies[ns].Encrypted() {
			need = append(need, "namespaces."+ns)
		}
	}
	if defaults != nil && defaults.Encrypted() {
		need = append(need, "defaults")
	}
	if c.MasterKey == "" && len(c.PreviousMasterKeys) == 0 {
		if len(need) > 0 {
			return invalidf("master_key: not set, but %s %s encryption aes-256-gcm: set master_key in the config or CLAIMCHECK_MASTER_KEY in the environment (base64 of 32 random bytes, e.g. `openssl rand -base64 32`)",
				strings.Join(need, ", "), map[bool]string{true: "asks for", false: "ask for"}[len(need) == 1])
		}
		return nil
	}
	_, err = masterkey.New(c.MasterKey, c.PreviousMasterKeys)
	return err
}

// keyFloor raises a dedup floor (DedupNotBefore) to the creation of the
// data key sk: an encrypted put may share only a blob written after its
// namespace's current key was made, that is, under that key. That keeps
// plain objects from before encryption was switched on, and objects of a
// destroyed key, out of new claims.
func keyFloor(floor time.Time, sk *sealKey) time.Time {
	if sk != nil && sk.CreatedAt().After(floor) {
		return sk.CreatedAt()
	}
	return floor
}

// sealWriter marks the encrypting writer's failures as object-write
// failures (the encryptor only fails when the object write under it does),
// so they are not taken for a broken request body.
type sealWriter struct{ w io.Writer }

func (s sealWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		if _, ok := errors.AsType[*writeError](err); !ok {
			err = &writeError{err}
		}
	}
	return n, err
}

// openedReader tags authentication failures of a decrypting reader, so a
// redeem says the stored object fails decryption rather than that it does
// not decompress.
type openedReader struct{ r io.Reader }

func (o openedReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("decryption failed (altered, reordered or truncated segment): %w", err)
	}
	return n, err
}

// unreadable answers a redeem whose object can never be read: a claim
// whose data key was destroyed is finished with reason key_destroyed
// (unless a legal hold keeps it; then it stays and still answers gone).
func (s *Store) unreadable(ctx context.Context, c meta.Claim, err error) error {
	gone, ok := errors.AsType[*claimcheck.GoneError](err)
	if !ok || gone.Reason != claimcheck.ReasonKeyDestroyed {
		return err
	}
	res, done, ferr := s.meta.FinishClaim(ctx, c.ID, string(claimcheck.ReasonKeyDestroyed), s.clock.Now(), false)
	if ferr != nil {
		s.log.WarnContext(ctx, "redeem: could not finish a claim whose data key is destroyed", "claim", c.ID, "err", ferr)
	} else if done {
		s.sweepMetrics.ObserveFinished(res)
	}
	s.metrics.gone.WithLabelValues(string(claimcheck.ReasonKeyDestroyed)).Inc()
	return fmt.Errorf("redeem: %w", gone)
}
