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

// SessionPackets returns, for every session connected to the server, the
// packets the server has received on that session's current connection
// (cons's recved, which counts the connect request too). It attributes a
// server's load to the sessions that caused it, where mntr only has totals.
func (s *Server) SessionPackets(ctx context.Context) (map[int64]int64, error) {
	out, err := s.FourLetter(ctx, "cons")
	if err != nil {
		return nil, err
	}
	return parseCons(out)
}

// parseCons reads sid and recved from cons's lines:
//
//	/127.0.0.1:38048[1](queued=0,recved=2,sent=2,sid=0x100008f5b1e0004,lop=EXIS,...)
//
// Connections without a session yet (and cons's own) carry no sid.
func parseCons(s string) (map[int64]int64, error) {
	m := make(map[int64]int64)
	for _, line := range strings.Split(s, "\n") {
		open, close := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
		if open < 0 || close < open {
			continue
		}
		var sid, recved int64
		var hasSID, hasRecved bool
		for _, kv := range strings.Split(line[open+1:close], ",") {
			k, v, _ := strings.Cut(kv, "=")
			var err error
			switch k {
			case "sid":
				hasSID = true
				var u uint64
				u, err = strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
				sid = int64(u)
			case "recved":
				hasRecved = true
				recved, err = strconv.ParseInt(v, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("zkserver: cons line %q: %s=%q is not a number", line, k, v)
			}
		}
		if hasSID && hasRecved {
			m[sid] = recved
		}
	}
	return m, nil
}
