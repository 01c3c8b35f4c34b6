package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/sinks/kafkasink"
	"github.com/zkherald/herald/sinks/natssink"
)

// natsAuth is how every command that talks to NATS logs in: the same flag
// names, auth and TLS options for bridge, run, lock, who, tail and history.
type natsAuth struct {
	user, password, token string
	nkey, creds           string
	ca, cert, key         string
}

func (n *natsAuth) addFlags(fl *pflag.FlagSet) []*secretFlag {
	fl.StringVar(&n.user, "nats-user", "", "NATS user (with --nats-password)")
	fl.StringVar(&n.password, "nats-password", "", "NATS password (prefer --nats-password-file or HERALD_NATS_PASSWORD: a flag shows in ps)")
	fl.StringVar(&n.token, "nats-token", "", "NATS token (prefer --nats-token-file or HERALD_NATS_TOKEN)")
	fl.StringVar(&n.nkey, "nats-nkey", "", "NATS NKey seed file")
	fl.StringVar(&n.creds, "nats-creds", "", "NATS .creds file (JWT and seed)")
	fl.StringVar(&n.ca, "nats-ca", "", "PEM file of the CAs that sign the NATS server certificate")
	fl.StringVar(&n.cert, "nats-cert", "", "client certificate (PEM) for NATS")
	fl.StringVar(&n.key, "nats-key", "", "client key (PEM) for NATS")
	return []*secretFlag{{name: "nats-password", value: &n.password}, {name: "nats-token", value: &n.token}}
}

// options are the NATS connection options for url.
func (n *natsAuth) options(url, name string, log *slog.Logger) natssink.Options {
	return natssink.Options{
		URL: url, Name: name, Logger: log,
		User: n.user, Password: n.password, Token: n.token,
		NKeySeedFile: n.nkey, CredsFile: n.creds,
		TLS: natssink.TLSOptions{CAFile: n.ca, CertFile: n.cert, KeyFile: n.key},
	}
}

// kafkaAuth is how every command that talks to Kafka logs in, and how it
// finds a group's partition.
type kafkaAuth struct {
	sasl, user, password string
	tls                  bool
	ca, cert, key        string
	partitioner          string
}

