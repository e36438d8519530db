package claimcheck

// Encryption at rest (ADR 0066).
//
// Envelope encryption: each encrypted namespace has a random 256-bit data
// key, created on first use and stored in the metadata database wrapped
// (AES-256-GCM) by the master key from the config (master_key or
// CLAIMCHECK_MASTER_KEY). Objects are encrypted as they stream, after
// compression, with tink's streaming AEAD (AES-256-GCM-HKDF, 64 KiB
// segments): a fresh key per object derived from the data key and a random
// salt, and per-segment nonces made of a random prefix, the segment number
// and a last-segment flag, so a truncated, reordered or altered object
// fails authentication instead of yielding bytes. The associated data is
// the object key, which names the namespace, the blob and the data key, so
// an object copied under another key does not decrypt either.
//
// The object key records the encryption: NS/BLOBID.DATAKEYID. Plain
// objects are NS/BLOBID. Redeem takes the data key from there, so a policy
// change never makes old objects unreadable.
//
// Master key rotation (rewrap.go, ADR 0075): master_key wraps new data
// keys, previous_master_keys only unwrap; each data key row names the
// master key that wrapped it, and RewrapDataKeys moves the rows to the
// current one.
//
// Crypto-shredding: DestroyNamespaceKey wipes the wrapped data key. Every
// object encrypted under it is then unreadable for good; a redeem answers
// a *GoneError with reason key_destroyed and finishes the claim.

// The encryption settings of a namespace policy.
const (
	EncryptionNone      = "none"
	EncryptionAES256GCM = "aes-256-gcm"
)
