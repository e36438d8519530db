package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"golang.org/x/term"
)

// writeOutput writes the payload src to path (get -o) without ever
// damaging what path names:
//
//   - an existing file that is not a regular file (a character device such
//     as /dev/null, a FIFO, a socket) is opened and written to directly,
//     never replaced: renaming a temporary file over /dev/null as root
//     would turn the device into a regular file for every process on the
//     machine;
//   - a symbolic link is followed, like curl -o does: the payload goes to
//     the link's target (by the rules above), and the link stays a link;
//   - a regular file, or a path that does not exist yet, gets the payload
//     in a temporary file beside it that is renamed into place only after
//     the whole payload was verified, so the file never holds a partial or
//     unverified payload. An existing file keeps its permission bits.
func writeOutput(path string, src io.Reader) error {
	target, err := resolveOutput(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	switch {
	case err == nil && fi.IsDir():
		return usageError{fmt.Errorf("-o %s: is a directory", path)}
	case err == nil && !fi.Mode().IsRegular():
		// O_TRUNC means nothing to a device or a pipe, and must not be
		// asked of one.
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("-o %s: %w", path, err)
		}
		if _, err := io.Copy(f, src); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("-o %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".partial-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op once renamed
	if _, err := io.Copy(tmp, src); err != nil {
		_ = tmp.Close()
		return err
	}
	if fi != nil {
		if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
			_ = tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("moving the payload into place: %w", err)
	}
	return nil
}

// maxLinks bounds the symbolic links resolveOutput follows (a loop).
const maxLinks = 40

// resolveOutput follows the symbolic links of path's last element to
// the file the payload belongs in. A dangling link resolves to its
// (missing) target, which the payload then creates, as curl -o does.
func resolveOutput(path string) (string, error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", fmt.Errorf("-o %s: %w", path, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("-o %s: %w", path, err)
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = dest
	}
	return "", fmt.Errorf("-o %s: more than %d symbolic links", path, maxLinks)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// sniffLen is how much of a payload decides whether it is text.
const sniffLen = 8 << 10

// refuseBinaryOnTerminal returns the payload to copy to a terminal, or
// an error when its first bytes are binary: raw bytes on a terminal can
// reprogram it (escape sequences) and are no use to read, so, like curl,
// get asks for -o FILE, or -o - to write them anyway.
func refuseBinaryOnTerminal(src io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(src, sniffLen)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	if binary(head, len(head) < sniffLen) {
		return nil, usageError{errors.New("the payload is binary and standard output is a terminal: write it to a file with -o FILE, or give -o - to print it anyway")}
	}
	return br, nil
}

// binary reports whether head, the start of a payload (all of it when
// whole), is not text: it holds a NUL byte or is not UTF-8. A rune cut
// at the end of a partial head does not count.
func binary(head []byte, whole bool) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if !whole {
		for i := 0; i < utf8.UTFMax && len(head) > 0; i++ {
			if utf8.Valid(head) {
				return false
			}
			head = head[:len(head)-1]
		}
	}
	return !utf8.Valid(head)
}
