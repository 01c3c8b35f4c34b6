package publish

import (
	"encoding/json"
	"math"

	"github.com/bits-and-blooms/bloom/v3"
)

const (
	// pathSetFalse is how often a PathSet takes a path not in it for one
	// of it: 100,000 paths take some 250 kB, well inside a NATS message
	// (1 MB by default) and a Kafka record.
	pathSetFalse = 1.0 / 15000
	// maxPathSetBytes bounds a set: past some 157,000 paths it keeps this
	// size, with fewer probes and more paths taken for one of it (about
	// one in 20 at 500,000 paths), rather than make a heartbeat too big to
	// send (base64 in JSON, 512 kB).
	maxPathSetBytes = 384 << 10
)

// PathSet is a Bloom filter of paths: a heartbeat carries the paths its
// bridge watches in one when they are too many to name (Scope.WatchSet),
// so that a reader takes its confirmation for those paths, not for every
// sibling. In JSON it is the filter's binary form, base64.
type PathSet struct {
	f *bloom.BloomFilter // nil when the record's set could not be read
}

// NewPathSet makes the set of paths.
func NewPathSet(paths []string) *PathSet {
	n := uint(max(1, len(paths)))
	m, k := bloom.EstimateParameters(n, pathSetFalse)
	if m > 8*maxPathSetBytes {
		// The best number of probes is the bits a path gets times ln 2.
		m = 8 * maxPathSetBytes
		k = uint(max(1, math.Round(float64(m)/float64(n)*math.Ln2)))
	}
	f := bloom.New(m, k)
	for _, p := range paths {
		f.AddString(p)
	}
	return &PathSet{f: f}
}

// Has reports whether the set may hold p: false is sure, true is wrong
// for about one path in 15,000. A set that could not be read holds
// nothing: what it stood for confirms nothing.
func (s *PathSet) Has(p string) bool {
	return s != nil && s.f != nil && s.f.TestString(p)
}

func (s *PathSet) MarshalJSON() ([]byte, error) {
	if s == nil || s.f == nil {
		return []byte("null"), nil
	}
	b, err := s.f.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

// UnmarshalJSON reads a set; one that is no set (written by hand, cut
// short) is kept as a set that holds nothing, rather than failing the
// whole heartbeat.
func (s *PathSet) UnmarshalJSON(data []byte) error {
	var b []byte
	f := &bloom.BloomFilter{}
	if json.Unmarshal(data, &b) != nil || f.UnmarshalBinary(b) != nil {
		s.f = nil
		return nil
	}
	s.f = f
	return nil
}
