// Package masterkey holds the master keys of encryption at rest (ADRs
// 0066, 0075): the current one wraps every new data key of an encrypted
// namespace, previous ones only unwrap the data keys they made. It also
// knows how an object key names the data key that encrypts its object.
// The engine makes data keys and decides when they are used; the scrub
// (internal/integrity) unwraps them to read objects back. Neither calls
// the other: both are given the same Ring.
package masterkey

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/meta"
)

const (
	// DataKeyIDPrefix starts every data key id (base64url, never '.').
	DataKeyIDPrefix = "dk_"
	wrapAADPrefix   = "claimcheck/data-key/v1\x00"
)

// ID names a master key without revealing it: the first 8 bytes of its
// sha256, in hex, after "mk_". It is stored beside every data key the
// master key wraps.
func ID(key []byte) string {
	sum := sha256.Sum256(key)
	return "mk_" + hex.EncodeToString(sum[:8])
}

// Parse decodes the master key of the setting named field: 32 bytes in
// standard or URL-safe base64 (with or without padding).
func Parse(field, s string) ([]byte, error) {
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

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", claimcheck.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// Ring holds the master keys; nil when none is configured. The current
// one (master_key) wraps every new data key and is what a rewrap moves
// keys to; the previous ones (previous_master_keys) only unwrap the data
// keys they made. Each data key row names the master key that wrapped
// it, so unwrapping picks the key by id and never tries them in turn
// (ADR 0075).
type Ring struct {
	id          string
	aead        cipher.AEAD
	previous    map[string]cipher.AEAD // by master key id
	previousIDs []string               // in config order, for messages
}

// New parses the current and previous master keys; no master key is a
// nil Ring. A previous key equal to the current one or to another
// previous one is refused: it is a mistake in the config (most likely a
// rotation half done), and the index names the entry.
func New(master string, previous []string) (*Ring, error) {
	if master == "" {
		if len(previous) > 0 {
			return nil, invalidf("previous_master_keys: set without master_key; the current master key wraps new data keys and previous ones only unwrap old ones, so master_key is required (CLAIMCHECK_MASTER_KEY)")
		}
		return nil, nil
	}
	key, err := Parse("master_key", master)
	if err != nil {
		return nil, err
	}
	k := &Ring{id: ID(key), previous: map[string]cipher.AEAD{}}
	if k.aead, err = gcm(key); err != nil {
		return nil, err
	}
	for i, p := range previous {
		field := fmt.Sprintf("previous_master_keys[%d]", i)
		key, err := Parse(field, p)
		if err != nil {
			return nil, err
		}
		id := ID(key)
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

// ID is the id of the current master key.
func (k *Ring) ID() string { return k.id }

// PreviousIDs are the ids of the previous master keys, in config order.
func (k *Ring) PreviousIDs() []string { return k.previousIDs }

// Opener returns the master key that wrapped dk. A data key wrapped by a
// master key that is not configured is ErrUnavailable naming both ids:
// the remedy is configuration, not a retry.
func (k *Ring) Opener(dk meta.DataKey) (cipher.AEAD, error) {
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

// Wrap seals data key keyID of namespace ns with the current master key.
func (k *Ring) Wrap(ns, keyID string, dataKey []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce) // never fails (crypto/rand)
	return k.aead.Seal(nonce, nonce, dataKey, wrapAAD(ns, keyID))
}

// Unwrap opens dk with the master key that wrapped it. A wrapped key
// that does not open was altered: ErrChecksumMismatch.
func (k *Ring) Unwrap(dk meta.DataKey) ([]byte, error) {
	aead, err := k.Opener(dk)
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

// DataKeyOfObject returns the data key id an object key names, if any:
// an encrypted object's key ends with "." and the id of its data key.
func DataKeyOfObject(key string) (string, bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	_, id, ok := strings.Cut(name, ".")
	return id, ok && strings.HasPrefix(id, DataKeyIDPrefix)
}

// sealAADPrefix binds a sealed secret to what it is (ADR 0240): a
// subscription's signing secret sealed for one id does not open as
// another's.
const sealAADPrefix = "claimcheck/secret/v1\x00"

// Seal seals a secret with the current master key; name is what it
// belongs to (a subscription id), bound in as associated data.
func (k *Ring) Seal(name string, secret []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce) // never fails (crypto/rand)
	return k.aead.Seal(nonce, nonce, secret, []byte(sealAADPrefix+name))
}

// Open opens a secret Seal made for name with master key keyID.
func (k *Ring) Open(name, keyID string, sealed []byte) ([]byte, error) {
	aead, err := k.Opener(meta.DataKey{ID: name, MasterKeyID: keyID})
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(sealed) < n {
		return nil, fmt.Errorf("%w: the sealed secret of %s is %d bytes", claimcheck.ErrChecksumMismatch, name, len(sealed))
	}
	secret, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(sealAADPrefix+name))
	if err != nil {
		return nil, fmt.Errorf("%w: the secret of %s does not open with master key %s: it was altered",
			claimcheck.ErrChecksumMismatch, name, keyID)
	}
	return secret, nil
}
