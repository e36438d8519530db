// Package nats carries claim-check envelopes over NATS JetStream.
//
// A Publisher stores message bodies at or above its namespace's threshold
// in a claimcheck store and publishes only the reference, in the
// Claimcheck-Ref header, with an empty body; smaller bodies are published
// unchanged, without the header. A Consumer wraps a JetStream consumer: it
// resolves the reference before the handler runs, and after the handler
// succeeds it acknowledges the message and then releases the claim under
// the consumer's durable name, so a claim published for N durable
// consumers (PublisherConfig.ConsumerNames) is finished only after all N
// have acked.
//
// Redelivery is safe inside the namespace's retention window: a nak, a
// crash before the ack or an ack timeout brings the message back, and it
// resolves again. After the window the claim is gone: the handler is told
// (Message.Err matches claimcheck.ErrGone and carries the reason) and the
// message is terminated, or dead-lettered to a configured subject, instead
// of being redelivered until max_deliver. See docs/adr/0040 in the
// repository for what happens when a publish fails.
//
// The store can be the embedded *engine.Store or a remote
// *client.Client: both implement claimcheck.Claims.
package nats
