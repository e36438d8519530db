package azurestore

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	ccblob "github.com/claimcheck/claimcheck/blob"
)

// Block blob limits: a blob commits at most 50,000 blocks, of at most
// 4,000 MiB each.
const (
	maxBlocks     = 50_000
	minBlockSize  = 4 << 20
	maxObjectSize = maxBlocks * 4000 << 20
)

// AppendBlockSize is the largest block an Append of an object of size
// bytes stages: 4 MiB, or more (in whole MiB) when 50,000 blocks of 4
// MiB would not hold it. Append holds one block in memory.
func AppendBlockSize(size int64) int64 {
	p := int64(minBlockSize)
	if need := (size + maxBlocks - 1) / maxBlocks; need > p {
		p = (need + 1<<20 - 1) &^ (1<<20 - 1)
	}
	return p
}

// blockID names the block that starts at offset off of the object. The
// IDs of one blob must all have the same length: 20 digits hold every
// offset.
func blockID(off int64) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "cc%020d", off))
}

// BeginAppend implements ccblob.Appender. The bytes received are
// uncommitted blocks of the block blob at key, each named by the offset
// it starts at (blockID), which Azure keeps with the blob's name (for up
// to a week) without listing them; CompleteAppend commits the chain of
// blocks from offset 0 to size (ADR 0230). An empty blob at key, written
// here, says the upload is alive: Append refuses to stage blocks without
// it, so an aborted upload stays aborted. The handle is unused ("").
func (b *Bucket) BeginAppend(ctx context.Context, key string, size int64) (string, error) {
	if size < 0 || size > maxObjectSize {
		return "", fmt.Errorf("blob: begin append %s: size %d: want 0 to %d bytes", key, size, int64(maxObjectSize))
	}
	if _, err := b.blockBlob(key).Upload(ctx, streaming(nil), &blockblob.UploadOptions{HTTPHeaders: octetStream}); err != nil {
		return "", fmt.Errorf("blob: begin append %s: %w", key, err)
	}
	return "", nil
}

// Append implements ccblob.Appender: the body is staged as blocks of up
// to AppendBlockSize(size) bytes, the first named by off, each next one
// by the offset where the last ended, and durable(end) is called once
// all are staged. Staging a block under a name replaces the block of
// that name, so bytes past the recorded offset (a crash, a refused
// chunk) are replaced by the next Append, which starts at that offset
// again; and every block on the chain CompleteAppend follows was staged
// by the Append that brought the bytes recorded there. A body that
// breaks keeps the blocks it brought.
func (b *Bucket) Append(ctx context.Context, key, _ string, size, off int64, r io.Reader, durable func(int64) error) (int64, error) {
	if off < 0 || off > size {
		return off, fmt.Errorf("blob: append %s: offset %d outside the object's %d bytes", key, off, size)
	}
	bb := b.blockBlob(key)
	if _, err := bb.GetProperties(ctx, nil); err != nil {
		if bloberror.HasCode(err, bloberror.BlobNotFound) {
			err = ccblob.ErrNotFound
		}
		return off, fmt.Errorf("blob: append %s: the upload's blob: %w", key, err)
	}
	buf := make([]byte, min(AppendBlockSize(size), max(size-off, 0)))
	body := io.LimitReader(r, size-off)
	at := off
	var rerr error
	for at < size {
		n, err := io.ReadFull(body, buf)
		if n > 0 {
			if _, serr := bb.StageBlock(ctx, blockID(at), streaming(buf[:n]), nil); serr != nil {
				return off, fmt.Errorf("blob: append %s: stage the block at %d: %w", key, at, serr)
			}
			at += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
	}
	if rerr == nil {
		var one [1]byte
		if m, _ := io.ReadFull(r, one[:]); m > 0 {
			rerr = fmt.Errorf("blob: append %s: more bytes than the %d left of the object", key, size-off)
		}
	}
	if at == off {
		return off, rerr
	}
	if err := durable(at); err != nil {
		return off, err
	}
	return at, rerr
}

// streaming wraps p for StageBlock, which wants a ReadSeekCloser.
func streaming(p []byte) io.ReadSeekCloser {
	return nopCloser{bytes.NewReader(p)}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// CompleteAppend implements ccblob.Appender: the uncommitted blocks are
// listed, the chain from offset 0 is followed (the block named by each
// offset, then the one named by where it ends) to size, and that list is
// committed, which makes the blob and drops every other uncommitted
// block. A retry after a commit whose answer was lost finds no chain and
// a blob of the right size, and succeeds.
func (b *Bucket) CompleteAppend(ctx context.Context, key, _ string, size int64) error {
	bb := b.blockBlob(key)
	opts := &blockblob.CommitBlockListOptions{HTTPHeaders: octetStream}
	if size == 0 {
		if _, err := bb.CommitBlockList(ctx, nil, opts); err != nil {
			return fmt.Errorf("blob: complete append %s: %w", key, err)
		}
		return nil
	}
	list, err := bb.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		return fmt.Errorf("blob: complete append %s: list the staged blocks: %w", key, err)
	}
	sizes := map[string]int64{}
	if list.BlockList.UncommittedBlocks != nil {
		for _, blk := range list.BlockList.UncommittedBlocks {
			if blk.Name != nil && blk.Size != nil {
				sizes[*blk.Name] = *blk.Size
			}
		}
	}
	var ids []string
	for at := int64(0); at < size; {
		id := blockID(at)
		n, ok := sizes[id]
		if !ok || n <= 0 {
			if len(ids) == 0 {
				return b.completedAlready(ctx, key, size)
			}
			return fmt.Errorf("blob: complete append %s: no block staged at offset %d: %w", key, at, ccblob.ErrNotFound)
		}
		ids = append(ids, id)
		at += n
		if at > size {
			return fmt.Errorf("blob: complete append %s: the block at %d ends past the %d bytes", key, at-n, size)
		}
	}
	if _, err := bb.CommitBlockList(ctx, ids, opts); err != nil {
		return fmt.Errorf("blob: complete append %s: commit %d blocks: %w", key, len(ids), err)
	}
	return nil
}

// completedAlready answers a completion that finds no blocks: done if
// the blob has the size (an earlier completion whose answer was lost),
// else the upload was aborted.
func (b *Bucket) completedAlready(ctx context.Context, key string, size int64) error {
	if a, err := b.Attributes(ctx, key); err == nil && a.Size == size {
		return nil
	}
	return fmt.Errorf("blob: complete append %s: no blocks staged: %w", key, ccblob.ErrNotFound)
}

// AbortAppend implements ccblob.Appender: committing an empty block list
// drops every uncommitted block (Azure would keep them a week), and the
// blob it leaves is deleted.
func (b *Bucket) AbortAppend(ctx context.Context, key, _ string) error {
	if _, err := b.blockBlob(key).CommitBlockList(ctx, nil, nil); err != nil {
		return fmt.Errorf("blob: abort append %s: drop the staged blocks: %w", key, err)
	}
	return b.Delete(ctx, key)
}
