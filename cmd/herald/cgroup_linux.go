//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A command's cgroup. Where cgroup v2 is writable (herald runs as root,
// or in a systemd unit with Delegate=yes), each command run and lock
// start is born in a cgroup of its own (clone3 with CLONE_INTO_CGROUP),
// below herald's. Every process the command starts is born in it too,
// whatever it does with sessions, process groups or its parent, and the
// kernel answers the two questions a handoff needs at once, not from a
// walk of /proc that a process changing its pid every millisecond can
// slip between: is anything of the command left (cgroup.events says
// "populated 0" once the last process exited), and kill all of it
// (cgroup.kill, Linux 5.14). Without a writable cgroup, herald tracks the
// command by its process group, as its subreaper, and by HERALD_RUN_ID
// (see strays_linux.go).

// commandCgroup makes the cgroup of the command with run id id below
// herald's own, and opens it for clone3; it first sweeps stale ones (see
// sweepCgroups). It fails, and makes none, where cgroup v2 is not mounted
// or not writable, or the kernel has no cgroup.kill.
func commandCgroup(id string) (path string, dir *os.File, err error) {
	if cgroupsOff() {
		return "", nil, fmt.Errorf("%s=%s", cgroupVar, os.Getenv(cgroupVar))
	}
	own, err := ownCgroup()
	if err != nil {
		return "", nil, err
	}
	// Moving a process in takes write access to the common ancestor's
	// cgroup.procs too: ours.
	if err := unix.Access(filepath.Join(own, "cgroup.procs"), unix.W_OK); err != nil {
		return "", nil, fmt.Errorf("herald's cgroup %s is not writable (run herald in a systemd unit with Delegate=yes): %w", own, err)
	}
	sweepCgroups(own)
	path = filepath.Join(own, cgroupPrefix+id)
	if err := os.Mkdir(path, 0o755); err != nil {
		return "", nil, fmt.Errorf("cannot make a cgroup for the command: %w", err)
	}
	if _, err := os.Stat(filepath.Join(path, "cgroup.kill")); err != nil {
		_ = os.Remove(path)
		return "", nil, errors.New("the kernel has no cgroup.kill (Linux 5.14 or later has)")
	}
	dir, err = os.Open(path)
	if err != nil {
		_ = os.Remove(path)
		return "", nil, err
	}
	return path, dir, nil
}

// cgroupPrefix begins the name of each command's cgroup.
const cgroupPrefix = "herald-cmd-"

// staleCgroup is how old an empty command cgroup must be for another
// herald to remove it: one made by a runner killed with its watchdog
// (kill -9 of both) is left to the next. A young one may be a runner's
// that has not started its command in it yet.
const staleCgroup = time.Minute

// sweepCgroups removes the command cgroups in own that are empty and
// older than staleCgroup.
func sweepCgroups(own string) {
	entries, err := os.ReadDir(own)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), cgroupPrefix) {
			continue
		}
		path := filepath.Join(own, e.Name())
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < staleCgroup {
			continue
		}
		if populated, err := cgroupPopulated(path); err == nil && !populated {
			removeCgroup(path)
		}
	}
}

// cgroupsOff reports whether herald's environment says to make no cgroups
// (a value that says neither was refused before the campaign; should one
// get here, no cgroup is made, and the log's "none" says why).
func cgroupsOff() bool {
	off, err := cgroupSetting()
	return off || err != nil
}

// ownCgroup is the directory of this process's cgroup in the cgroup v2
// hierarchy.
func ownCgroup() (string, error) {
	mount, root, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			// In a cgroup namespace, a cgroup outside it shows as /..
			if rel == "/.." || strings.HasPrefix(rel, "/../") {
				return "", fmt.Errorf("herald's cgroup %s is outside its cgroup namespace", rel)
			}
			if root != "/" {
				if rel != root && !strings.HasPrefix(rel, root+"/") {
					return "", fmt.Errorf("herald's cgroup %s is outside the cgroup2 mount's root %s", rel, root)
				}
				rel = strings.TrimPrefix(rel, root)
			}
			return filepath.Join(mount, rel), nil
		}
	}
	return "", errors.New("no cgroup v2 line in /proc/self/cgroup")
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted, and the
// cgroup its mount shows as its root.
func cgroup2Mount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(s.Text())
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && i >= 5 {
				return unescapeMount(fields[4]), unescapeMount(fields[3]), nil
			}
		}
	}
	return "", "", errors.New("cgroup v2 is not mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupPopulated reports whether a process of the cgroup at path, or of
// a cgroup below it, is alive (a zombie is not). A cgroup removed is not
// populated: only an empty one can be removed.
func cgroupPopulated(path string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(path, "cgroup.events"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, removed(path)
	}
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return v != "0", nil
		}
	}
	return false, fmt.Errorf("no populated line in %s/cgroup.events", path)
}

