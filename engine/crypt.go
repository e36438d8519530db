package engine

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"

	"github.com/claimcheck/claimcheck/internal/storedform"
	"github.com/claimcheck/claimcheck/meta"
)

const (
	// dataKeyIDPrefix starts every data key id (base64url, never '.').
	dataKeyIDPrefix = "dk_"
	wrapAADPrefix   = "claimcheck/data-key/v1\x00"
)

// MasterKeyID names a master key without revealing it: the first 8 bytes
// of its sha256, in hex, after "mk_". It is stored beside every data key
// the master key wraps.
func MasterKeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return "mk_" + hex.EncodeToString(sum[:8])
}

// ParseMasterKey decodes a master key: 32 bytes in standard or URL-safe
// base64 (with or without padding).
func ParseMasterKey(s string) ([]byte, error) { return parseKey("master_key", s) }

// parseKey is ParseMasterKey for the setting named field.
func parseKey(field, s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return nil, invalidf("%s: %d bytes, want 32 (base64 of 32 random bytes, e.g. `openssl rand -base64 32`)", field, len(b))
			}
			return b, nil
		}
	}
	return nil, invalidf("%s: not base64; want base64 of 32 random bytes (e.g. `openssl rand -base64 32`)", field)
}

// keyring holds the master keys; nil when none is configured. The
// current one (master_key) wraps every new data key and is what a rewrap
// moves keys to; the previous ones (previous_master_keys) only unwrap the
// data keys they made. Each data key row names the master key that
// wrapped it, so unwrapping picks the key by id and never tries them in
// turn (ADR 0075).
type keyring struct {
	id          string
	aead        cipher.AEAD
	previous    map[string]cipher.AEAD // by master key id
	previousIDs []string               // in config order, for messages
}

// newKeyring parses the current and previous master keys. A previous key
// equal to the current one or to another previous one is refused: it is
// a mistake in the config (most likely a rotation half done), and the
// index names the entry.
func newKeyring(master string, previous []string) (*keyring, error) {
	if master == "" {
		if len(previous) > 0 {
			return nil, invalidf("previous_master_keys: set without master_key; the current master key wraps new data keys and previous ones only unwrap old ones, so master_key is required (CLAIMCHECK_MASTER_KEY)")
		}
		return nil, nil
	}
	key, err := ParseMasterKey(master)
	if err != nil {
		return nil, err
	}
	k := &keyring{id: MasterKeyID(key), previous: map[string]cipher.AEAD{}}
	if k.aead, err = gcm(key); err != nil {
		return nil, err
	}
	for i, p := range previous {
		field := fmt.Sprintf("previous_master_keys[%d]", i)
		key, err := parseKey(field, p)
		if err != nil {
			return nil, err
		}
		id := MasterKeyID(key)
		if id == k.id {
			return nil, invalidf("%s: the same key as master_key (%s); list only the keys master_key replaced", field, id)
		}
		if j := slices.Index(k.previousIDs, id); j >= 0 {
			return nil, invalidf("%s: the same key as previous_master_keys[%d] (%s)", field, j, id)
		}
		if k.previous[id], err = gcm(key); err != nil {
			return nil, err
		}
		k.previousIDs = append(k.previousIDs, id)
	}
	return k, nil
}

// opener returns the master key that wrapped dk. A data key wrapped by a
// master key that is not configured is ErrUnavailable naming both ids:
// the remedy is configuration, not a retry.
func (k *keyring) opener(dk meta.DataKey) (cipher.AEAD, error) {
	if dk.MasterKeyID == k.id {
		return k.aead, nil
	}
	if a, ok := k.previous[dk.MasterKeyID]; ok {
		return a, nil
	}
	known := "no previous_master_keys"
	if len(k.previousIDs) > 0 {
		known = "previous_master_keys " + strings.Join(k.previousIDs, ", ")
	}
	return nil, fmt.Errorf("%w: data key %s of namespace %s is wrapped by master key %s, but the configured master_key is %s (%s): add the master key it was made with to previous_master_keys",
		claimcheck.ErrUnavailable, dk.ID, dk.Namespace, dk.MasterKeyID, k.id, known)
}

func gcm(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func wrapAAD(ns, keyID string) []byte { return []byte(wrapAADPrefix + ns + "\x00" + keyID) }

func (k *keyring) wrap(ns, keyID string, dataKey []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce) // never fails (crypto/rand)
	return k.aead.Seal(nonce, nonce, dataKey, wrapAAD(ns, keyID))
}

func (k *keyring) unwrap(dk meta.DataKey) ([]byte, error) {
	aead, err := k.opener(dk)
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(dk.Wrapped) < n {
		return nil, fmt.Errorf("%w: data key %s: wrapped key is %d bytes", claimcheck.ErrChecksumMismatch, dk.ID, len(dk.Wrapped))
	}
	key, err := aead.Open(nil, dk.Wrapped[:n], dk.Wrapped[n:], wrapAAD(dk.Namespace, dk.ID))
	if err != nil {
		return nil, fmt.Errorf("%w: data key %s of namespace %s does not unwrap with master key %s: it was altered",
			claimcheck.ErrChecksumMismatch, dk.ID, dk.Namespace, dk.MasterKeyID)
	}
	return key, nil
}

// sealKey is a namespace's data key, unwrapped: what encrypts and
// decrypts its objects (internal/storedform).
type sealKey = storedform.Key

func newSealKey(dk meta.DataKey, key []byte) (*sealKey, error) {
	return storedform.NewKey(dk.ID, dk.CreatedAt, key)
}

// encryptedObjectKey is where an encrypted blob's bytes live.
func encryptedObjectKey(ns, blobID, keyID string) string {
	return objectKey(ns, blobID) + "." + keyID
}

// dataKeyOfObject returns the data key id an object key names, if any.
func dataKeyOfObject(key string) (string, bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	_, id, ok := strings.Cut(name, ".")
	return id, ok && strings.HasPrefix(id, dataKeyIDPrefix)
}

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
			ID: id, Namespace: ns, MasterKeyID: s.keys.id,
			Wrapped: s.keys.wrap(ns, id, key), CreatedAt: s.clock.Now(),
		})
		if err == nil && dk.ID == id {
			s.log.Info("created the data key of an encrypted namespace", "namespace", ns, "key", id, "master_key", s.keys.id)
			return newSealKey(dk, key)
		}
	}
	if err != nil {
		return nil, metaErr("data key of "+ns, err)
	}
	key, err := s.keys.unwrap(dk)
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
	key, err := s.keys.unwrap(dk)
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
		s.log.Error("data key destroyed, but old copies may remain in the metadata store's files", "namespace", ns, "err", err)
		return fmt.Errorf("destroy key of %s: %w: the key is destroyed and unreadable, but erasing its old copies did not finish: %v", ns, claimcheck.ErrUnavailable, err)
	}
	if err != nil {
		return metaErr("destroy key of "+ns, err)
	}
	s.log.Warn("data key destroyed: the namespace's encrypted objects are unreadable for good", "namespace", ns, "key", dk.ID, "actor", claimcheck.ActorFrom(ctx))
	return nil
}

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
	_, err = newKeyring(c.MasterKey, c.PreviousMasterKeys)
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
		s.log.Warn("redeem: could not finish a claim whose data key is destroyed", "claim", c.ID, "err", ferr)
	} else if done {
		s.sweepMetrics.ObserveFinished(res)
	}
	s.metrics.gone.WithLabelValues(string(claimcheck.ReasonKeyDestroyed)).Inc()
	return fmt.Errorf("redeem: %w", gone)
}
