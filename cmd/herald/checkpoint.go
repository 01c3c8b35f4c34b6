package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
)

func init() { register(newCheckpointCmd) }

// maxCheckpoint stays well below ZooKeeper's 1 MB znode limit.
const maxCheckpoint = 512 << 10

// maxEnvCheckpoint is the largest checkpoint herald run can hand its
// command in HERALD_CHECKPOINT: Linux takes no environment string longer
// than 128 KiB (MAX_ARG_STRLEN), name, '=' and the closing NUL included.
// A larger one is saved all the same, and the command reads it with
// herald checkpoint get.
const maxEnvCheckpoint = 128<<10 - len("HERALD_CHECKPOINT=") - 1

func newCheckpointCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Save or read the progress of the command herald run runs",
		Example: `  # inside the command herald run started
  herald checkpoint put "step=3"
  echo '{"offset": 1200}' | herald checkpoint put -

  # anywhere
  herald checkpoint get --election /jobs/nightly`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErr("checkpoint needs a subcommand: put or get (see herald checkpoint --help)")
		},
	}
	cmd.AddCommand(newCheckpointPutCmd(a), newCheckpointGetCmd(a))
	return cmd
}

func newCheckpointPutCmd(a *app) *cobra.Command {
	var f elect.Fence
	cmd := &cobra.Command{
		Use:   "put DATA|-",
		Short: "Save progress, fenced by the leader that started this command",
		Long: `put saves DATA (or standard input with -) as the election's checkpoint. DATA
is required, and must not be empty: an unset variable ($STEP) must not wipe
the progress saved, nor wait for standard input. So must standard input
not be closed (<&-), nor give nothing (a producer that failed), nor be the
/dev/null herald run hands its command when its own is one (systemd's
StandardInput=null): an empty checkpoint on purpose is
herald checkpoint put - </dev/null.

The write is fenced: ZooKeeper checks, in the same transaction, that the
leader's node named by HERALD_NODE still exists with term HERALD_TERM. A
command whose leader was deposed is refused with exit status 3, so it can
stop at once; one that cannot reach ZooKeeper exits 69, and may try again.

The fence comes from the environment herald run gives its command
(HERALD_ELECTION, HERALD_NODE, HERALD_ID, HERALD_TERM, HERALD_ZK) or from
the flags.

A checkpoint may take up to 512 KiB, as long as the servers' jute.maxbuffer
(1 MB unless set) takes its record (some 700 KB for 512 KiB): one the servers
refuse as too big exits 1, saying so, and is not saved. Herald run hands the next leader's
command only one of up to 131053 bytes in HERALD_CHECKPOINT (the most an
environment variable holds on Linux); for a larger one, which put saves with
a warning, the command finds HERALD_CHECKPOINT empty and
HERALD_CHECKPOINT_ERROR saying to read it with herald checkpoint get.`,
		Example: `  herald checkpoint put "step=3" || exit   # status 3: no longer the leader
  ./state.sh | herald checkpoint put -`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usageErr("checkpoint put needs the data: herald checkpoint put DATA, or - to read it from standard input (nothing is read from it without -)")
			case len(args) > 1:
				return usageErr("checkpoint put takes one DATA argument, got %d: quote it, herald checkpoint put \"step 3\"", len(args))
			case args[0] == "":
				return usageErr("checkpoint put was given empty data, which would replace the progress saved with nothing (an unset variable?); to save an empty checkpoint on purpose: herald checkpoint put - </dev/null")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lockFence(cmd); err != nil {
				return err
			}
			data, err := a.checkpointData(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := a.putCheckpoint(cmd.Context(), f, data); err != nil {
				return err
			}
			switch n := len(data); {
			case bytes.IndexByte(data, 0) >= 0:
				a.log.Warn("checkpoint saved, but it holds NUL bytes, which the environment cannot carry: the next leader's command finds HERALD_CHECKPOINT empty and HERALD_CHECKPOINT_ERROR set, and must read it with herald checkpoint get --raw",
					"bytes", n)
			case n > maxEnvCheckpoint:
				a.log.Warn("checkpoint saved, but it is too big to pass in the environment: the next leader's command finds HERALD_CHECKPOINT empty and HERALD_CHECKPOINT_ERROR set, and must read it with herald checkpoint get",
					"bytes", n, "max", maxEnvCheckpoint)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Group, "election", "", "election path (default $HERALD_ELECTION)")
	fl.StringVar(&f.Node, "node", "", "the leader's node name (default $HERALD_NODE)")
	fl.StringVar(&f.ID, "id", "", "the leader's id (default $HERALD_ID)")
	fl.Int64Var(&f.Term, "term", 0, "the leader's term (default $HERALD_TERM)")
	return cmd
}

// lockFence refuses a put whose fence would come from the environment of
// herald lock's command: HERALD_NODE and HERALD_TERM there are the lock's.
// A lock inside herald run's command replaces the run's node and term but
// leaves its HERALD_ELECTION, and the put, fencing the run's group with
// the lock's node, was refused with an error about the group.
func lockFence(cmd *cobra.Command) error {
	fl := cmd.Flags()
	if os.Getenv(parentEnv) != "lock" || fl.Changed("node") || fl.Changed("term") {
		return nil
	}
	in := ""
	if e := os.Getenv("HERALD_ELECTION"); e != "" {
		in = fmt.Sprintf(", inside the command of herald run --election %s, whose node and term the lock's replaced", e)
	}
	return usageErr("checkpoint put runs in the command of herald lock --lock %s%s: HERALD_NODE and HERALD_TERM are the lock's, and a checkpoint is fenced by an elected leader's; "+
		"save it from herald run's command, outside the lock, or pass --election, --node and --term", os.Getenv("HERALD_LOCK"), in)
}

// checkpointData is arg, or standard input for "-". Standard input that
// was closed, or that gives nothing unless it is /dev/null, is refused:
// like an empty argument, it would replace the progress saved with
// nothing (a producer that failed, a runner that closed it).
func (a *app) checkpointData(ctx context.Context, arg string) ([]byte, error) {
	if arg != "-" {
		if len(arg) > maxCheckpoint {
			return nil, usageErr("checkpoint larger than %d bytes; keep the state elsewhere and checkpoint a reference to it", maxCheckpoint)
		}
		return []byte(arg), nil
	}
	src := stdinKind(a.stdin)
	if src == stdinClosed {
		return nil, usageErr("checkpoint put - has no standard input to read: it was closed (<&-) when herald started (or is /dev/null opened read-write, as a closed one becomes), and nothing was saved; " +
			"pipe the data in (./state.sh | herald checkpoint put -), give it as an argument (herald checkpoint put DATA), or, for an empty checkpoint on purpose, herald checkpoint put - </dev/null")
	}
	if src == stdinFromRun {
		return nil, usageErr("checkpoint put - has no standard input to read: it is the /dev/null herald run (or lock) gave its command, its own standard input being /dev/null (systemd's StandardInput=null, a daemon's) or closed, and nothing was saved; " +
			"pipe the data in (./state.sh | herald checkpoint put -), give it as an argument (herald checkpoint put DATA), or, for an empty checkpoint on purpose, herald checkpoint put - </dev/null")
	}
	b, err := a.readStdin(ctx)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 && src == stdinOther {
		return nil, usageErr("checkpoint put - read nothing from standard input (did the command feeding it fail?), which would replace the progress saved with nothing; " +
			"nothing was saved: to save an empty checkpoint on purpose, herald checkpoint put - </dev/null")
	}
	return b, nil
}

// stdinSource is what standard input is, as far as stdinKind can tell.
type stdinSource int

const (
	stdinOther   stdinSource = iota // a pipe, a file, a terminal
	stdinClosed                     // closed when herald started
	stdinDevNull                    // /dev/null, given on purpose
	stdinUnknown                    // a platform where it cannot tell
	stdinFromRun                    // the /dev/null herald run gave its command (commandStdin)
)

// readStdin reads the checkpoint from standard input. A signal while it
// waits ends the command (exit 128+N).
func (a *app) readStdin(ctx context.Context) ([]byte, error) {
	type read struct {
		b   []byte
		err error
	}
	got := make(chan read, 1)
	a.log.Debug("reading the checkpoint from standard input")
	go func() {
		b, err := io.ReadAll(io.LimitReader(a.stdin, maxCheckpoint+1))
		got <- read{b, err}
	}()
	var r read
	select {
	case r = <-got:
	case <-ctx.Done():
		return nil, interrupted(ctx, "interrupted while reading the checkpoint from standard input; nothing was saved")
	}
	if r.err != nil {
		return nil, fmt.Errorf("read checkpoint from standard input: %w", r.err)
	}
	if len(r.b) > maxCheckpoint {
		return nil, usageErr("checkpoint larger than %d bytes; keep the state elsewhere and checkpoint a reference to it", maxCheckpoint)
	}
	return r.b, nil
}

func (a *app) putCheckpoint(ctx context.Context, f elect.Fence, data []byte) error {
	if f.Group == "" || f.Node == "" || f.Term == 0 {
		return usageErr("no leader to fence the checkpoint with: run this inside 'herald run' (which sets HERALD_ELECTION, HERALD_NODE and HERALD_TERM) or pass --election, --node and --term")
	}
	if err := f.Validate(); err != nil {
		return usageErr("bad fence: %v; the fence is the leader's node and term in its election, which herald run gives its command (HERALD_ELECTION, HERALD_NODE, HERALD_TERM): put the checkpoint from there, or pass --election, --node and --term as herald who PATH shows the owner's (its NODE and TERM)", err)
	}
	if ctx.Err() != nil {
		return interrupted(ctx, "interrupted before the checkpoint was saved")
	}
	s, err := a.openSession(ctx, false)
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(ctx, "interrupted while connecting to ZooKeeper; the checkpoint was not saved")
		}
		return unreachableExit(fmt.Errorf("%w; the checkpoint was not saved", err)) // 69: try again
	}
	defer s.Close()
	err = f.Checkpoint(ctx, s, data)
	if err != nil && ctx.Err() != nil {
		// A signal (the runner stopping its command): 128+N, saying
		// whether the write may have landed.
		return interrupted(ctx, "interrupted while saving the checkpoint: %v", err)
	}
	if errors.Is(err, elect.ErrNotLeader) {
		return &exitError{code: exitNotLeader, err: fmt.Errorf("checkpoint rejected: leader %s (term %d) no longer leads %s; stop working: %w",
			f.Node, f.Term, f.Group, err)}
	}
	if errors.Is(err, zk.ErrNoAuth) {
		return fmt.Errorf("checkpoint %s/%s: this identity may not write it: its ACL lets other identities write it (another identity's leader made it, or someone set it by hand); give this identity WRITE on it, or delete it to start afresh: %w", f.Group, elect.CheckpointNode, err)
	}
	if lostConnection(err) {
		// This put's own connection, not the leader's: try again (69).
		return &exitError{code: exitUnreachable, err: fmt.Errorf("checkpoint %s: %w; this says nothing of the leader, which may still lead: put it again", f.Group, err)}
	}
	if err != nil {
		return unreachableExit(fmt.Errorf("checkpoint %s: %w", f.Group, err))
	}
	return nil
}

