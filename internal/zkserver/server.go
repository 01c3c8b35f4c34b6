package zkserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/zkherald/herald/internal/spawn"
)

// Server is one ZooKeeper process of a Cluster. Its id, ports and data
// directory stay the same across Stop/Kill and Start.
type Server struct {
	id      int
	dir     string
	ports   ports
	rt      Runtime
	cfg     Config
	logSink io.Writer // nil, or the cluster's shared LogWriter
	cluster *Cluster

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	waitErr error
	paused  bool
}

// ID is the server's myid, from 1 to Nodes.
func (s *Server) ID() int { return s.id }

// Addr is the client address, "127.0.0.1:port".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.ports.client) }

// SecureAddr is the TLS client address, "127.0.0.1:port", when the
// cluster was started with Config.TLSKeyStore; "" otherwise.
func (s *Server) SecureAddr() string {
	if s.cfg.TLSKeyStore == "" {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(s.ports.secure)
}

// Dir is the server's directory: zoo.cfg, data/ and zookeeper.log.
func (s *Server) Dir() string { return s.dir }

// LogPath is the file that receives the server's output.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "zookeeper.log") }

func (s *Server) cfgPath() string { return filepath.Join(s.dir, "zoo.cfg") }

// Running reports whether the server process is alive (paused or not).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runningLocked()
}

func (s *Server) runningLocked() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Paused reports whether Pause stopped the process and Resume has not yet
// continued it.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused && s.runningLocked()
}

// Start restarts a stopped or killed server with the same id, ports and
// data, and waits until it serves clients again (for an ensemble member:
// until it has joined a quorum). It is bounded by ctx and Config.StartTimeout.
func (s *Server) Start(ctx context.Context) error {
	if err := s.launch(); err != nil {
		return err
	}
	ctx, cancel := withStartTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	return s.waitServing(ctx)
}

// launch starts the process without waiting for it to serve.
func (s *Server) launch() error {
	if s.cluster.isClosed() {
		return ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runningLocked() {
		return fmt.Errorf("%w: zk%d on %s", ErrAlreadyRunning, s.id, s.Addr())
	}
	logFile, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zkserver: open log: %w", err)
	}
	fmt.Fprintf(logFile, "=== zkserver: starting zk%d at %s\n", s.id, time.Now().Format(time.RFC3339Nano))
	args := append(jvmFlags(s.cfg), "-cp", s.rt.ClassPath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", s.cfgPath())
	cmd := exec.Command(s.rt.Java, args...)
	cmd.Dir = s.dir
	cmd.Stdout = io.Writer(logFile)
	if s.logSink != nil {
		cmd.Stdout = io.MultiWriter(logFile, &prefixWriter{w: s.logSink, prefix: fmt.Sprintf("zk%d| ", s.id)})
	}
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = sysProcAttr()
	if err := spawn.Start(cmd); err != nil {
		logFile.Close()
		return fmt.Errorf("zkserver: start zk%d (%s): %w", s.id, s.rt.Java, err)
	}
	done := make(chan struct{})
	s.cmd, s.done, s.waitErr, s.paused = cmd, done, nil, false
	go func() {
		err := cmd.Wait()
		logFile.Close()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(done)
	}()
	return nil
}

func jvmFlags(c Config) []string {
	f := []string{
		"-Xmx" + c.JVMHeap,
		// Short-lived test servers: a simple GC and the quick C1 compiler
		// start fastest and use least CPU on a shared machine.
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-XX:+ExitOnOutOfMemoryError", "-Xshare:auto",
		"-Djava.net.preferIPv4Stack=true",
		// Speed over durability: no fsync per transaction, small log files.
		"-Dzookeeper.forceSync=no", "-Dzookeeper.preAllocSize=1024",
		// Retry a busy election port on restart instead of giving up.
		"-Dzookeeper.electionPortBindRetry=20",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
	}
	return append(f, c.JVMFlags...)
}

// process returns the current command and its exit channel.
func (s *Server) process() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd, s.done
}

// Stop sends SIGTERM and waits for the process to exit; when ctx ends
// first it kills the process. Stopping a stopped server does nothing.
func (s *Server) Stop(ctx context.Context) error {
	cmd, done := s.process()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := terminate(cmd); err != nil {
		return fmt.Errorf("zkserver: stop zk%d: %w", s.id, err)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		if err := s.Kill(); err != nil {
			return err
		}
		return fmt.Errorf("zkserver: zk%d ignored SIGTERM, killed it: %w", s.id, ctx.Err())
	}
}

// Kill sends SIGKILL (kill -9) and waits for the process to exit, like a
// machine that crashes. Killing a stopped server does nothing.
func (s *Server) Kill() error {
	cmd, done := s.process()
	if cmd == nil {
		return nil
	}
	if err := kill(cmd); err != nil {
		return fmt.Errorf("zkserver: kill zk%d: %w", s.id, err)
	}
	<-done
	return nil
}

// Pause stops the process with SIGSTOP: it keeps its sockets but answers
// nothing, like a long GC pause or a hung machine.
func (s *Server) Pause() error { return s.signal(pause, true) }

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() error { return s.signal(resume, false) }

func (s *Server) signal(send func(*exec.Cmd) error, paused bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return fmt.Errorf("%w: zk%d on %s", ErrNotRunning, s.id, s.Addr())
	}
	if err := send(s.cmd); err != nil {
		return fmt.Errorf("zkserver: signal zk%d: %w", s.id, err)
	}
	if paused && !waitStopped(s.cmd.Process.Pid, 5*time.Second) {
		return fmt.Errorf("zkserver: zk%d did not stop within 5s of SIGSTOP", s.id)
	}
	s.paused = paused
	return nil
}

// FourLetter sends a four-letter command to this server; see FourLetter.
func (s *Server) FourLetter(ctx context.Context, cmd string) (string, error) {
	return FourLetter(ctx, s.Addr(), cmd)
}
