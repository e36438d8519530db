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
	"github.com/claimcheck/claimcheck/clock"
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
	// A transfer that breaks off is resumed from where the file ends,
	// after a pause that doubles, as upload --resume does; attempts in a
	// row that add no byte are bounded by --retries.
	var whole claimcheck.Ref
	for failures := 0; ; {
		have, err := f.Seek(0, io.SeekEnd)
		if err != nil {
			return err
		}
		whole, err = g.fetchRest(ctx, env, c, ref, f, have, partial)
		var rt retryableTransfer
		if !errors.As(err, &rt) {
			if err != nil {
				return err
			}
			break
		}
		if now, serr := f.Seek(0, io.SeekEnd); serr == nil && now > have {
			failures = 0
		}
		failures++
		if failures > g.retries || ctx.Err() != nil {
			if g.retries > 0 {
				err = fmt.Errorf("gave up after %d attempts in a row without progress: %w", failures, rt.error)
			}
			return fmt.Errorf("%w (the partial download is kept in %s: run the same command again to resume)", err, partial)
		}
		wait := client.RetryDelay(failures, rt.error)
		fmt.Fprintf(env.Stderr, "claimcheck: %v; resuming in %s\n", rt.error, wait)
		if werr := clock.Sleep(ctx, clock.Real{}, wait); werr != nil {
			return fmt.Errorf("%w (the partial download is kept in %s: run the same command again to resume)", werr, partial)
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

// retryableTransfer marks a failure of fetchRest that may pass by itself:
// the connection broke or the server was briefly unable to answer.
type retryableTransfer struct{ error }

func (e retryableTransfer) Unwrap() error { return e.error }

// fetchRest appends the payload's bytes after the first have to f with
// one ranged redeem and answers the reference the whole file is checked
// against.
func (g *getCmd) fetchRest(ctx context.Context, env Env, c *client.Client, ref claimcheck.Ref, f *os.File, have int64, partial string) (claimcheck.Ref, error) {
	// The ranged read from where the file ends always reaches the last
	// byte, so it is the read that counts (ADR 0111).
	whole := ref
	p, err := c.RedeemRange(ctx, ref, have, -1)
	var re *claimcheck.RangeError
	switch {
	case errors.As(err, &re) && re.Size == have:
		// Everything is there already (a run cut after its last byte):
		// only the whole-file check remains. The size is the server's;
		// the digest checked is the ref's when it has one.
		whole.Size = re.Size
		if whole.Digest == "" {
			// Only a claim id was given: the server's reference has the
			// digest (a stat is not a read).
			info, err := c.Stat(ctx, ref)
			if err != nil {
				return whole, err
			}
			whole = info.Ref
		}
		return whole, nil
	case errors.As(err, &re):
		// Longer than the payload: not a part of it.
		_ = f.Close()
		_ = os.Remove(partial)
		return whole, fmt.Errorf("%s has %d bytes, more than the payload's %d: %w; it was removed, run again to download from the start", partial, have, re.Size, claimcheck.ErrChecksumMismatch)
	case err != nil && client.Retryable(err):
		return whole, retryableTransfer{err}
	case err != nil:
		return whole, err
	}
	defer func() { _ = p.Close() }()
	src, finish := withProgress(env.Stderr, p, p.Length, "get")
	w := &fileWriter{f: f}
	_, err = io.Copy(w, src)
	finish()
	switch {
	case err == nil:
		return p.Ref, nil
	case errors.Is(err, claimcheck.ErrChecksumMismatch):
		// The server found the stored bytes bad: what was appended
		// cannot be trusted either.
		_ = f.Close()
		_ = os.Remove(partial)
		return whole, fmt.Errorf("%w (the partial download %s was removed)", err, partial)
	case w.err != nil || ctx.Err() != nil:
		return whole, fmt.Errorf("%w (the partial download is kept in %s: run the same command again to resume)", err, partial)
	}
	// A read that failed: the connection broke (no answer of the API's:
	// a network error), or the server broke the stream off with an error
	// that may pass.
	var ce *client.Error
	if client.Retryable(err) || !errors.As(err, &ce) {
		return whole, retryableTransfer{err}
	}
	return whole, fmt.Errorf("%w (the partial download is kept in %s: run the same command again to resume)", err, partial)
}

// fileWriter remembers a failed write, so a full disk is told apart from
// a broken connection (which is retried).
type fileWriter struct {
	f   *os.File
	err error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}
