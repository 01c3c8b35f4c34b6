package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zkherald/herald/sinks/audit"
)

// app holds what every subcommand shares: the global flags, the streams and
// the logger.
type app struct {
	// args is the command line as given (onceOnly).
	args           []string
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
	// logs is the log's writer in run and lock, which never blocks (see
	// logPipe); nil elsewhere, where the log writes to stderr itself.
	logs *logPipe

	zk         string
	zkAuthFile string
	zkTLS      bool
	zkCA       string
	zkCert     string
	zkKey      string
	zkACL      string
	// createsNodes: this command creates nodes in ZooKeeper, so --zk-acl
	// is checked and applied; the others neither check nor use it.
	createsNodes   bool
	sessionTimeout time.Duration
	connectTimeout time.Duration
	logFormat      string
	logLevel       string
	// recipeWarned: run or lock warned that its group holds the other
	// recipe (warnRecipeMix), which it says once, not at each join.
	recipeWarned bool
	// helpErr is the first error writing help (--help, herald help,
	// herald alone): cobra's help writer drops it, run reports it.
	helpErr error
	// streamRead is what history's last read of the whole stream saw of
	// it (see streamRead); nil before one.
	streamRead *streamRead
	// kafkaHeads is where history's first read of the events topic found
	// each group's records beginning; nil before one.
	kafkaHeads *kafkaHeads
	// auditCounted is what history's first read of the audit logs read
	// of each (audit.ReadBatchesCounted); nil before one.
	auditCounted []audit.LogRead
}

// errWriter passes writes on to w and keeps the first error.
type errWriter struct {
	w   io.Writer
	err *error
}

func (e errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && *e.err == nil {
		*e.err = err
	}
	return n, err
}

// checkHelpWrites has the help of every command written through an
// errWriter, so that help that could not be written (herald --help >
// /dev/full) is an error, as a failed write of any command's output is.
func (a *app) checkHelpWrites(root *cobra.Command) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		out := c.OutOrStdout()
		c.SetOut(errWriter{w: out, err: &a.helpErr})
		defer c.SetOut(out)
		help(c, args)
	})
}

