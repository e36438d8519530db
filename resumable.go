package claimcheck

import "time"

// ResumableRequest is what a client declares when it starts a resumable
// upload.
type ResumableRequest struct {
	// Size is the payload's exact length in bytes.
	Size int64
	// Digest is "sha256:<hex>" of the whole payload, or empty: when set,
	// completion checks it.
	Digest      string
	ContentType string
}

// ResumableUpload is the state of a resumable upload. Its ID is the id
// of the claim the payload becomes.
type ResumableUpload struct {
	ID          string
	Namespace   string
	State       ClaimState // pending while bytes are awaited; active once completed
	Size        int64
	Offset      int64 // bytes stored so far
	Digest      string
	ContentType string
	// ExpiresAt is when a pending upload is reaped unless more bytes
	// arrive: confirm_within after the last progress.
	ExpiresAt time.Time
	// Ref is the claim's reference once the upload completed.
	Ref *Ref
}

// ChunkChecksum is a checksum one append's bytes must match.
type ChunkChecksum struct {
	// Algorithm is "sha256" or "sha1"; empty means no check.
	Algorithm string
	Sum       []byte
}

// ChunkAlgorithms are the algorithms a ChunkChecksum may name.
var ChunkAlgorithms = []string{"sha1", "sha256"}
