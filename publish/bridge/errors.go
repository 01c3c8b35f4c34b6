package bridge

import "errors"

// Errors of the bridge, matched with errors.Is.
var (
	// ErrConfig wraps every problem Config.Validate finds.
	ErrConfig = errors.New("bridge: bad configuration")
	// ErrRunning is returned by a second call to Run.
	ErrRunning = errors.New("bridge: already running")
	// ErrSinkUnreachable is returned by Run when a sink could not be
	// connected within Config.ConnectTimeout at start.
	ErrSinkUnreachable = errors.New("bridge: sink unreachable")
	// ErrSinkSettings is returned by Run at start when a sink's settings
	// cannot work with its server, which no retry mends (it wraps the
	// sink's publish.ErrSinkConfig): a Kafka owners topic that does not
	// only compact, JetStream replicas the servers cannot place.
	ErrSinkSettings = errors.New("bridge: a sink's settings cannot work with its server")
	// ErrZooKeeperUnreachable is returned by Run when no ZooKeeper session
	// could be opened within Config.ConnectTimeout at start. It also wraps
	// elect.ErrUnreachable.
	ErrZooKeeperUnreachable = errors.New("bridge: ZooKeeper unreachable")
	// ErrAborted is returned by Run after Abort.
	ErrAborted = errors.New("bridge: aborted without draining")
)
