package main

import (
	"context"
	"fmt"

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
