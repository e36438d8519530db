// Package kafka carries claim-check envelopes over Kafka records, with
// franz-go (kgo).
//
// A Publisher stores record values at or above its namespace's threshold
// in a claimcheck store and produces only the reference, in the
// Claimcheck-Ref record header, with an empty value; smaller values are
// produced unchanged, without the header. A Consumer is a consumer-group
// member: it resolves references before the handler runs, commits the
// offsets of the records it handled, and then releases their claims under
// the group's name, so a claim produced for N groups
// (PublisherConfig.ConsumerNames) is finished only after all N have
// committed.
//
// Records are re-read after a crash or a rebalance from the last
// committed offset. Inside the namespace's retention window they resolve
// again: a claim is released only after its record's offset is committed.
// After the window the claim is gone: the handler is told (Message.Err
// matches claimcheck.ErrGone and carries the reason), the record goes to
// the dead-letter topic if one is configured, and its offset is committed
// so that the partition moves on. See docs/adr/0040 in the repository for
// what happens when a produce fails.
//
// Records in bakdata's large-message format are read with
// ConsumerConfig.LargeMessage and written, for stock bakdata consumers,
// with PublisherConfig.LargeMessage (largemessage.go).
//
// The store can be the embedded *engine.Store or a remote
// *client.Client: both implement claimcheck.Claims.
package kafka
