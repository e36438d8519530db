// Package integrity is what claimcheck knows about damage to stored
// objects (ADR 0095): the checks of an object against its blob's row, and
// the mark that records a failed check.
//
// A blob is damaged when its object is missing (meta.DamageMissing), has
// another size than the stored size (meta.DamageSize), or does not read
// back (decrypted and decompressed) to the blob's size and digest
// (meta.DamageChecksum). The mark is a compare-and-swap on the blob's
// object key (meta.IntegrityStore), so a finding about an object the blob
// no longer owns changes nothing. A damaged blob is never shared by
// dedup, and its redeems answer checksum_mismatch; a put of the same
// bytes repairs it, and the scrub clears it when its object reads back
// good again.
//
// Who marks damage:
//
//   - the engine, on the request path: a redeem that finds its object
//     altered, short or missing, and a digest-first put whose candidate
//     fails CheckSize (engine/integrity.go, engine/dedup.go);
//   - the sweeper: the backstop and `claimcheck fsck` when a listing
//     shows an object missing or resized, and the scrub, which reads
//     objects whole with Verify (sweep/scrub.go).
//
// Both import this package and neither calls the other for it: the
// scrub is given the metadata store, the object store and the master
// keys (internal/masterkey), which is all Verify needs.
package integrity
