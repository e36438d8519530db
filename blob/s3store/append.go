package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/claimcheck/claimcheck/blob"
)

var _ blob.Appender = (*Bucket)(nil)

// S3 multipart limits: every part but the last has at least 5 MiB, an
// upload has at most 10,000 parts, an object at most 5 TiB.
const (
	minPartSize   = 5 << 20
	maxParts      = 10000
	maxObjectSize = 5 << 40
)

// AppendPartSize is the part size of an S3 append of an object of size
// bytes: 5 MiB, or more (in whole MiB) when 10,000 parts of 5 MiB would
// not hold it. It depends on the size alone, so every Append of one
// object cuts the same parts: part n always holds bytes
// [(n-1)·p, n·p).
func AppendPartSize(size int64) int64 {
	p := int64(minPartSize)
	if need := (size + maxParts - 1) / maxParts; need > p {
		p = (need + 1<<20 - 1) &^ (1<<20 - 1)
	}
	return p
}

// BeginAppend implements blob.Appender: a multipart upload of key, whose id
// is the handle.
//
// How the bytes are kept between requests: the whole parts received so
// far are parts of the multipart upload; the rest (less than a part) is
// the object at key itself, rewritten by each Append that adds to it,
// and uploaded as the last part by CompleteAppend. Deleting key and
// aborting the upload leaves nothing. The caller's recorded offset o
// decides what counts: parts 1…⌊o/p⌋, and the first o mod p bytes of the
// object at key. Append keeps that true at every instant (see Append).
func (b *Bucket) BeginAppend(ctx context.Context, key string, size int64) (string, error) {
	if size < 0 || size > maxObjectSize {
		return "", fmt.Errorf("blob: begin append %s: size %d: want 0 to %d bytes", key, size, int64(maxObjectSize))
	}
	if escapedByGocloud(key) {
		return "", fmt.Errorf("blob: begin append %s: key has characters only the portable API can store", key)
	}
	out, err := b.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(b.name), Key: aws.String(key), ContentType: aws.String("application/octet-stream"),
	})
	if err != nil {
		return "", fmt.Errorf("blob: begin append %s: %w", key, err)
	}
	return aws.ToString(out.UploadId), nil
}

// Append implements blob.Appender. It holds at most one part in memory: the
// tail kept at key (bytes since the last whole part) followed by the
// new bytes; each time that fills a part, the part is uploaded. After
// the body ends: if whole parts were added, durable(last part's end) is
// recorded first, and only then is the object at key overwritten with
// the new tail and durable(end) recorded. So a crash anywhere leaves
// the recorded offset pointing at parts that exist and at a tail whose
// first bytes are right: an upload of part n before its offset is
// recorded is simply uploaded again by the next Append, and the tail at
// key is never replaced while the recorded offset still needs it.
func (b *Bucket) Append(ctx context.Context, key, handle string, size, off int64, r io.Reader, durable func(int64) error) (int64, error) {
	p := AppendPartSize(size)
	done := off / p // whole parts recorded
	buf := make([]byte, p)
	fill := int(off - done*p) // tail bytes recorded
	if fill > 0 {
		rd, err := b.NewRangeReader(ctx, key, 0, int64(fill))
		if err != nil {
			return off, fmt.Errorf("blob: append %s: read the last %d bytes kept: %w", key, fill, err)
		}
		n, err := io.ReadFull(rd, buf[:fill])
		_ = rd.Close()
		if err != nil {
			return off, fmt.Errorf("blob: append %s: read the last %d bytes kept: got %d: %w", key, fill, n, err)
		}
	}
	var (
		read  int64 // new bytes read from r
		parts = done
		rerr  error
	)
	body := io.LimitReader(r, size-off)
	for {
		n, err := io.ReadFull(body, buf[fill:])
		fill += n
		read += int64(n)
		if fill == len(buf) {
			if err := b.uploadPart(ctx, key, handle, parts+1, buf); err != nil {
				return off, err
			}
			parts++
			fill = 0
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
	if read == 0 {
		return off, rerr
	}
	recorded := off
	if parts > done {
		if err := durable(parts * p); err != nil {
			return recorded, err
		}
		recorded = parts * p
	}
	if fill > 0 {
		if parts == done {
			// No part reached the upload, which may have been aborted
			// meanwhile: a tail written now would be an object nobody
			// finishes.
			if err := b.uploadExists(ctx, key, handle); err != nil {
				return recorded, err
			}
		}
		if err := b.putTail(ctx, key, buf[:fill]); err != nil {
			return recorded, err
		}
		if err := durable(off + read); err != nil {
			return recorded, err
		}
		recorded = off + read
	}
	return recorded, rerr
}

// uploadPart uploads part n of the multipart upload.
func (b *Bucket) uploadPart(ctx context.Context, key, handle string, n int64, data []byte) error {
	_, err := b.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: aws.String(b.name), Key: aws.String(key), UploadId: aws.String(handle),
		PartNumber: aws.Int32(int32(n)), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	})
	if noSuchUpload(err) {
		err = blob.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("blob: append %s: upload part %d: %w", key, n, err)
	}
	return nil
}

