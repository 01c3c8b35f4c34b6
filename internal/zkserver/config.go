package zkserver

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"
)

// Config describes the servers Start launches. The zero value is a valid
// standalone server with fast timings.
type Config struct {
	// Nodes is the number of servers: 1 (the default) starts a standalone
	// server, 3 or 5 an ensemble. At most 9.
	Nodes int

	// TickTime is ZooKeeper's basic time unit (default 200ms). Session
	// timeouts, initLimit and syncLimit are counted in ticks.
	TickTime time.Duration

	// MinSessionTimeout is the shortest session timeout the server grants
	// (default 2×TickTime, so 400ms with the default tick).
	MinSessionTimeout time.Duration

	// MaxSessionTimeout is the longest session timeout the server grants
	// (default 60s, so a client that asks for a long session gets it).
	MaxSessionTimeout time.Duration

	// MaxClientCnxns limits connections per client address; 0 (the default)
	// means unlimited. ZooKeeper's own default is 60, which a benchmark
	// with many clients on loopback would hit.
	MaxClientCnxns int

	// Dir holds each member's config, data and log. Default: a new temporary
	// directory, removed by Close. A Dir given here is kept.
	Dir string

	// JVMHeap is the -Xmx value (default "256m").
	JVMHeap string

	// JVMFlags are extra flags for the java command, added after the defaults.
	JVMFlags []string

	// LogWriter, when set, also receives every server's output, each line
	// prefixed with "zkN| ". The output always goes to DIR/zkN/zookeeper.log.
	LogWriter io.Writer

	// TLSKeyStore, when set, is a PEM file holding the server's private key
	// (PKCS#8) and certificate chain. Each member then also listens on a
	// secureClientPort (Server.SecureAddr) through Netty; clients are not
	// asked for a certificate. The plain client port stays open for the
	// four-letter commands Start and the helpers use.
	TLSKeyStore string

	// TLSTrustStore, with TLSKeyStore, is a PEM file of the CAs whose
	// client certificates the secure port accepts; clients must then
	// present one.
	TLSTrustStore string

	// TLSProtocol, with TLSKeyStore, is the only TLS version the secure
	// port speaks, as Java names it ("TLSv1.3"); empty keeps ZooKeeper's
	// default (TLSv1.2).
	TLSProtocol string

	// Isolatable, for an ensemble, routes each member's links to the
	// others through relays of the cluster's own, so that Cluster.Isolate
	// can cut one member off from the rest while its clients still reach
	// it.
	Isolatable bool

	// SyncLimit, for an ensemble, is how many ticks a follower may lag or
	// stay silent before the leader drops it, and the leader without a
	// quorum of followers gives its leadership up (default 10).
	SyncLimit int

	// StartTimeout bounds Start and Server.Start when ctx has no deadline
	// (default 60s).
	StartTimeout time.Duration
}

// Validate reports the first setting that cannot work, wrapped in
// ErrInvalidConfig. Zero values are fine: they mean the defaults.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.Nodes < 0 || c.Nodes > 9:
		return bad("Nodes is %d; use 1 for standalone or 3 or 5 for an ensemble (at most 9)", c.Nodes)
	case c.SyncLimit < 0:
		return bad("SyncLimit is %d; use a positive number of ticks, or 0 for the default 10", c.SyncLimit)
	case c.TickTime < 0 || (c.TickTime > 0 && c.TickTime < time.Millisecond):
		return bad("TickTime is %v; use at least 1ms, or 0 for the default 200ms", c.TickTime)
	case c.MinSessionTimeout < 0 || c.MaxSessionTimeout < 0:
		return bad("session timeouts must not be negative (min %v, max %v)", c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.MaxClientCnxns < 0:
		return bad("MaxClientCnxns is %d; use 0 for unlimited", c.MaxClientCnxns)
	case c.TLSTrustStore != "" && c.TLSKeyStore == "":
		return bad("TLSTrustStore needs TLSKeyStore: the trust store only checks clients of the TLS port")
	case c.TLSProtocol != "" && c.TLSKeyStore == "":
		return bad("TLSProtocol needs TLSKeyStore: only the TLS port speaks it")
	case c.TLSProtocol != "" && !strings.HasPrefix(c.TLSProtocol, "TLSv1."):
		return bad("TLSProtocol %q: name a version as Java does, e.g. TLSv1.3", c.TLSProtocol)
	case c.StartTimeout < 0:
		return bad("StartTimeout is %v; use 0 for the default 60s", c.StartTimeout)
	case strings.ContainsAny(c.JVMHeap, " \t\n"):
		return bad("JVMHeap %q must be a single size such as 256m", c.JVMHeap)
	}
	d := c.withDefaults()
	if d.MinSessionTimeout > d.MaxSessionTimeout {
		return bad("MinSessionTimeout %v is longer than MaxSessionTimeout %v", d.MinSessionTimeout, d.MaxSessionTimeout)
	}
	if d.MinSessionTimeout < 2*d.TickTime {
		return bad("MinSessionTimeout %v is shorter than two ticks (%v); lower TickTime", d.MinSessionTimeout, 2*d.TickTime)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.TickTime == 0 {
		c.TickTime = 200 * time.Millisecond
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 60 * time.Second
		if c.MaxSessionTimeout < c.MinSessionTimeout {
			c.MaxSessionTimeout = c.MinSessionTimeout
		}
	}
	if c.JVMHeap == "" {
		c.JVMHeap = "256m"
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 60 * time.Second
	}
	return c
}

// ports are the three loopback ports of one member.
type ports struct{ client, quorum, election, secure int }

// zooCfg renders member id's zoo.cfg. members holds every member's ports,
// indexed by id-1.
func (c Config) zooCfg(id int, dataDir string, members []ports) string {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("tickTime=%d", ms(c.TickTime))
	line("minSessionTimeout=%d", ms(c.MinSessionTimeout))
	line("maxSessionTimeout=%d", ms(c.MaxSessionTimeout))
	line("dataDir=%s", dataDir)
	line("clientPortAddress=127.0.0.1")
	line("clientPort=%d", members[id-1].client)
	line("maxClientCnxns=%d", c.MaxClientCnxns)
	line("4lw.commands.whitelist=*")
	line("admin.enableServer=false")
	if c.TLSKeyStore != "" {
		line("secureClientPortAddress=127.0.0.1")
		line("secureClientPort=%d", members[id-1].secure)
		line("serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory")
		line("ssl.keyStore.location=%s", c.TLSKeyStore)
		line("ssl.keyStore.type=PEM")
		if c.TLSTrustStore != "" {
			line("ssl.trustStore.location=%s", c.TLSTrustStore)
			line("ssl.trustStore.type=PEM")
			line("ssl.clientAuth=need")
		} else {
			line("ssl.clientAuth=none")
		}
		if c.TLSProtocol != "" {
			line("ssl.protocol=%s", c.TLSProtocol)
			line("ssl.enabledProtocols=%s", c.TLSProtocol)
			if c.TLSProtocol == "TLSv1.3" {
				// ZooKeeper's default cipher list holds TLS 1.2 suites only.
				line("ssl.ciphersuites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256")
			}
		}
	}
	if len(members) == 1 {
		line("standaloneEnabled=true")
		return b.String()
	}
	line("standaloneEnabled=false")
	line("initLimit=20")
	line("syncLimit=%d", cmp.Or(c.SyncLimit, 10))
	line("reconfigEnabled=false")
	for i, p := range members {
		line("server.%d=127.0.0.1:%d:%d", i+1, p.quorum, p.election)
	}
	return b.String()
}
