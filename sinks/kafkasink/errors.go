package kafkasink

import "errors"

var (
	// ErrBadConfig is wrapped by every error Validate returns.
	ErrBadConfig = errors.New("kafkasink: bad configuration")
	// ErrClosed is returned by Write after Close, or before Connect.
	ErrClosed = errors.New("kafkasink: sink is not connected")
	// ErrUnreachable: no broker answered.
	ErrUnreachable = errors.New("kafkasink: brokers unreachable")
	// ErrAuth: the brokers refused the SASL credentials.
	ErrAuth = errors.New("kafkasink: SASL authentication failed")
	// ErrTLS: the TLS handshake with the brokers failed.
	ErrTLS = errors.New("kafkasink: TLS handshake failed")
	// ErrTopic: a topic could not be created or has the wrong settings.
	ErrTopic = errors.New("kafkasink: topic problem")
)
