package natsserver

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
)

// NewNKeyUser creates a user NKey, writes its seed to a file in dir (0600)
// and returns the public key (for WithNKeyUsers) and the seed file's path
// (for a client).
func NewNKeyUser(dir string) (publicKey, seedFile string, err error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", "", fmt.Errorf("natsserver: create user nkey: %w", err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return "", "", fmt.Errorf("natsserver: nkey public key: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return "", "", fmt.Errorf("natsserver: nkey seed: %w", err)
	}
	seedFile = filepath.Join(dir, "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		return "", "", fmt.Errorf("natsserver: write %s: %w", seedFile, err)
	}
	return pub, seedFile, nil
}
