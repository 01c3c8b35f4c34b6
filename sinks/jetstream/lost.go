package jetstream

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

var _ publish.StoreChecker = (*Sink)(nil)

// StoreGone implements publish.StoreChecker: whether the owners bucket
// the sink opened at its last Connect is missing now (deleted), or is
// another one of the same name (its stream was created at another time:
// deleted and made again by someone else, holding none of the owners).
// The sink then counts the bucket lost, and its next Connect opens or
// makes it again. A look that fails reports false.
func (s *Sink) StoreGone(ctx context.Context) bool {
	s.mu.Lock()
	js, own := s.js, s.owners
	s.mu.Unlock()
	if js == nil || own == nil {
		return false // not open: Connect looks itself
	}
	st, err := js.Stream(ctx, own.stream.CachedInfo().Config.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return false
	case st.CachedInfo().Created.Equal(own.stream.CachedInfo().Created):
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owners != own {
		return false // connected again meanwhile
	}
	s.owners, s.lost = nil, true
	return true
}
