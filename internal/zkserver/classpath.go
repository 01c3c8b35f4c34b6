package zkserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// debianJavaDir is where Debian's zookeeper package installs its jars.
const debianJavaDir = "/usr/share/java"

// Runtime is the java executable and class path used to run ZooKeeper.
type Runtime struct {
	Java      string
	ClassPath string
}

// FindRuntime locates java (JAVA_HOME, then PATH) and the ZooKeeper class
// path (ZOOKEEPER_CLASSPATH, then ZOOKEEPER_HOME, then Debian's jars). It
// returns ErrJavaNotFound or ErrZooKeeperNotFound when either is missing.
func FindRuntime() (Runtime, error) {
	return findRuntime(os.Getenv, debianJavaDir)
}

func findRuntime(getenv func(string) string, javaDir string) (Runtime, error) {
	java, err := findJava(getenv)
	if err != nil {
		return Runtime{}, err
	}
	cp, err := findClassPath(getenv, javaDir)
	if err != nil {
		return Runtime{}, err
	}
	return Runtime{Java: java, ClassPath: cp}, nil
}

func findJava(getenv func(string) string) (string, error) {
	if home := getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("%w (JAVA_HOME=%s has no bin/java)", ErrJavaNotFound, home)
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", ErrJavaNotFound
	}
	return p, nil
}

func findClassPath(getenv func(string) string, javaDir string) (string, error) {
	if cp := getenv("ZOOKEEPER_CLASSPATH"); cp != "" {
		return cp, nil
	}
	if home := getenv("ZOOKEEPER_HOME"); home != "" {
		return homeClassPath(home)
	}
	return debianClassPath(javaDir)
}

// homeClassPath covers a release tarball (lib/*.jar plus conf for its
// logging config) and a source build (jars at the top).
func homeClassPath(home string) (string, error) {
	var jars []string
	for _, pattern := range []string{"lib/*.jar", "*.jar"} {
		m, _ := filepath.Glob(filepath.Join(home, pattern))
		jars = append(jars, m...)
	}
	if !containsServer(jars) {
		return "", fmt.Errorf("%w (ZOOKEEPER_HOME=%s has no zookeeper-*.jar in lib/ or at the top)", ErrZooKeeperNotFound, home)
	}
	if conf := filepath.Join(home, "conf"); isDir(conf) {
		jars = append([]string{conf}, jars...)
	}
	return strings.Join(jars, string(os.PathListSeparator)), nil
}

// debianClassPath uses Debian's zookeeper.jar, whose manifest Class-Path
// already names its dependencies (netty, jute, slf4j-api, metrics,
// snappy, commons-cli, jline, ...). Only an slf4j binding is added, so the
// server logs to its output, which Start sends to a file.
func debianClassPath(dir string) (string, error) {
	zk := filepath.Join(dir, "zookeeper.jar")
	if !isFile(zk) {
		return "", ErrZooKeeperNotFound
	}
	cp := []string{zk}
	// The manifest leaves out two netty jars the TLS client port needs
	// (Config.TLSKeyStore); both come with the same libnetty-java package.
	for _, jar := range []string{"netty-codec.jar", "netty-resolver.jar"} {
		if p := filepath.Join(dir, jar); isFile(p) {
			cp = append(cp, p)
		}
	}
	for _, binding := range []string{"slf4j-simple.jar", "slf4j-nop.jar"} {
		if p := filepath.Join(dir, binding); isFile(p) {
			cp = append(cp, p)
			break
		}
	}
	return strings.Join(cp, string(os.PathListSeparator)), nil
}

func containsServer(jars []string) bool {
	for _, j := range jars {
		b := filepath.Base(j)
		if strings.HasPrefix(b, "zookeeper-") && !strings.Contains(b, "jute") && !strings.Contains(b, "prometheus") {
			return true
		}
		if b == "zookeeper.jar" {
			return true
		}
	}
	return false
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