// exitError carries a process exit code (a child's, or 2 for usage).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// shellWord is w as a POSIX shell reads it back as one word: as it is
// when it holds nothing the shell treats specially, else single-quoted.
func shellWord(w string) string {
	plain := w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0
	if plain {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// missingPathFlag is the usage error of run or lock started without the
// group's flag. A path given where the command should be (herald lock
// /locks/x -- cmd) is named, with the line that was most likely meant.
func missingPathFlag(command, flag, example, exampleCmd string, args []string) error {
	if len(args) > 0 && strings.HasPrefix(args[0], "/") && !strings.Contains(args[0], " ") {
		// Flags stop being read at the first argument, so any given
		// after the path are still in args, before the "--".
		flags, rest := []string(nil), args[1:]
		if i := slices.Index(rest, "--"); i >= 0 {
			flags, rest = rest[:i], rest[i+1:]
		} else if len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			return usageErr("%s is required: %q was taken for the command to run; if it is the path in ZooKeeper, write herald %s %s %s, then herald's flags, then -- and the command", flag, args[0], command, flag, args[0])
		}
		line := append([]string{"herald", command, flag, args[0]}, flags...)
		if len(rest) == 0 {
			rest = []string{exampleCmd}
		}
		line = append(append(line, "--"), rest...)
		for i := range line {
			line[i] = shellWord(line[i])
		}
		return usageErr("%s is required: %q was taken for the command to run; if it is the path in ZooKeeper, write %s", flag, args[0], strings.Join(line, " "))
	}
	env := "HERALD_" + strings.ToUpper(strings.TrimPrefix(flag, "--"))
	if parent, v := os.Getenv(parentEnv), os.Getenv(env); parent != "" && v != "" {
		return usageErr("%s is required: this herald runs inside the command of herald %s, whose %s=%s names the group that herald holds, not a default for this one (it would wait behind its parent for ever); give the path in ZooKeeper, e.g. herald %s %s %s -- %s", flag, parent, env, v, command, flag, example, exampleCmd)
	}
	return usageErr("%s is required: the path in ZooKeeper, e.g. herald %s %s %s -- %s", flag, command, flag, example, exampleCmd)
}

// subcommands register themselves from their own files.
var subcommands []func(*app) *cobra.Command

func register(f func(*app) *cobra.Command) { subcommands = append(subcommands, f) }

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "herald",
		Short: "Who leads, who holds the lock: ZooKeeper elections and locks as events on NATS and Kafka",
		Long: `herald observes ZooKeeper leader elections and locks and publishes every change
as a typed event to NATS, JetStream, Kafka and an audit log. It also runs one
copy of a program at a time (herald run), holds a lock around a command
(herald lock), and answers who leads now (herald who) and who led when
(herald history).

Every flag can also be set by an environment variable: HERALD_ followed by
the flag name in upper case with '-' as '_' (--zk is HERALD_ZK). Inside the
command of herald run or lock (HERALD_PARENT set), a run or lock does not
take HERALD_LOCK, HERALD_ELECTION or HERALD_ID: they name its parent's group.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := onceOnly(cmd, a.args); err != nil {
				return err
			}
			if err := applyEnv(cmd); err != nil {
				return err
			}
			if err := a.holder(cmd); err != nil {
				return err
			}
			if a.logLevel == "" { // neither --log-level nor HERALD_LOG_LEVEL
				a.logLevel = "info"
				if oneShot[cmd.CommandPath()] {
					a.logLevel = "warn"
				}
			}
			if err := a.setConnectTimeout(cmd); err != nil {
				return err
			}
			if err := a.checkConn(); err != nil {
				return err
			}
			if a.zkAuthFile == "" {
				if err := tidyZKAuthEnv(); err != nil {
					return err
				}
			}
			if err := a.useZKACL(createsNodes[cmd.CommandPath()]); err != nil {
				return err
			}
			return a.setupLog()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	a.checkHelpWrites(root)
	pf := root.PersistentFlags()
	pf.StringVar(&a.zk, "zk", "127.0.0.1:2181", "ZooKeeper servers, host:port[,host:port...]")
	pf.DurationVar(&a.sessionTimeout, "session-timeout", 10*time.Second, "ZooKeeper session timeout to ask for")
	pf.StringVar(&a.zkAuthFile, "zk-auth-file", "", "file holding ZooKeeper digest credentials, user:password (or HERALD_ZK_AUTH); herald's nodes then let this identity do anything and everyone read")
	pf.BoolVar(&a.zkTLS, "zk-tls", false, "speak TLS to ZooKeeper's secureClientPort (implied by --zk-ca and --zk-cert); --zk then names the secure ports")
	pf.StringVar(&a.zkCA, "zk-ca", "", "PEM file of the CAs that sign the ZooKeeper servers' certificates (default: the system's)")
	pf.StringVar(&a.zkCert, "zk-cert", "", "PEM client certificate for ZooKeeper servers that ask for one (with --zk-key)")
	pf.StringVar(&a.zkKey, "zk-key", "", "PEM private key of --zk-cert")
	pf.StringVar(&a.zkACL, "zk-acl", "", "ACL of every node herald creates, as ZooKeeper's shell writes it: scheme:id:perms,... (default digest:USER:HASH:cdrwa,world:anyone:r naming the --zk-auth-file identity, else world:anyone:cdrwa; auth:: names every identity of the session, the --zk-cert subject too)")
	pf.DurationVar(&a.connectTimeout, "connect-timeout", 0, "how long to wait for ZooKeeper before giving up, retries included (default 15s; 3s for who, history, tail, checkpoint and bridge check)")
	pf.StringVar(&a.logFormat, "log-format", "text", "log format: text or json")
	pf.StringVar(&a.logLevel, "log-level", "", "log level: debug, info, warn, error (default info; warn for who, history, tail, checkpoint and bridge check)")
	root.SetFlagErrorFunc(flagError)
	for _, f := range subcommands {
		root.AddCommand(f(a))
	}
	return root
}

// setConnectTimeout gives --connect-timeout its default when neither it
// nor HERALD_CONNECT_TIMEOUT was given: 15s, or oneShotConnectTimeout. A
// value given must be positive: 0 is not "the default" nor "no limit".
func (a *app) setConnectTimeout(cmd *cobra.Command) error {
	given := cmd.Flags().Changed("connect-timeout") || strings.TrimSpace(os.Getenv("HERALD_CONNECT_TIMEOUT")) != ""
	if !given {
		a.connectTimeout = 15 * time.Second
		if oneShot[cmd.CommandPath()] {
			a.connectTimeout = oneShotConnectTimeout
		}
	}
	return a.checkConnectTimeout()
}

// checkConnectTimeout refuses a --connect-timeout that is not positive.
func (a *app) checkConnectTimeout() error {
	if a.connectTimeout <= 0 {
		return usageErr("--connect-timeout %v: give a positive duration, e.g. 5s (leave it out for the default)", a.connectTimeout)
	}
	return nil
}

// oneShotConnectTimeout is how long a one-shot command waits for ZooKeeper
// by default: a person is waiting for the answer.
const oneShotConnectTimeout = 3 * time.Second

// oneShot are the commands that answer and exit (or print a stream on
// stdout): their INFO logs (connecting, connected) would only be noise on
// stderr, so they log warnings and errors unless --log-level says otherwise.
var oneShot = map[string]bool{
	"herald who":            true,
	"herald history":        true,
	"herald tail":           true,
	"herald checkpoint get": true,
	"herald checkpoint put": true,
	"herald bridge check":   true,
	"herald version":        true,
}

// holder prepares run and lock: the command inherits herald's
// environment, so that a herald it starts learns that it runs inside this
// one; and the log must never block them (logPipe).
func (a *app) holder(cmd *cobra.Command) error {
	if !holdsGroup[cmd.CommandPath()] {
		return nil
	}
	a.logs = newLogPipe(a.stderr)
	return os.Setenv(parentEnv, cmd.Name())
}

// parentEnv names the herald command (run or lock) whose command this
// process runs in, or its command's command: run and lock set it in the
// environment their command inherits.
const parentEnv = "HERALD_PARENT"

// holdsGroup are the commands that join a group and run a command in it.
// createsNodes are the commands that create nodes in ZooKeeper, and so
// check and apply --zk-acl; bridge does too with --ha (its election),
// which it learns only from its --config. The others (who, history, tail,
// checkpoint get, ...) create nothing: an ACL set in the environment for
// the host's writers does not stop them.
var createsNodes = map[string]bool{
	"herald run":            true,
	"herald lock":           true,
	"herald checkpoint put": true,
	"herald bench":          true,
}

var holdsGroup = map[string]bool{"herald run": true, "herald lock": true}

// exported are the variables run and lock give their command as
// information: where that herald's lock or leadership is, under which id.
// A run or lock started inside that command (HERALD_PARENT set) does not
// take them for its own --lock, --election or --id: they name the group
// its parent holds, which it would wait behind for ever, under the
// parent's id. checkpoint put and get inside the command do take them.
var exported = map[string]bool{"HERALD_LOCK": true, "HERALD_ELECTION": true, "HERALD_ID": true}

// applyEnv sets every flag the command line left alone from HERALD_<NAME>.
// secretName reports whether a flag holds a secret (--nats-password,
// --nats-token, --kafka-password, ...).
func secretName(flag string) bool {
	return strings.HasSuffix(flag, "password") || strings.HasSuffix(flag, "token")
}

func applyEnv(cmd *cobra.Command) error {
	var errs []error
	nested := holdsGroup[cmd.CommandPath()] && os.Getenv(parentEnv) != ""
	seen := map[string]bool{} // cmd.Flags() holds the inherited flags too
	visit := func(f *pflag.Flag) {
		if f.Changed || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		name := "HERALD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if nested && exported[name] {
			return // the parent's, not this herald's
		}
		v, ok := os.LookupEnv(name)
		if !ok || strings.TrimSpace(v) == "" {
			return // unset and empty both leave the default
		}
		if secretName(f.Name) {
			// As from its file twin: without the trailing line break a
			// secret store or a heredoc leaves, and never quoted.
			if v = strings.TrimRight(v, "\r\n"); strings.ContainsAny(v, "\r\n") {
				errs = append(errs, fmt.Errorf("%s holds more than one line: give the secret alone, on one line", name))
				return
			}
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			if err := sv.Replace(splitList(v)); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
			return
		}
		if err := f.Value.Set(v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %s", name, v, badValue(f.Value.Type(), err)))
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if len(errs) > 0 {
		return usageErr("bad environment: %w", errors.Join(errs...))
	}
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (a *app) setupLog() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usageErr("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	out := a.stderr
	if a.logs != nil {
		out = a.logs
	}
	switch a.logFormat {
	case "text":
		a.log = slog.New(slog.NewTextHandler(out, opts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(out, opts))
	default:
		return usageErr("--log-format %q: want text or json", a.logFormat)
	}
	return nil
}

// servers splits --zk.
func (a *app) servers() ([]string, error) {
	s := splitList(a.zk)
	if len(s) == 0 {
		return nil, usageErr("--zk is empty: give host:port[,host:port...] (or set HERALD_ZK)")
	}
	if i := strings.Index(a.zk, "/"); i >= 0 {
		// A chroot suffix, as in Kafka's zookeeper.connect: herald's
		// client has no chroot, and paths below it would silently miss.
		hosts, chroot := strings.TrimRight(a.zk[:i], ","), strings.TrimRight(a.zk[i:], "/")
		if chroot == "" {
			// "host:2181/": the root, which is no chroot at all.
			return nil, usageErr("--zk %q ends in \"/\", which herald does not take: give the servers alone (--zk %s)", a.zk, hosts)
		}
		return nil, usageErr("--zk %q ends in a chroot (%s), which herald does not take: give the servers alone (--zk %s) and the full paths below the chroot (%s/controller, --preset kafka=%s, --watch %s/...)", a.zk, chroot, hosts, chroot, chroot, chroot)
	}
	return s, nil
}

// onceOnly refuses a flag that takes one value given more than once: the
// last would win in silence, and `herald lock --lock /a --lock /b` would
// hold /b for a script that believes it holds /a. Flags that take a list
// (repeated to give several) and switches are not counted; nor is
// anything after "--", the command of run and lock.
func onceOnly(cmd *cobra.Command, args []string) error {
	counts := map[string]int{}
	for _, arg := range args {
		if arg == "--" {
			break
		}
		if name, ok := strings.CutPrefix(arg, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			counts[name]++
		}
	}
	for name, n := range counts {
		f := cmd.Flags().Lookup(name)
		if n < 2 || f == nil {
			continue
		}
		switch t := f.Value.Type(); {
		case t == "bool", t == "count", strings.HasSuffix(t, "Slice"), strings.HasSuffix(t, "Array"):
			continue
		}
		return usageErr("--%s given %d times: give it once (only the last would count)", name, n)
	}
	return nil
}

// run executes the command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{args: args, stdin: stdin, stdout: stdout, stderr: stderr, log: slog.New(slog.NewTextHandler(stderr, nil))}
	root := newRoot(a)
	root.SetArgs(args)
	ctx, stop := signalContext()
	defer stop()
	err := root.ExecuteContext(ctx)
	if a.logs != nil {
		a.logs.flush(2 * time.Second) // its lines before the error's
	}
	if err == nil {
		err = a.helpErr
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "herald:", ee.err)
			authHint(stderr, ee.err)
		}
		return ee.code
	}
	if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") {
		if f := unknownGlobalFlag(root, args); f != "" {
			// cobra took the command name for the unknown flag's value
			// and the next argument for the command.
			err = fmt.Errorf("unknown flag: %s", f)
		}
		fmt.Fprintf(stderr, "herald: %v\nRun 'herald --help' for usage.\n", err)
		return 2
	}
	fmt.Fprintln(stderr, "herald:", err)
	authHint(stderr, err)
	return 1
}

// signalCause is why the command's context ended when SIGINT or SIGTERM
// arrived: it names the signal, so that a command stopped before it did
// its work exits 128+N, as a shell reports a process the signal killed.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return c.sig.String() + " signal received" }

func (c signalCause) Is(target error) bool { return target == context.Canceled }

// signalContext is a context cancelled, with a signalCause, by the first
// SIGINT or SIGTERM; stop restores the signals' default behaviour.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(signalCause{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// interrupted is the error of a command a signal stopped before it could
// do its work: exit 128+N for signal N (130 for Ctrl-C, 143 for SIGTERM),
// 1 when ctx ended otherwise.
func interrupted(ctx context.Context, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	var c signalCause
	if errors.As(context.Cause(ctx), &c) {
		if n, ok := c.sig.(syscall.Signal); ok {
			return &exitError{code: 128 + int(n), err: fmt.Errorf("%w (%v)", err, c.sig)}
		}
	}
	return err
}

// authHint says which flag to look at when ZooKeeper refused an operation
// for the session's identity. ZooKeeper takes any digest credentials at
// login, so a wrong password shows up only here; nor does it check an
// ACL's entries before a create.
func authHint(w io.Writer, err error) {
	if errors.Is(err, zk.ErrNoAuth) {
		fmt.Fprintln(w, "herald: ZooKeeper refused this identity. Log in as the one these nodes belong to (--zk-auth-file or HERALD_ZK_AUTH, where a wrong password is another identity; or the --zk-cert whose subject they name), or give the nodes an ACL that admits yours (--zk-acl where herald creates them).")
	}
	if errors.Is(err, zk.ErrInvalidACL) {
		// ZooKeeper's own words name neither the entry nor the flag.
		fmt.Fprintln(w, "herald: ZooKeeper refused the ACL herald creates nodes with (--zk-acl or HERALD_ZK_ACL): an x509 entry needs a server with a TLS client port (its x509 provider), a sasl entry a server with SASL configured, and an IPv6 ip entry a server that takes them (3.8 does not).")
	}
}

// unknownGlobalFlag returns the first flag before the command name that
// herald does not know ("" if none): herald --bogus who /x.
func unknownGlobalFlag(root *cobra.Command, args []string) string {
	fs := root.PersistentFlags()
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" || !strings.HasPrefix(arg, "-") || arg == "-" {
			return ""
		}
		name, hasValue := strings.TrimLeft(arg, "-"), false
		if n, _, ok := strings.Cut(name, "="); ok {
			name, hasValue = n, true
		}
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(arg, "--"):
			f = fs.Lookup(name)
		case len(name) == 1:
			f = fs.ShorthandLookup(name)
		default:
			return "" // -abc: leave it to cobra
		}
		switch {
		case name == "help" || name == "h" || name == "version" || name == "v":
		case f == nil:
			flag, _, _ := strings.Cut(arg, "=")
			return flag
		case !hasValue && f.NoOptDefVal == "":
			i++ // the flag's value
		}
	}
	return ""
}

// checkConn refuses, as usage errors, ZooKeeper settings no server could
// accept: an address that is not host:port, a session timeout out of the
// range herald asks for. Left to the connection, they read as a server
// that cannot be reached.
func (a *app) checkConn() error {
	if len(splitList(a.zk)) == 0 {
		return usageErr("--zk is empty: give host:port[,host:port...] (or set HERALD_ZK)")
	}
	for _, hp := range strings.Split(a.zk, ",") {
		hp = strings.TrimSpace(hp)
		if scheme, _, ok := strings.Cut(hp, "://"); ok {
			// Other clients take URLs; read as host:port, the scheme
			// would be named a host whose port is not a number.
			return usageErr("--zk %q: %q has a scheme (%s://), which --zk does not take: give host:port alone (--zk %s)", a.zk, hp, scheme, withoutSchemes(a.zk))
		}
		if i := strings.Index(hp, "/"); i >= 0 {
			hp = hp[:i] // a chroot: refused with its own advice when connecting
		}
		_, port, err := net.SplitHostPort(hp)
		if err != nil {
			return usageErr("--zk %q: %q is not host:port (%v); give host:port[,host:port...], e.g. zk1:2181", a.zk, hp, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return usageErr("--zk %q: port %q of %q is not a port number; give host:port, e.g. zk1:2181", a.zk, port, hp)
		}
	}
	if a.sessionTimeout < 100*time.Millisecond || a.sessionTimeout > 10*time.Minute {
		return usageErr("--session-timeout %v: give 100ms to 10m, e.g. 10s", a.sessionTimeout)
	}
	return nil
}

// withoutSchemes is the server list zk with any scheme (zk://) taken from
// its entries: the --zk to give instead.
func withoutSchemes(zk string) string {
	entries := strings.Split(zk, ",")
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if _, rest, ok := strings.Cut(e, "://"); ok {
			e = rest
		}
		entries[i] = e
	}
	return strings.Join(entries, ",")
}

// flagError is a usage error for a flag cobra could not parse, pointing
// to --help; a value the flag cannot take says what to give (badValue).
func flagError(c *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		err = fmt.Errorf("--%s %q: %s", bad.GetFlag().Name, bad.GetValue(), badValue(bad.GetFlag().Value.Type(), errors.Unwrap(err)))
	}
	return usageErr("%v\nRun '%s --help' for usage.", err, c.CommandPath())
}

// badValue says what is wrong with a value a flag of kind could not take,
// and what to give: Go's parse errors (strconv.ParseInt: parsing "x":
// invalid syntax; time: missing unit in duration "5") name neither in an
// operator's terms. Other kinds keep their own error, which does.
func badValue(kind string, err error) string {
	var what string
	switch kind {
	case "duration":
		what = "not a duration"
	case "int", "int32", "int64", "uint", "uint16", "uint32", "uint64":
		what = "not a whole number"
		if errors.Is(err, strconv.ErrRange) {
			what = "out of range"
		}
	case "bool":
		what = "neither true nor false"
	default:
		return err.Error()
	}
	return what + valueHint(kind)
}
