package zkserver

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrJavaNotFound means no java executable was found in JAVA_HOME or PATH.
	ErrJavaNotFound = errors.New("zkserver: Java not found: install a JRE (apt-get install -y default-jre-headless) or set JAVA_HOME")

	// ErrZooKeeperNotFound means no ZooKeeper jars were found in
	// ZOOKEEPER_CLASSPATH, ZOOKEEPER_HOME or /usr/share/java.
	ErrZooKeeperNotFound = errors.New("zkserver: ZooKeeper not found: install Debian's zookeeper package (apt-get install -y zookeeper) or set ZOOKEEPER_HOME")

	// ErrInvalidConfig wraps every Config.Validate failure.
	ErrInvalidConfig = errors.New("zkserver: invalid config")

	// ErrNotRunning is returned by calls that need a running server process.
	ErrNotRunning = errors.New("zkserver: server is not running")

	// ErrAlreadyRunning is returned by Server.Start when the process is alive.
	ErrAlreadyRunning = errors.New("zkserver: server is already running")

	// ErrNotServing means the server answered but is not serving requests
	// (it has no quorum, or it is still starting or electing).
	ErrNotServing = errors.New("zkserver: server is not serving requests")

	// ErrExited means a server process exited while it was expected to run.
	ErrExited = errors.New("zkserver: server process exited")

	// ErrClosed is returned by calls on a closed Cluster.
	ErrClosed = errors.New("zkserver: cluster is closed")
)

// IsNotInstalled reports whether err means Java or ZooKeeper is missing on
// this machine, as opposed to a server that failed to start.
func IsNotInstalled(err error) bool {
	return errors.Is(err, ErrJavaNotFound) || errors.Is(err, ErrZooKeeperNotFound)
}
