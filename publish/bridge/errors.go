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
	// ErrZooKeeperUnreachable is returned by Run when no ZooKeeper session
	// could be opened within Config.ConnectTimeout at start. It also wraps
	// elect.ErrUnreachable.
	ErrZooKeeperUnreachable = errors.New("bridge: ZooKeeper unreachable")
	// ErrAborted is returned by Run after Abort.
	ErrAborted = errors.New("bridge: aborted without draining")
)
