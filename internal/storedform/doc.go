// Package storedform is the stored form of a payload: how its bytes are
// laid out in an object, and how a byte range of the payload is read
// back without reading the whole object. The engine decides what is
// stored where and when (put, redeem, upload, dedup); this package knows
// only bytes.
//
// An object holds its payload in one of four forms, chosen by the
// namespace's policy when the payload is put:
//
//   - plain: the payload's bytes as they are;
//   - compressed: a zstd stream (or gzip, or zstd written before frames).
//     zstd is written as independent frames of 64 KiB of payload, each
//     with its own content checksum, followed by a seek table: a
//     skippable frame listing each frame's compressed and payload size
//     (compress/frames.go, ADRs 0112 and 0150). A zstd decoder reads the
//     frames in turn and skips the table;
//   - encrypted: the payload sealed by a streaming AEAD under the
//     namespace's data key (AES-GCM-HKDF, ADR 0066): a header (its
//     length, a salt, a nonce prefix), then segments of SegmentSize
//     bytes of ciphertext, the first shortened by the header, each with a
//     16-byte tag. The segment key is derived from the data key, the salt
//     and the object's key, so an object moved under another key does not
//     decrypt; a segment's nonce holds its number and whether it is the
//     last, so a segment moved, swapped, cut or altered fails;
//   - compressed, then encrypted: the compressed stream is what is
//     sealed.
//
// A Key encrypts and decrypts whole objects (Key.Encrypt, Key.Decrypt).
// Where a Key comes from is the engine's business (engine/crypt.go): one
// data key per encrypted namespace, stored wrapped by the master key and
// named by the object key of every object it seals.
// A range [off, off+n) of the payload is read back by:
//
//   - DecryptRange for an encrypted uncompressed object: it reads the
//     header and just the segments the range touches, computes where
//     each starts, and releases a segment's bytes only after the segment
//     is authenticated (errors wrap ErrSegment);
//   - FramedRange for a zstd object with a seek table, encrypted or not:
//     it reads the table from the end of the stream (through the
//     segments of an encrypted object), then decodes only the frames the
//     range touches, each to its end so that its checksum is checked
//     (errors wrap compress.ErrCorrupt). An object without a usable
//     table answers ErrNoSeekTable, and the caller reads it from the
//     start;
//   - BlockRange for a plain object with a block table (BlockTable,
//     ADR 0257: the CRC32C of every BlockSize bytes of payload, recorded
//     in the metadata store when the object is written): it reads the
//     whole blocks the range touches and releases a block's bytes only
//     after its checksum matched (errors wrap ErrBlock);
//   - for a plain object written before block tables, the object store's
//     own range read of those bytes.
//
// Objects are read through Objects, the one method of blob.Store this
// package needs. Which form an object has, and what it must hold, the
// caller knows from the object's blob row (compression, stored size,
// payload size) and gives as an Object and a Key.
package storedform
