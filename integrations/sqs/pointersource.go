package sqs

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/claimcheck/claimcheck"
)

// An Extended Client pointer is data from whoever could send to the
// queue, and the consumer follows it with its own S3 credentials. Left
// open, a sender could make the consumer read any object those
// credentials reach and hand it to the handler as a message body, and
// with DeletePointerObjects delete it (ADR 0272). The consumer therefore
// follows only pointers into the buckets (and key prefixes) its
// ConsumerConfig.PointerSources names, and never deletes an object that
// is named the way a claimcheck store names its own.

// ErrPointerNotAllowed is in the error of a pointer the consumer refused
// to follow: its bucket and key are not in ConsumerConfig.PointerSources,
// or its key is not a plain object key. Such a message is terminal (it
// also matches claimcheck.ErrInvalidArgument); its object is never read.
var ErrPointerNotAllowed = errors.New("S3 pointer not allowed")

// PointerSource is a place Extended Client pointers may point into: a
// bucket, and optionally a key prefix within it (e.g. "extended/", with
// its slash; empty: the whole bucket).
type PointerSource struct {
	Bucket string
	Prefix string
}

// checkPointerSources refuses an allow-list entry that would allow more
// than it says: no bucket, or a prefix that is no plain key.
func checkPointerSources(sources []PointerSource) error {
	for i, s := range sources {
		if s.Bucket == "" {
			return fmt.Errorf("%w: PointerSources[%d]: Bucket is required", claimcheck.ErrInvalidArgument, i)
		}
		if s.Prefix != "" && !plainKey(s.Prefix+"x") {
			return fmt.Errorf("%w: PointerSources[%d]: Prefix %q is not a plain key prefix (no leading /, no . or .. segments)", claimcheck.ErrInvalidArgument, i, s.Prefix)
		}
	}
	return nil
}

// allowPointer returns nil when p may be followed, else an error with
// ErrPointerNotAllowed.
func allowPointer(sources []PointerSource, p Pointer) error {
	if !plainKey(p.Key) {
		return fmt.Errorf("%w (%w): s3://%s/%s: the key is not a plain object key (a leading /, an empty, . or .. segment)",
			ErrPointerNotAllowed, claimcheck.ErrInvalidArgument, p.Bucket, p.Key)
	}
	for _, s := range sources {
		if p.Bucket == s.Bucket && strings.HasPrefix(p.Key, s.Prefix) {
			return nil
		}
	}
	return fmt.Errorf("%w (%w): s3://%s/%s is not in ConsumerConfig.PointerSources",
		ErrPointerNotAllowed, claimcheck.ErrInvalidArgument, p.Bucket, p.Key)
}

// plainKey reports whether key is an object key with nothing a store or
// proxy might resolve: no leading slash, no empty, "." or ".." segment,
// no backslash or control character. S3 itself takes keys literally;
// S3-compatible stores and gateways do not all do so, and a prefix test
// must mean what it says.
func plainKey(key string) bool {
	if key == "" || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return false
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// storeOwnedKey reports whether key is named the way a claimcheck store
// names the objects it owns (engine/ids.go, engine/crypt.go and
// blob/owner.go): <namespace>/<two hex digits>/b_<22-character id>,
// the older <namespace>/b_<id>, either with ".<key id>" when encrypted,
// and the owner markers .claimcheck-store[.<store id>], each possibly
// under the storage URL's prefix. The consumer never deletes such an
// object: the store deletes it when its claim is finished, and a pointer
// naming one (as ExtendedClientConfig writes) is for reading only.
func storeOwnedKey(key string) bool {
	base := key[strings.LastIndexByte(key, '/')+1:]
	if base == ownerMarker || strings.HasPrefix(base, ownerMarker+".") {
		return true
	}
	if !strings.HasPrefix(base, "b_") || len(base) < len("b_")+blobIDChars {
		return false
	}
	for _, r := range base[2 : 2+blobIDChars] {
		if !isIDChar(r) {
			return false
		}
	}
	return len(base) == 2+blobIDChars || base[2+blobIDChars] == '.'
}

const (
	// ownerMarker is blob.OwnerKey, which this module does not import
	// (it links the contract only).
	ownerMarker = ".claimcheck-store"
	// blobIDChars is the length of the id part of a blob id.
	blobIDChars = 22
)

func isIDChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// s3Terminal reports whether S3 answered err with a status that no retry
// changes: a 4xx about the request itself (a key S3 refuses, access
// denied to the object, a bucket that is not there). Throttling, request
// timeouts and the consumer's own credentials or clock (expired token,
// a skewed clock, a bad signature) are not the message's fault: those
// stay retryable, so that fixing the consumer delivers the message.
func s3Terminal(err error) bool {
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	status := re.HTTPStatusCode()
	if status < 400 || status > 499 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests {
		return false
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ExpiredToken", "ExpiredTokenException", "TokenRefreshRequired", "RequestTimeTooSkewed",
			"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "RequestTimeout", "SlowDown":
			return false
		}
	}
	return true
}
