// Package natsserver runs a real nats-server with JetStream inside the
// current process.
//
// Two callers use it. Tests call Start, which listens on a port the kernel
// picks, keeps JetStream's files in a temporary directory, and can stop and
// restart the server on the same port and store (Restart) so that tests can
// check what survives a NATS outage. Options add user/password, token or
// NKey authentication and TLS with a certificate authority generated on the
// spot (testtls.Generate). StartCluster runs several such servers as one
// NATS cluster with clustered JetStream (each node its own ports and
// store), so that tests can stop one node and restart it while replicated
// streams keep working.
//
// The herald binary calls Run when no external NATS is configured
// (`herald bridge` and `herald demo` without --nats): it starts the same
// embedded server and stops it when the context ends.
package natsserver
