// Package kafka carries claim-check envelopes over Kafka records.
package kafka