func (k *kafkaAuth) addFlags(fl *pflag.FlagSet) []*secretFlag {
	fl.StringVar(&k.sasl, "kafka-sasl", "", "Kafka SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fl.StringVar(&k.user, "kafka-user", "", "Kafka SASL user")
	fl.StringVar(&k.password, "kafka-password", "", "Kafka SASL password (prefer --kafka-password-file or HERALD_KAFKA_PASSWORD)")
	fl.BoolVar(&k.tls, "kafka-tls", false, "connect to Kafka with TLS (implied by --kafka-ca/--kafka-cert)")
	fl.StringVar(&k.ca, "kafka-ca", "", "PEM file of the CAs that sign the Kafka brokers' certificates")
	fl.StringVar(&k.cert, "kafka-cert", "", "client certificate (PEM) for Kafka")
	fl.StringVar(&k.key, "kafka-key", "", "client key (PEM) for Kafka")
	fl.StringVar(&k.partitioner, "kafka-partitioner", string(kafkasink.DefaultPartitioner), "how keys pick Kafka partitions: murmur2 (as the Java client and kcat) or fnv1a (herald's placement before, for multi-partition topics an older herald wrote; see the README); readers must use the bridge's")
	return []*secretFlag{{name: "kafka-password", value: &k.password}}
}

// apply sets cfg's SASL, TLS and partitioner from the flags.
func (k *kafkaAuth) apply(cfg *kafkasink.Config) error {
	part, err := kafkasink.ParsePartitioner(k.partitioner)
	if err != nil {
		return usageErr("--kafka-partitioner: %v", err)
	}
	cfg.Partitioner = part
	if k.sasl != "" || k.user != "" || k.password != "" { // half-given credentials are refused, not dropped
		cfg.SASL = &kafkasink.SASL{Mechanism: strings.ToUpper(k.sasl), User: k.user, Password: k.password}
		if cfg.SASL.Mechanism == "" {
			cfg.SASL.Mechanism = kafkasink.Plain
		}
	}
	if k.tls || k.ca != "" || k.cert != "" || k.key != "" {
		cfg.TLS = &kafkasink.TLS{CAFile: k.ca, CertFile: k.cert, KeyFile: k.key}
	}
	return nil
}

// connEnv is how the command run or lock runs reaches ZooKeeper as herald
// does: the connection settings herald was given (by flag or variable), as
// the HERALD_ variables those flags read (files as absolute paths: the
// command may change directory), so that its herald checkpoint put logs
// in as herald did. HERALD_ZK is set beside them.
func (a *app) connEnv() []string {
	var env []string
	file := func(name, v string) {
		if v == "" {
			return
		}
		if abs, err := filepath.Abs(v); err == nil {
			v = abs
		}
		env = append(env, envName(name)+"="+v)
	}
	file("zk-auth-file", a.zkAuthFile)
	file("zk-ca", a.zkCA)
	file("zk-cert", a.zkCert)
	file("zk-key", a.zkKey)
	if a.zkTLS {
		env = append(env, envName("zk-tls")+"=true")
	}
	if a.zkACL != "" {
		env = append(env, envName("zk-acl")+"="+a.zkACL)
	}
	if a.sessionTimeout > 0 {
		env = append(env, envName("session-timeout")+"="+a.sessionTimeout.String())
	}
	return env
}

// envName is the variable a flag reads: HERALD_ and its name in upper
// case with '-' as '_'.
func envName(flag string) string {
	return "HERALD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// zkAuthEnv is the variable that gives the ZooKeeper digest credentials
// when --zk-auth-file does not.
const zkAuthEnv = "HERALD_ZK_AUTH"

// tidyZKAuthEnv takes the blanks and line breaks from around
// HERALD_ZK_AUTH, as --zk-auth-file's are: a value from a secret store or
// a Kubernetes secret often ends in a newline, which sent as part of the
// password would log in as another identity, one ZooKeeper does not
// refuse until herald touches its own nodes. A line break inside the
// value is refused, as in the file. The variable is set to the tidied
// value, so that whatever reads it next (herald itself, and a herald
// the command of run or lock starts) reads the same credentials.
func tidyZKAuthEnv() error {
	v, ok := os.LookupEnv(zkAuthEnv)
	if !ok {
		return nil
	}
	tidy := strings.TrimSpace(v)
	if strings.ContainsAny(tidy, "\r\n") {
		return usageErr("%s holds more than one line: give user:password alone, on one line", zkAuthEnv)
	}
	if tidy != v {
		if err := os.Setenv(zkAuthEnv, tidy); err != nil {
			return err
		}
	}
	return nil
}

// checkZKACL refuses, as a usage error before any node is created, an
// --zk-acl that does not parse or under which herald's own session could
// not create and delete its nodes (elect.CheckOwnAccess): one such as
// world:anyone:r, or a digest entry that names another identity than
// --zk-auth-file's, would leave parents behind that no later run could
// use.
// useZKACL checks --zk-acl and has the sessions create nodes under it,
// when the command creates nodes; the others neither check nor use it.
func (a *app) useZKACL(createsNodes bool) error {
	if !createsNodes {
		return nil
	}
	a.createsNodes = true
	return a.checkZKACL()
}

func (a *app) checkZKACL() error {
	if a.zkACL == "" {
		return nil
	}
	acl, err := elect.ParseACL(a.zkACL)
	if err != nil {
		return usageErr("--zk-acl: %v", err)
	}
	auth, err := a.zkAuth()
	if err != nil {
		return err
	}
	if err := elect.CheckOwnAccess(acl, auth, a.zkCert != ""); err != nil {
		return usageErr("--zk-acl: %v", err)
	}
	return nil
}