// lostConnection reports whether err is a connection to ZooKeeper lost
// while the command worked, or its session ended.
func lostConnection(err error) bool {
	return errors.Is(err, elect.ErrSessionLost) || errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionExpired)
}

func newCheckpointGetCmd(a *app) *cobra.Command {
	var group string
	var asJSON, raw bool
	cmd := &cobra.Command{
		Use:   "get [PATH | --election PATH]",
		Short: "Print the last checkpoint of an election",
		Long: `get prints the data of the election's last checkpoint (exit 1 when there is
none), with a newline added when it ends without one, or with --raw byte
for byte; with --json the whole record: data (as text, and data_base64
byte for byte), term, node and id of the leader that saved it, and when.
It exits 69 when ZooKeeper cannot be reached.`,
		Example: `  herald checkpoint get --election /jobs/nightly
  herald checkpoint get /jobs/nightly --json
  herald checkpoint get /jobs/nightly --raw > state.bin`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr("checkpoint get takes one election path, got %d: %q", len(args), args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// what the path came from, for the error of a malformed one
			from := "--election"
			if !cmd.Flags().Changed("election") {
				from = "HERALD_ELECTION"
			}
			if len(args) == 1 {
				if group != "" && group != args[0] && cmd.Flags().Changed("election") {
					return usageErr("two elections given, %s and --election %s: give one", args[0], group)
				}
				group, from = args[0], "PATH"
			}
			if group == "" {
				return usageErr("the election is required: herald checkpoint get PATH, or --election PATH (or $HERALD_ELECTION)")
			}
			if raw && asJSON {
				return usageErr("--raw and --json do not go together: --json carries the data byte for byte in data_base64")
			}
			if err := groupArg(from, group); err != nil {
				return err
			}
			s, err := a.openSession(cmd.Context(), false)
			if err != nil {
				return unreachableExit(err)
			}
			defer s.Close()
			cp, err := elect.ReadCheckpoint(cmd.Context(), s, group)
			if err != nil {
				return unreachableExit(err)
			}
			if asJSON {
				return writeJSON(a.stdout, checkpointJSON(cp))
			}
			out := cp.Data
			if !raw && !bytes.HasSuffix(out, []byte("\n")) {
				out = append(out[:len(out):len(out)], '\n')
			}
			_, err = a.stdout.Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&group, "election", "", "election path (default $HERALD_ELECTION)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole record as JSON (data as text, and data_base64 byte for byte)")
	cmd.Flags().BoolVar(&raw, "raw", false, "print the data byte for byte, with no newline added (binary checkpoints)")
	return cmd
}

// checkpointRecord is checkpoint get --json: the data as text (bytes
// that are not UTF-8 come out as U+FFFD) and, byte for byte, in base64.
type checkpointRecord struct {
	Data       string `json:"data"`
	DataBase64 []byte `json:"data_base64"`
	elect.Checkpoint
}

func checkpointJSON(cp elect.Checkpoint) checkpointRecord {
	return checkpointRecord{Data: string(cp.Data), DataBase64: cp.Data, Checkpoint: cp}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}
