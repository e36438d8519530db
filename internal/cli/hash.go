package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// hashFile returns the "sha256:<hex>" digest of the regular file f of
// size bytes, showing progress, and rewinds f for the upload. Hashing a
// local file costs far less than sending it: a put or upload that
// declares the digest first is answered without the body when the store
// already holds the bytes.
func hashFile(env Env, f *os.File, size int64) (string, error) {
	h := sha256.New()
	body, finish := withProgress(env.Stderr, f, size, "sha256")
	_, err := io.Copy(h, body)
	finish()
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", f.Name(), err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
