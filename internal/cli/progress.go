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
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || (size >= 0 && size < progressMin) {
		return r, func() {}
	}
	bar := progressbar.DefaultBytes(size, what)
	pr := progressbar.NewReader(r, bar)
	return &pr, func() { bar.Finish() }
}
