// Package kafkatest starts an in-process Kafka-protocol cluster for herald's
// tests: kfake (github.com/twmb/franz-go/pkg/kfake) on ports the kernel
// chooses, speaking the real wire protocol to the real kafka-go client.
//
// A Cluster keeps its data in a directory under t.TempDir(), so Stop and
// Restart are a true outage: Stop closes every listener and every client
// connection (clients see "connection refused"), and Restart brings the
// same brokers back on the same ports with every record that was
// acknowledged before the stop.
//
// SASL is opt-in: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 users are seeded
// with the SASL option; once any user exists, unauthenticated clients are
// refused.
package kafkatest
