package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/zkherald/herald/elect"
)

// openSession connects to ZooKeeper with the global flags. strict asks the
// servers for exactly --session-timeout (run and lock time their loss
// decisions by it); read-only commands accept whatever the servers grant.
func (a *app) openSession(ctx context.Context, strict bool) (*elect.Session, error) {
	servers, err := a.servers()
	if err != nil {
		return nil, err
	}
	opts := []elect.SessionOption{
		elect.WithConnectTimeout(a.connectTimeout),
		elect.WithLogger(a.log),
	}
	if a.sessionTimeout > 0 {
		opts = append(opts, elect.WithSessionTimeout(a.sessionTimeout))
	}
	if !strict {
		opts = append(opts, elect.AcceptNegotiatedTimeout())
	}
	auth, err := a.zkAuth()
	if err != nil {
		return nil, err
	}
	if auth != "" {
		opts = append(opts, elect.WithDigestAuth(auth))
	}
	s, err := elect.NewSession(ctx, servers, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to ZooKeeper: %w", err)
	}
	return s, nil
}

// groupArg validates a group path given on the command line; a bad path is
// a usage error.
func groupArg(flag, p string) error {
	if err := elect.ValidatePath(p); err != nil {
		return usageErr("%s: %v", flag, err)
	}
	return nil
}

// zkAuth is the digest credentials from --zk-auth-file, else from
// HERALD_ZK_AUTH (user:password), else none.
func (a *app) zkAuth() (string, error) {
	v := os.Getenv("HERALD_ZK_AUTH")
	if a.zkAuthFile != "" {
		b, err := os.ReadFile(a.zkAuthFile)
		if err != nil {
			return "", usageErr("--zk-auth-file: %v", err)
		}
		if v = strings.TrimRight(string(b), "\r\n"); v == "" {
			return "", usageErr("--zk-auth-file %s is empty: it holds user:password", a.zkAuthFile)
		}
	}
	if v == "" {
		return "", nil
	}
	if user, pw, ok := strings.Cut(v, ":"); !ok || user == "" || pw == "" {
		return "", usageErr("--zk-auth-file / HERALD_ZK_AUTH: want user:password, both non-empty")
	}
	return v, nil
}
