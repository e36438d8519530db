package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// resumeInto is get --continue: the payload is appended to a partial file
// named after OUT and the claim, from where that file ends, with one
// ranged redeem. The partial file is never OUT: it is renamed into place
// only after the whole of it matched the reference's size and sha256,
// because the parts of a resumed download were each checked only as far
// as a range can be (docs/HTTP.md, "Ranged redeem").
//
// Like a plain get -o, a symbolic link is followed; a target that is not
// a regular file (a device, a pipe) cannot be resumed into.
func (g *getCmd) resumeInto(ctx context.Context, env Env, c *client.Client, ref claimcheck.Ref) error {
	target, err := resolveOutput(g.out)
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	switch {
	case err == nil && fi.IsDir():
		return usageError{fmt.Errorf("-o %s: is a directory", g.out)}
	case err == nil && !fi.Mode().IsRegular():
		return usageError{fmt.Errorf("--continue: -o %s is not a regular file; a download into it cannot be resumed", g.out)}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("-o %s: %w", g.out, err)
	}
	partial := filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+"."+ref.ID+".partial")
	f, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	// The ranged read from where the file ends always reaches the last
	// byte, so it is the read that counts (ADR 0111).
	whole := ref
	p, err := c.RedeemRange(ctx, ref, have, -1)
	var re *claimcheck.RangeError
	switch {
	case errors.As(err, &re) && re.Size == have:
		// Everything is there already (a run cut after its last byte):
		// only the check below remains. The size is the server's; the
		// digest checked is the ref's when it has one.
		whole.Size = re.Size
		if whole.Digest == "" {
			// Only a claim id was given: the server's reference has the
			// digest (a stat is not a read).
			info, err := c.Stat(ctx, ref)
			if err != nil {
				return err
			}
			whole = info.Ref
		}
	case errors.As(err, &re):
		// Longer than the payload: not a part of it.
		_ = f.Close()
		_ = os.Remove(partial)
		return fmt.Errorf("%s has %d bytes, more than the payload's %d: %w; it was removed, run again to download from the start", partial, have, re.Size, claimcheck.ErrChecksumMismatch)
	case err != nil:
		return err
	default:
		defer func() { _ = p.Close() }()
		whole = p.Ref
		src, finish := withProgress(env.Stderr, p, p.Length, "get")
		_, err := io.Copy(f, src)
		finish()
		if errors.Is(err, claimcheck.ErrChecksumMismatch) {
			// The server found the stored bytes bad: what was appended
			// cannot be trusted either.
			_ = f.Close()
			_ = os.Remove(partial)
			return fmt.Errorf("%w (the partial download %s was removed)", err, partial)
		}
		if err != nil {
			return fmt.Errorf("%w (the partial download is kept in %s: run the same command again to resume)", err, partial)
		}
	}
	if err := verifyFile(f, whole); err != nil {
		_ = f.Close()
		_ = os.Remove(partial)
		return fmt.Errorf("%s: %w; it was removed, run again to download from the start", partial, err)
	}
	if fi != nil {
		// An existing file keeps its permission bits, as with get -o.
		if err := f.Chmod(fi.Mode().Perm()); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(partial, target); err != nil {
		return fmt.Errorf("moving the payload into place: %w", err)
	}
	return nil
}

// verifyFile checks the whole of f against ref's size and digest.
func verifyFile(f *os.File, ref claimcheck.Ref) error {
	if err := f.Sync(); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if n != ref.Size {
		return fmt.Errorf("%w: the file has %d bytes, the payload %d", claimcheck.ErrChecksumMismatch, n, ref.Size)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != ref.Digest {
		return fmt.Errorf("%w: the file hashes to %s, the payload to %s", claimcheck.ErrChecksumMismatch, got, ref.Digest)
	}
	return nil
}
