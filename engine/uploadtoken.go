package engine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/claimcheck/claimcheck"
)

// Upload tokens (ADR 0078). On storage that cannot presign (files,
// memory) the store receives the payload itself, and what InitUpload
// hands out is a token rather than a URL: the engine knows no routes, the
// HTTP server turns the token into one of its own URLs.
//
// A token is four dot-separated fields:
//
//	u1.<upload id>.<expiry, Unix seconds>.<signature>
//
// where the signature is the unpadded base64url HMAC-SHA256, under the
// upload key kept in the metadata database (uploadSecret), of
// uploadTokenDomain, the upload id and the expiry, newline-separated.
// Every field uses only URL-unreserved characters (claim ids are cc_ and
// base64url, never a dot), so a token goes into a path or a query as it
// is. The signature binds the id and the expiry, so neither can be changed
// without the key, and every replica on the database checks with the same
// key. Clients treat the token as opaque; only this file reads it.

// uploadTokenVersion is the first field of a token; a change of format
// takes a new one, and tokens of another version are refused.
const uploadTokenVersion = "u1"

// uploadTokenDomain starts the signed message, so that no other message
// signed with the same key (the URL signatures of earlier versions, any
// later use) can pass for a token.
const uploadTokenDomain = "claimcheck upload token u1"

// maxUploadToken bounds what is parsed: a real token is under 100 bytes.
const maxUploadToken = 256

// newUploadToken is the token of upload id, valid until exp (whole
// seconds: a token cannot say more).
func newUploadToken(secret []byte, id string, exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return uploadTokenVersion + "." + id + "." + e + "." + signUploadToken(secret, id, e)
}

// signUploadToken is the signature over id and exp, as written in the
// token.
func signUploadToken(secret []byte, id, exp string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(uploadTokenDomain + "\n" + id + "\n" + exp))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkUploadToken accepts token if this store's key signed it for upload
// id and it has not expired at now. Every refusal is ErrPermissionDenied,
// saying which check failed; the token itself is never echoed (it is a
// credential).
func checkUploadToken(secret []byte, token, id string, now time.Time) error {
	denied := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", claimcheck.ErrPermissionDenied, fmt.Sprintf(format, args...))
	}
	if token == "" {
		return denied("no upload token given")
	}
	if len(token) > maxUploadToken {
		return denied("the upload token is malformed (%d bytes)", len(token))
	}
	f := strings.Split(token, ".")
	if len(f) != 4 || f[0] != uploadTokenVersion {
		return denied("the upload token is malformed (not a %s token)", uploadTokenVersion)
	}
	tokID, exp, sig := f[1], f[2], f[3]
	// The signature first: until it matches, nothing else in the token
	// is to be believed, not even to word the refusal.
	if !hmac.Equal([]byte(sig), []byte(signUploadToken(secret, tokID, exp))) {
		return denied("the upload token's signature does not match (it was altered, or issued by another store)")
	}
	if tokID != id {
		return denied("the upload token is for upload %s, not %s", tokID, id)
	}
	expUnix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		// Signed but unreadable: only a key shared with something else
		// could produce it.
		return denied("the upload token's expiry %q is not a Unix time", exp)
	}
	if at := time.Unix(expUnix, 0); !now.Before(at) {
		return denied("the upload token expired at %s; init the upload again (same idempotency key) for a fresh one",
			at.UTC().Format(time.RFC3339))
	}
	return nil
}