// cgroupMembers is the pids in the cgroup at path and below it.
func cgroupMembers(path string) []int {
	var out []int
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				out = append(out, pid)
			}
		}
		return nil
	})
	return out
}

// cgroupKill kills every process in the cgroup at path and below it, at
// once: one that forks meanwhile has its child killed too.
func cgroupKill(path string) error {
	if err := validCgroup(path); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(path, "cgroup.kill"), os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return removed(path)
	}
	if err != nil {
		return err
	}
	_, err = f.Write([]byte("1"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// validCgroup says what is wrong with path as a command's cgroup: its name
// must be one herald gives, and it must be on a cgroup2 file system (or
// gone: see removed). The releaser takes it as an argument, and a
// mistaken one must not have directories removed or files written.
func validCgroup(path string) error {
	if !filepath.IsAbs(path) || !strings.HasPrefix(filepath.Base(path), cgroupPrefix) {
		return fmt.Errorf("%q is not a command's cgroup (an absolute path ending in %s...)", path, cgroupPrefix)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err == nil && st.Type != unix.CGROUP2_SUPER_MAGIC {
		return fmt.Errorf("%q is not on a cgroup2 file system", path)
	}
	return nil
}

// cgroupStartErr says why a start in a cgroup failed, where the error
// names herald's own binary.
func cgroupStartErr(err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return errors.New("the cgroup was removed before the command started in it")
	case errors.Is(err, syscall.EOPNOTSUPP):
		return errors.New("the cgroup cannot hold processes; is herald's own threaded?")
	}
	return err
}

// removed tells, of the cgroup at path that is not there, whether it was
// removed (nil), and so empty, or is out of sight: the cgroup2 mount gone
// from herald's view, or something mounted over the cgroup (a command
// that is root did it), where it may still hold the command. A cgroup v2
// cannot be renamed.
func removed(path string) error {
	// The path itself there but no cgroup: something is mounted over it
	// (found by an adversarial test), and the cgroup may be under it.
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cgroup %s is out of sight: something else is at its path", path)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "cgroup.procs")); err != nil {
		return fmt.Errorf("cgroup %s is out of sight: %w", path, err)
	}
	return nil
}

// removeCgroup removes the cgroup at path and those below it, once
// empty; it leaves one a process is still in.
func removeCgroup(path string) {
	if path == "" || validCgroup(path) != nil {
		return
	}
	var dirs []string
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}

// cgroupLeft is what is left of a command in its cgroup at path: its live
// processes, as /proc shows them. known is false when the cgroup cannot
// be read, and ok false when it is populated but no process of it could
// be read (each exited as it was read): the caller looks again.
func cgroupLeft(path string) (left []procInfo, ok, known bool) {
	populated, err := cgroupPopulated(path)
	if err != nil {
		return nil, false, false
	}
	if !populated {
		return nil, true, true
	}
	for _, pid := range cgroupMembers(path) {
		if p, ok := readProc(pid); ok && !p.zombie {
			left = append(left, p)
		}
	}
	return left, len(left) > 0, true
}

// withMembers is list and the live processes of the cgroup at path ("" for
// none) outside process group pgid that list does not hold.
func withMembers(list []procInfo, path string, pgid int) []procInfo {
	if path == "" {
		return list
	}
	for _, pid := range cgroupMembers(path) {
		p, ok := readProc(pid)
		if !ok || p.zombie || p.pgid == pgid || p.in(list) {
			continue
		}
		list = append(list, p)
	}
	return list
}
