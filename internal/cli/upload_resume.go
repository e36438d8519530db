package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/claimcheck/claimcheck"
	"github.com/claimcheck/claimcheck/client"
)

// resumeState is the state file of upload --resume: the URL of the
// server's tus upload of one file. The file's name is a hash of every
// field but URL, so a run finds the state of exactly the same server,
// namespace, file path, size, modification time and sha256; a file that
// changed in any of them starts a new upload and never continues one of
// other bytes (the server would refuse it at the end anyway, after the
// whole transfer). The fields are in the file too, for a person who
// wonders what it is.
type resumeState struct {
	URL     string `json:"url"`
	Server  string `json:"server"`
	NS      string `json:"ns"`
	File    string `json:"file"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
	Digest  string `json:"sha256"`
}

// stateDir is where the state files live: the user's cache directory
// ($XDG_CACHE_HOME, else ~/.cache, on Linux), not beside FILE, whose
// directory may be read-only or shared with others.
func stateDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("--resume keeps the upload's URL in the user's cache directory: %w", err)
	}
	return filepath.Join(dir, "claimcheck", "uploads"), nil
}

// path is the state file of s.
func (s resumeState) path(dir string) string {
	h := sha256.New()
	for _, f := range []string{s.Server, s.NS, s.File, strconv.FormatInt(s.Size, 10), strconv.FormatInt(s.ModTime, 10), s.Digest} {
		h.Write([]byte(strconv.Itoa(len(f)) + ":" + f + "\n"))
	}
	return filepath.Join(dir, hex.EncodeToString(h.Sum(nil)[:16])+".json")
}

// load returns the saved upload URL, "" when there is none. A state file
// that cannot be read as one is treated as absent: it is replaced.
func (s resumeState) load(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var saved resumeState
	if json.Unmarshal(b, &saved) != nil || saved.URL == "" {
		return ""
	}
	url := saved.URL
	if saved.URL = ""; saved != s {
		return "" // a file edited by hand
	}
	return url
}

// save writes the state with url, replacing the file in one rename so a
// run stopped half-way never leaves a torn one.
func (s resumeState) save(path, url string) error {
	s.URL = url
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("saving the upload's state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".state-*")
	if err != nil {
		return fmt.Errorf("saving the upload's state: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("saving the upload's state: %w", err)
	}
	return nil
}

// uploadResumable is upload --resume: the file goes over tus, and its
// upload URL is kept in a state file until the server answered the
// reference, so a run after an interruption (a cut connection that
// outlasted the client's retries, a killed process, a reboot) continues
// from the server's offset instead of from the first byte.
func (u *uploadCmd) uploadResumable(ctx context.Context, env Env, c *client.Client, f *os.File, st fs.FileInfo, digest string) (claimcheck.Ref, error) {
	abs, err := filepath.Abs(f.Name())
	if err != nil {
		return claimcheck.Ref{}, err
	}
	dir, err := stateDir()
	if err != nil {
		return claimcheck.Ref{}, err
	}
	state := resumeState{Server: u.client.server, NS: u.claim.ns, File: abs, Size: st.Size(), ModTime: st.ModTime().UnixNano(), Digest: digest}
	path := state.path(dir)

	set, finish := progressAt(env.Stderr, st.Size(), "upload")
	opts := client.ResumableOptions{
		ContentType: u.claim.contentType,
		Digest:      digest,
		Progress:    func(offset, _ int64) { set(offset) },
	}
	var ref claimcheck.Ref
	if saved := state.load(path); saved != "" {
		ref, err = c.ResumeUpload(ctx, saved, f, st.Size(), opts)
		if errors.Is(err, claimcheck.ErrNotFound) || errors.Is(err, claimcheck.ErrGone) {
			// Expired or dropped by the server (or another API key's):
			// only a new upload can go on.
			fmt.Fprintf(env.Stderr, "claimcheck: the saved upload is no longer on the server (%v); starting a new one\n", err)
			_ = os.Remove(path)
			saved = ""
		}
		if saved != "" {
			finish()
			return resumeDone(env, ref, err, path)
		}
	}
	// The state is saved before any byte is sent: without it a cut could
	// not be resumed, and it is better to stop now than to find out
	// after a long transfer.
	opts.Created = func(url string) error { return state.save(path, url) }
	ref, err = c.UploadResumable(ctx, u.claim.ns, f, st.Size(), opts)
	finish()
	return resumeDone(env, ref, err, path)
}

// resumeDone removes the state file after a success and says how to go
// on after a failure that left an upload to continue.
func resumeDone(env Env, ref claimcheck.Ref, err error, path string) (claimcheck.Ref, error) {
	if err == nil {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			// The claim exists: a state file left behind only makes a
			// later run of the same file answer the same reference.
			fmt.Fprintf(env.Stderr, "claimcheck: the upload is complete, but its state file stays: %v\n", rerr)
		}
		return ref, nil
	}
	if _, serr := os.Stat(path); serr == nil && !errors.Is(err, claimcheck.ErrChecksumMismatch) && !errors.Is(err, claimcheck.ErrNotFound) && !errors.Is(err, claimcheck.ErrGone) {
		return ref, fmt.Errorf("%w (the server keeps what it received: run the same command again to continue)", err)
	}
	_ = os.Remove(path)
	return ref, err
}
