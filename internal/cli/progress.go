package cli

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressMin is the size from which puts and gets show a progress bar.
const progressMin = 8 << 20

// withProgress wraps r in a progress bar on stderr when stderr is a
// terminal and the transfer is large (or of unknown size); otherwise it
// returns r and a no-op finish. The bar never goes to a pipe or a file, so
// scripts and logs see only the command's real output.
func withProgress(stderr io.Writer, r io.Reader, size int64, what string) (io.Reader, func()) {
	if !showProgress(stderr, size) {
		return r, func() {}
	}
	bar := progressbar.DefaultBytes(size, what)
	pr := progressbar.NewReader(r, bar)
	return &pr, func() { _ = bar.Finish() } // the bar's own drawing errors
}

// progressAt is withProgress for a transfer that reports its position
// instead of passing through a reader: a resumable upload, whose position
// is the server's offset and may go back after a cut.
func progressAt(stderr io.Writer, size int64, what string) (set func(int64), finish func()) {
	if !showProgress(stderr, size) {
		return func(int64) {}, func() {}
	}
	bar := progressbar.DefaultBytes(size, what)
	return func(pos int64) { _ = bar.Set64(pos) }, func() { _ = bar.Finish() }
}

func showProgress(stderr io.Writer, size int64) bool {
	f, ok := stderr.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && (size < 0 || size >= progressMin)
}
