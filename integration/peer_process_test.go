package integration_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// peer is a foreign client process (a JVM running Curator, a Python running
// Kazoo) driven line by line over stdin; it answers on stdout.
type peer struct {
	t     testing.TB
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	// pending holds lines read but not yet expected, in arrival order.
	pending []string
	exited  chan struct{}
	stderr  *lockedBuffer
	once    sync.Once
	// tap, when set, sees every line first, as it arrives; a line it
	// returns true for is consumed and never reaches expect.
	tap atomic.Pointer[func(string) bool]
}

// setTap routes lines through f from now on (see peer.tap).
func (p *peer) setTap(f func(line string) bool) { p.tap.Store(&f) }

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 64<<10 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startPeer starts cmd and waits for its "ready" line. The process is
// killed when the test ends.
func startPeer(t testing.TB, name string, cmd *exec.Cmd) *peer {
	t.Helper()
	p := &peer{t: t, name: name, cmd: cmd, lines: make(chan string, 256), exited: make(chan struct{}), stderr: &lockedBuffer{}}
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if f := p.tap.Load(); f != nil && (*f)(sc.Text()) {
				continue
			}
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	p.expect("ready", 60*time.Second)
	return p
}

// send writes one command line.
func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("%s: send %q: %v\n%s", p.name, line, err, p.stderr.String())
	}
}

// expect waits for a line that starts with prefix and returns its fields
// after the prefix. An "error" line, or the process ending, fails the test.
func (p *peer) expect(prefix string, d time.Duration) []string {
	p.t.Helper()
	match := func(l string) ([]string, bool) {
		if l == prefix || strings.HasPrefix(l, prefix+" ") {
			return strings.Fields(strings.TrimPrefix(l, prefix)), true
		}
		return nil, false
	}
	for i, l := range p.pending {
		if f, ok := match(l); ok {
			p.pending = append(p.pending[:i], p.pending[i+1:]...)
			return f
		}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("%s exited while waiting for %q\n%s", p.name, prefix, p.stderr.String())
			}
			if strings.HasPrefix(l, "error ") {
				p.t.Fatalf("%s: %s (waiting for %q)\n%s", p.name, l, prefix, p.stderr.String())
			}
			if f, ok := match(l); ok {
				return f
			}
			p.pending = append(p.pending, l)
		case <-timer.C:
			p.t.Fatalf("%s: no %q within %v; unread lines %q\n%s", p.name, prefix, d, p.pending, p.stderr.String())
		}
	}
}

// kill ends the process with SIGKILL, as a crash would: its sessions are
// not closed, ZooKeeper expires them after their timeout.
func (p *peer) kill() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
}

// requirePeer skips (or, with HERALD_REQUIRE_SERVERS=1, fails) a test when
// a foreign client it needs is not installed.
func requirePeer(t testing.TB, what, hint string, missing []string) {
	t.Helper()
	if len(missing) == 0 {
		return
	}
	msg := what + " not available (" + strings.Join(missing, "; ") + "): " + hint
	if os.Getenv(zktest.RequireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (set " + zktest.RequireEnv + "=1 to fail instead of skipping)")
}

const javaDir = "/usr/share/java"

// curatorJars is the class path of the Curator peer: Curator 5.4, the
// ZooKeeper client, Guava and a silent slf4j binding.
var curatorJars = []string{
	"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
	"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-api.jar", "slf4j-nop.jar",
}

// startCurator compiles testdata/CuratorPeer.java and runs it against
// servers with the given session timeout.
func startCurator(t testing.TB, servers string, sessionTimeout time.Duration) *peer {
	t.Helper()
	java, classPath := compileCurator(t, "CuratorPeer")
	cmd := exec.Command(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-Xmx128m",
		"-cp", classPath, "CuratorPeer", servers, strconv.FormatInt(sessionTimeout.Milliseconds(), 10))
	return startPeer(t, "curator peer", cmd)
}

// compileCurator compiles testdata/<class>.java against Debian's Curator
// jars into the test's temporary directory, and returns the java command
// and the class path to run it with. A missing JDK or jar skips the test
// (fails it with HERALD_REQUIRE_SERVERS=1).
func compileCurator(t testing.TB, class string) (java, classPath string) {
	t.Helper()
	var missing []string
	javac, err := exec.LookPath("javac")
	if err != nil {
		missing = append(missing, "javac not on PATH")
	}
	java, err = exec.LookPath("java")
	if err != nil {
		missing = append(missing, "java not on PATH")
	}
	var cp []string
	for _, j := range curatorJars {
		p := filepath.Join(javaDir, j)
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p+" missing")
		}
		cp = append(cp, p)
	}
	requirePeer(t, "Apache Curator", "apt-get install -y default-jdk-headless libcurator-recipes-java libslf4j-java zookeeper", missing)
	dir := t.TempDir()
	jars := strings.Join(cp, string(os.PathListSeparator))
	src, _ := filepath.Abs(filepath.Join("testdata", class+".java"))
	if out, err := exec.Command(javac, "-d", dir, "-cp", jars, src).CombinedOutput(); err != nil {
		t.Fatalf("javac %s.java: %v\n%s", class, err, out)
	}
	return java, dir + string(os.PathListSeparator) + jars
}

// startKazoo runs testdata/kazoo_peer.py with Debian's python3-kazoo.
func startKazoo(t testing.TB, servers string, sessionTimeout time.Duration) *peer {
	t.Helper()
	const python = "/usr/bin/python3"
	var missing []string
	if _, err := os.Stat(python); err != nil {
		missing = append(missing, python+" missing")
	} else if out, err := exec.Command(python, "-c", "import kazoo").CombinedOutput(); err != nil {
		missing = append(missing, "import kazoo: "+strings.TrimSpace(string(out)))
	}
	requirePeer(t, "Kazoo", "apt-get install -y python3-kazoo", missing)
	src, _ := filepath.Abs(filepath.Join("testdata", "kazoo_peer.py"))
	cmd := exec.Command(python, "-u", src, servers, strconv.FormatFloat(sessionTimeout.Seconds(), 'f', -1, 64))
	return startPeer(t, "kazoo peer", cmd)
}
