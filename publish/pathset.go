package publish

import (
	"crypto/md5"
	"encoding/binary"
)

// pathSetBits is the bits a PathSet spends on each path: with
// pathSetHashes probes, about one path in 15,000 not in the set is taken
// for one of it, and 100,000 paths take 250 kB, well inside a NATS
// message (1 MB by default) and a Kafka record.
const (
	pathSetBits   = 20
	pathSetHashes = 14
	// maxPathSetBytes bounds a set: past 157,286 paths it keeps this
	// size, with fewer probes and more paths taken for one of it (about
	// one in 20 at 500,000 paths), rather than make a heartbeat too big to
	// send (base64 in JSON, 512 kB).
	maxPathSetBytes = 384 << 10
)

// NewPathSet is a Bloom filter of paths: its first byte is the number of
// probes, the rest its bits. A heartbeat carries the paths its bridge
// watches in one when they are too many to name (Scope.WatchSet), so that
// a reader takes its confirmation for those paths, not for every sibling.
func NewPathSet(paths []string) []byte {
	m := min(max(8, len(paths)*pathSetBits), 8*maxPathSetBytes)
	set := make([]byte, 1+(m+7)/8)
	// The best number of probes is the bits a path gets times ln 2.
	set[0] = byte(min(pathSetHashes, max(1, m*7/(10*max(1, len(paths))))))
	for _, p := range paths {
		h1, h2 := pathHashes(p)
		for i := range uint64(set[0]) {
			bit := (h1 + i*h2) % uint64(len(set)*8-8)
			set[1+bit/8] |= 1 << (bit % 8)
		}
	}
	return set
}

// pathSetHas reports whether set (NewPathSet) may hold p: false is sure,
// true is wrong for about one path in 15,000.
func pathSetHas(set []byte, p string) bool {
	if len(set) < 2 {
		return false
	}
	h1, h2 := pathHashes(p)
	for i := range uint64(set[0]) {
		bit := (h1 + i*h2) % uint64(len(set)*8-8)
		if set[1+bit/8]&(1<<(bit%8)) == 0 {
			return false
		}
	}
	return true
}

// pathHashes are the two hashes a PathSet's probes are made of (double
// hashing); the second is odd, so that probes do not repeat early.
func pathHashes(p string) (uint64, uint64) {
	sum := md5.Sum([]byte(p))
	return binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:]) | 1
}
