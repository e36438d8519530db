// Package sqs carries claim-check envelopes over Amazon SQS and SNS.
//
// A Publisher (SQS) or TopicPublisher (SNS) stores a message body that
// would not fit the service's message size limit together with its
// attributes (or that reaches a configured threshold) in a claimcheck
// store, and sends only the reference: in the Claimcheck-Ref message
// attribute, and as the body. Smaller bodies are sent unchanged, without
// the attribute. A Consumer receives from a queue, resolves the
// reference before the handler runs, and after the handler succeeds it
// deletes the message and only then releases the claim under its
// consumer name (the queue's name by default), so a claim published for
// N consumers (PublisherConfig.Consumers or ConsumerNames, one per
// queue subscribed to a topic) is finished only after all N deleted
// their copy.
//
// A handler that fails, a consumer that crashes, or a DeleteMessage that
// fails leaves the message to the queue's visibility timeout; the claim
// is not released, so the redelivery resolves again inside the
// namespace's retention window. While a handler runs, the consumer keeps
// extending the message's visibility. A message whose claim is gone goes
// where ConsumerConfig.OnGone says: the handler is told and the message
// is deleted (Terminated), or it is left to the queue's redrive policy
// and its dead-letter queue (DeadLettered); it is never dropped unseen.
//
// Behind an SNS subscription without raw message delivery the body is
// the notification's JSON: the consumer unwraps a notification that
// carries the reference even when it was not told to (SNSEnvelope), so
// that no offloaded message is handed over as its envelope and its
// claim left unreleased (docs/adr/0275).
//
// The consumer also reads the pointers of the Amazon SQS Extended Client
// libraries (an S3 bucket and key in the body, the payload size in the
// ExtendedPayloadSize or SQSLargePayloadSize attribute), so that
// producers can move to claimcheck one at a time; and a publisher can
// write such pointers itself (PublisherConfig.ExtendedClient), so that
// consumers still on the stock library read what it sends. See
// docs/adr/0245 in the repository.
//
// A pointer is written by whoever can send to the queue and read with
// the consumer's own S3 credentials, so the consumer follows only
// pointers into ConsumerConfig.PointerSources (required with S3; any
// other pointer is terminal and never fetched), never deletes an object
// named like a claimcheck store's own, and takes S3's 4xx answers about
// a pointer as terminal (pointersource.go, docs/adr/0272).
//
// The store can be the embedded *engine.Store or a remote
// *client.Client: both implement claimcheck.Claims.
package sqs
