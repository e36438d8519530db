package storedform

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"io"
	"time"

	"github.com/tink-crypto/tink-go/v2/streamingaead/subtle"
)

const (
	// SegmentSize is the ciphertext segment of the streaming AEAD: the
	// unit authenticated before any of its bytes are released, and the
	// memory a stream holds per direction.
	SegmentSize = 64 << 10
	// gcmTag is the AES-GCM tag every segment ends with.
	gcmTag          = 16
	objectAADPrefix = "claimcheck/object/v1\x00"
)

// Key is an unwrapped data key ready to encrypt or decrypt objects.
type Key struct {
	id        string
	createdAt time.Time
	aead      *subtle.AESGCMHKDF
	// raw is the data key itself: a ranged read derives the object's
	// segment key from it to decrypt segments at an offset, which the
	// streaming reader cannot (segments.go).
	raw []byte
}

// NewKey makes the data key id, created at createdAt, whose 32 bytes
// are raw, ready for use.
func NewKey(id string, createdAt time.Time, raw []byte) (*Key, error) {
	aead, err := subtle.NewAESGCMHKDF(raw, "SHA256", 32, SegmentSize, 0)
	if err != nil {
		return nil, fmt.Errorf("data key %s: %w", id, err)
	}
	return &Key{id: id, createdAt: createdAt, aead: aead, raw: raw}, nil
}

// ID is the data key's id, which the object key of every object it
// encrypts ends with.
func (k *Key) ID() string { return k.id }

// CreatedAt is when the data key was made.
func (k *Key) CreatedAt() time.Time { return k.createdAt }

// Encrypt returns a writer that encrypts into w the object stored at
// objectKey; Close writes the last segment (it does not close w).
func (k *Key) Encrypt(w io.Writer, objectKey string) (io.WriteCloser, error) {
	return k.aead.NewEncryptingWriter(w, objectAAD(objectKey))
}

// Decrypt returns a reader of the plaintext of r, the object stored at
// objectKey. A segment that fails authentication (altered, reordered,
// truncated) is an error, and none of its bytes are returned.
func (k *Key) Decrypt(r io.Reader, objectKey string) (io.Reader, error) {
	return k.aead.NewDecryptingReader(r, objectAAD(objectKey))
}

// objectAAD binds an object's ciphertext to the key it is stored at.
func objectAAD(objectKey string) []byte { return []byte(objectAADPrefix + objectKey) }

func gcm(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
