package natsserver

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// Operator is a decentralized-auth (JWT) setup as nsc makes one: an
// operator, the system account and one account it signs (with JetStream),
// and users that account signs. Pass it to WithOperator; give clients UserCreds files.
type Operator struct {
	operator *jwt.OperatorClaims
	accounts map[string]string // public key -> JWT: the system account and ours
	account  nkeys.KeyPair
}

// NewOperator creates the operator and its account.
func NewOperator() (*Operator, error) {
	okp, err := nkeys.CreateOperator()
	if err != nil {
		return nil, fmt.Errorf("natsserver: create operator key: %w", err)
	}
	op := &Operator{accounts: map[string]string{}}
	// JetStream needs a system account for its internal subscriptions.
	sys, _, err := op.newAccount(okp, "SYS", false)
	if err != nil {
		return nil, err
	}
	_, op.account, err = op.newAccount(okp, "herald", true)
	if err != nil {
		return nil, err
	}
	opub, _ := okp.PublicKey()
	op.operator = jwt.NewOperatorClaims(opub)
	op.operator.Name = "herald-test"
	op.operator.SystemAccount = sys
	if _, err := op.operator.Encode(okp); err != nil {
		return nil, fmt.Errorf("natsserver: sign operator: %w", err)
	}
	return op, nil
}

// newAccount creates an account the operator okp signs.
func (op *Operator) newAccount(okp nkeys.KeyPair, name string, jetStream bool) (string, nkeys.KeyPair, error) {
	akp, err := nkeys.CreateAccount()
	if err != nil {
		return "", nil, fmt.Errorf("natsserver: create account key: %w", err)
	}
	apub, _ := akp.PublicKey()
	ac := jwt.NewAccountClaims(apub)
	ac.Name = name
	if jetStream {
		ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	}
	ajwt, err := ac.Encode(okp)
	if err != nil {
		return "", nil, fmt.Errorf("natsserver: sign account %s: %w", name, err)
	}
	op.accounts[apub] = ajwt
	return apub, akp, nil
}

// UserCreds signs a user of the operator's account and writes its .creds
// file (JWT and seed, 0600) into dir.
func (op *Operator) UserCreds(dir, name string) (string, error) {
	ukp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("natsserver: create user key: %w", err)
	}
	defer ukp.Wipe()
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = name
	ujwt, err := uc.Encode(op.account)
	if err != nil {
		return "", fmt.Errorf("natsserver: sign user %s: %w", name, err)
	}
	seed, err := ukp.Seed()
	if err != nil {
		return "", fmt.Errorf("natsserver: user seed: %w", err)
	}
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		return "", fmt.Errorf("natsserver: format creds: %w", err)
	}
	path := filepath.Join(dir, name+".creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		return "", fmt.Errorf("natsserver: write %s: %w", path, err)
	}
	return path, nil
}

// WithOperator runs the server in operator mode: it trusts op and knows
// op's account from memory, so only op's users get in.
func WithOperator(op *Operator) Option {
	return func(o *server.Options) error {
		if op == nil {
			return fmt.Errorf("%w: WithOperator needs an operator (NewOperator)", ErrConfig)
		}
		r := &server.MemAccResolver{}
		for pub, j := range op.accounts {
			if err := r.Store(pub, j); err != nil {
				return fmt.Errorf("natsserver: store account: %w", err)
			}
		}
		o.TrustedOperators = []*jwt.OperatorClaims{op.operator}
		o.SystemAccount = op.operator.SystemAccount
		o.AccountResolver = r
		return nil
	}
}
