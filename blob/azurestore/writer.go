package azurestore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/claimcheck/claimcheck/blob/gocloudbucket"
)

// writeBlockSize is the size of the blocks a write of a long stream
// stages, and the most one write holds in memory; an object that ends
// within it goes out as one Put Blob.
const writeBlockSize = gocloudbucket.WriteBufferSize

// NewWriter implements blob.Store with the block blob API: the bytes are
// buffered up to writeBlockSize; an object that ends there is one Put
// Blob sent by Close, a longer one is staged a block at a time and made
// visible by the Put Block List that Close sends. Nothing is visible
// before Close returns nil, and a cancelled ctx makes Close fail before
// the blob is written or its block list committed (the staged blocks
// are dropped by the service a week later, or by the next commit of the
// blob). Keys gocloud would store under an escaped name go through its
// writer, so that both agree on the name.
func (b *Bucket) NewWriter(ctx context.Context, key string) (io.WriteCloser, error) {
	if escapedByGocloud(key) {
		return b.Bucket.NewWriter(ctx, key)
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	return &writer{ctx: ctx, key: key, bb: b.blockBlob(key), id: binary.BigEndian.Uint32(id[:])}, nil
}

// escapedByGocloud reports whether gocloud's azureblob would store key
// under another name (see its package comment).
func escapedByGocloud(key string) bool {
	if strings.Contains(key, "../") || strings.HasSuffix(key, "/") {
		return true
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c < 32, c == 127, c == '"', c == '#', c == '%', c == '?', c == '\\':
			return true
		}
	}
	return false
}

type writer struct {
	ctx    context.Context
	key    string
	bb     *blockblob.Client
	id     uint32   // of this write, in its block IDs
	buf    []byte   // from blockBuffers, once written to
	blocks []string // staged so far
	closed bool
}

// blockBuffers recycles the block buffers of writes, each of
// writeBlockSize: a busy server writes many objects at once, and a
// buffer allocated whole (not grown by doubling, which would pass the
// block size) keeps a write's memory at one block.
var blockBuffers = sync.Pool{New: func() any { b := make([]byte, 0, writeBlockSize); return &b }}

// release returns the buffer to the pool.
func (w *writer) release() {
	if w.buf != nil {
		b := w.buf[:0]
		blockBuffers.Put(&b)
		w.buf = nil
	}
}

// writeBlockID names block n of the write: as long as blockID's names,
// since every block ID of a blob must have the same length.
func (w *writer) blockID(n int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "w%09x%012d", w.id, n))
}

func (w *writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, fmt.Errorf("blob: write %s: writer is closed", w.key)
	}
	if w.buf == nil && len(p) > 0 {
		w.buf = (*blockBuffers.Get().(*[]byte))[:0]
	}
	written := 0
	for len(p) > 0 {
		n := min(len(p), writeBlockSize-len(w.buf))
		w.buf = append(w.buf, p[:n]...)
		p = p[n:]
		written += n
		if len(w.buf) == writeBlockSize && len(p) > 0 {
			if err := w.stage(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// stage sends the buffer as the next block.
func (w *writer) stage() error {
	id := w.blockID(len(w.blocks))
	if _, err := w.bb.StageBlock(w.ctx, id, streaming(w.buf), nil); err != nil {
		return fmt.Errorf("blob: write %s: stage block %d: %w", w.key, len(w.blocks), err)
	}
	w.blocks = append(w.blocks, id)
	w.buf = w.buf[:0]
	return nil
}

var octetStream = &blob.HTTPHeaders{BlobContentType: ptr("application/octet-stream")}

func (w *writer) Close() error {
	if w.closed {
		return fmt.Errorf("blob: write %s: writer is closed", w.key)
	}
	w.closed = true
	if err := w.ctx.Err(); err != nil {
		w.release()
		return fmt.Errorf("blob: write %s: %w", w.key, err)
	}
	if len(w.blocks) == 0 {
		if _, err := w.bb.Upload(w.ctx, streaming(w.buf), &blockblob.UploadOptions{HTTPHeaders: octetStream}); err != nil {
			// Not recycled: the transport may still read a failed
			// request's body.
			return fmt.Errorf("blob: write %s: %w", w.key, err)
		}
		w.release()
		return nil
	}
	if len(w.buf) > 0 {
		if err := w.stage(); err != nil {
			return err
		}
	}
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("blob: write %s: %w", w.key, err)
	}
	w.release()
	if _, err := w.bb.CommitBlockList(w.ctx, w.blocks, &blockblob.CommitBlockListOptions{HTTPHeaders: octetStream}); err != nil {
		return fmt.Errorf("blob: write %s: commit %d blocks: %w", w.key, len(w.blocks), err)
	}
	return nil
}
