package zkserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// fourLetterTimeout bounds one command when ctx has no earlier deadline, so
// a paused server does not hang a caller that passed context.Background.
const fourLetterTimeout = 5 * time.Second

const notServing = "This ZooKeeper instance is not currently serving requests"

// FourLetter sends a four-letter command (ruok, mntr, wchs, srvr, stat, ...)
// to addr and returns the whole answer. A server that answers that it is
// not serving requests yields ErrNotServing.
func FourLetter(ctx context.Context, addr, cmd string) (string, error) {
	if len(cmd) != 4 {
		return "", fmt.Errorf("zkserver: four-letter command %q must have 4 letters, e.g. mntr", cmd)
	}
	ctx, cancel := context.WithTimeout(ctx, fourLetterTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	s := string(out)
	if strings.HasPrefix(s, notServing) {
		return "", fmt.Errorf("%w (%s on %s)", ErrNotServing, cmd, addr)
	}
	return s, nil
}

// parseMntr turns mntr's "key<TAB>value" lines into a map.
func parseMntr(s string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			m[k] = v
		}
	}
	return m
}

// parseWchs reads the total from wchs's answer:
//
//	2 connections watching 3 paths
//	Total watches:4
func parseWchs(s string) (int, error) {
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Total watches:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("zkserver: wchs total %q is not a number", v)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("zkserver: wchs answer has no \"Total watches:\" line: %q", s)
}

// Mntr runs mntr on the server and returns its key/value pairs
// (zk_server_state, zk_watch_count, zk_packets_received, ...).
func (s *Server) Mntr(ctx context.Context) (map[string]string, error) {
	out, err := s.FourLetter(ctx, "mntr")
	if err != nil {
		return nil, err
	}
	m := parseMntr(out)
	if _, ok := m["zk_server_state"]; !ok {
		return nil, fmt.Errorf("zkserver: mntr on %s: no zk_server_state in %q", s.Addr(), out)
	}
	return m, nil
}

// State returns zk_server_state from mntr: standalone, leader, follower or
// observer.
func (s *Server) State(ctx context.Context) (string, error) {
	m, err := s.Mntr(ctx)
	if err != nil {
		return "", err
	}
	return m["zk_server_state"], nil
}

// WatchCount returns the server's total number of watches, from wchs.
func (s *Server) WatchCount(ctx context.Context) (int, error) {
	out, err := s.FourLetter(ctx, "wchs")
	if err != nil {
		return 0, err
	}
	return parseWchs(out)
}

// PacketsReceived returns zk_packets_received from mntr: how many requests
// the server has read from clients since it started.
func (s *Server) PacketsReceived(ctx context.Context) (int64, error) {
	return s.mntrInt(ctx, "zk_packets_received")
}

func (s *Server) mntrInt(ctx context.Context, key string) (int64, error) {
	m, err := s.Mntr(ctx)
	if err != nil {
		return 0, err
	}
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("zkserver: mntr on %s has no %s", s.Addr(), key)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("zkserver: mntr %s=%q on %s is not an integer", key, v, s.Addr())
	}
	return n, nil
}
