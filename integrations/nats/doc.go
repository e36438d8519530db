// Package nats carries claim-check envelopes over NATS JetStream.
package nats