// uploadExists fails with blob.ErrNotFound if the multipart upload was
// completed or aborted.
func (b *Bucket) uploadExists(ctx context.Context, key, handle string) error {
	_, err := b.client.ListParts(ctx, &s3.ListPartsInput{
		Bucket: aws.String(b.name), Key: aws.String(key), UploadId: aws.String(handle), MaxParts: aws.Int32(1),
	})
	if noSuchUpload(err) {
		err = blob.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("blob: append %s: %w", key, err)
	}
	return nil
}

// putTail writes the bytes after the last whole part as the object at
// key, with one PUT.
func (b *Bucket) putTail(ctx context.Context, key string, data []byte) error {
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.name), Key: aws.String(key), Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))), ContentType: aws.String("application/octet-stream"),
	})
	if err != nil {
		return fmt.Errorf("blob: append %s: keep the last %d bytes: %w", key, len(data), err)
	}
	return nil
}

// CompleteAppend implements blob.Appender: the tail kept at key becomes the
// last part, and the multipart upload is completed over parts 1…n,
// replacing the tail object with the whole one. An empty object has no
// parts: the upload is aborted and an empty object written. A retry
// after a completion whose answer was lost finds no upload and an
// object of the right size, and succeeds.
func (b *Bucket) CompleteAppend(ctx context.Context, key, handle string, size int64) error {
	if size == 0 {
		if err := b.abortUpload(ctx, key, handle); err != nil {
			return err
		}
		return b.putTail(ctx, key, nil)
	}
	p := AppendPartSize(size)
	whole := size / p
	n := whole
	if tail := size - whole*p; tail > 0 {
		data, err := b.readTail(ctx, key, tail)
		if err != nil {
			return err
		}
		n++
		if err := b.uploadPart(ctx, key, handle, n, data); err != nil {
			if errors.Is(err, blob.ErrNotFound) {
				return b.completedAlready(ctx, key, size, err)
			}
			return err
		}
	}
	parts := make([]types.CompletedPart, 0, n)
	var marker *string
	for {
		out, err := b.client.ListParts(ctx, &s3.ListPartsInput{
			Bucket: aws.String(b.name), Key: aws.String(key), UploadId: aws.String(handle), PartNumberMarker: marker,
		})
		if noSuchUpload(err) {
			return b.completedAlready(ctx, key, size, err)
		}
		if err != nil {
			return fmt.Errorf("blob: complete append %s: list parts: %w", key, err)
		}
		for _, pt := range out.Parts {
			if int64(aws.ToInt32(pt.PartNumber)) <= n {
				parts = append(parts, types.CompletedPart{PartNumber: pt.PartNumber, ETag: pt.ETag})
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		marker = out.NextPartNumberMarker
	}
	if int64(len(parts)) != n {
		return fmt.Errorf("blob: complete append %s: %d of the %d parts are there", key, len(parts), n)
	}
	_, err := b.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(b.name), Key: aws.String(key), UploadId: aws.String(handle),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if noSuchUpload(err) {
		return b.completedAlready(ctx, key, size, err)
	}
	if err != nil {
		return fmt.Errorf("blob: complete append %s: %w", key, err)
	}
	return nil
}

// readTail reads the n bytes kept at key after the last whole part.
func (b *Bucket) readTail(ctx context.Context, key string, n int64) ([]byte, error) {
	rd, err := b.NewRangeReader(ctx, key, 0, n)
	if err != nil {
		return nil, fmt.Errorf("blob: complete append %s: %w", key, err)
	}
	defer func() { _ = rd.Close() }()
	data := make([]byte, n)
	if got, err := io.ReadFull(rd, data); err != nil {
		return nil, fmt.Errorf("blob: complete append %s: the last %d bytes kept: got %d: %w", key, n, got, err)
	}
	return data, nil
}

// completedAlready answers a completion that finds the multipart upload
// gone: done if the object has the size (an earlier completion whose
// answer was lost), else the upload was aborted.
func (b *Bucket) completedAlready(ctx context.Context, key string, size int64, cause error) error {
	if a, err := b.Attributes(ctx, key); err == nil && a.Size == size {
		return nil
	}
	return fmt.Errorf("blob: complete append %s: the upload is gone: %w (%v)", key, blob.ErrNotFound, cause)
}

// AbortAppend implements blob.Appender: the multipart upload is aborted and
// the object at key (the tail, or the completed object) deleted.
func (b *Bucket) AbortAppend(ctx context.Context, key, handle string) error {
	if err := b.abortUpload(ctx, key, handle); err != nil {
		return err
	}
	return b.Delete(ctx, key)
}

func (b *Bucket) abortUpload(ctx context.Context, key, handle string) error {
	if handle == "" {
		return nil
	}
	_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(b.name), Key: aws.String(key), UploadId: aws.String(handle),
	})
	if err != nil && !noSuchUpload(err) {
		return fmt.Errorf("blob: abort append %s: %w", key, err)
	}
	return nil
}

// noSuchUpload reports whether err says the multipart upload does not
// exist (completed or aborted).
func noSuchUpload(err error) bool {
	var nsu *types.NoSuchUpload
	var api smithy.APIError
	return err != nil && (errors.As(err, &nsu) || errors.As(err, &api) && api.ErrorCode() == "NoSuchUpload")
}
