package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"
)

func init() { register(newDemoJobCmd) }

// newDemoJobCmd is the job herald demo runs under herald run: it counts
// steps, checkpoints each one with `herald checkpoint put`, and resumes from
// HERALD_CHECKPOINT. Hidden: it exists for the demo and the tests.
func newDemoJobCmd(a *app) *cobra.Command {
	var steps int
	var stepTime time.Duration
	cmd := &cobra.Command{
		Use:     "demo-job",
		Short:   "The job herald demo runs: counts steps and checkpoints each",
		Example: `  herald run --election /demo/job -- herald demo-job --steps 6 --step-time 300ms`,
		Hidden:  true,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if steps <= 0 || stepTime <= 0 {
				return usageErr("--steps and --step-time must be positive")
			}
			return a.demoJob(cmd.Context(), steps, stepTime)
		},
	}
	cmd.Flags().IntVar(&steps, "steps", 6, "steps to count")
	cmd.Flags().DurationVar(&stepTime, "step-time", 300*time.Millisecond, "how long a step takes")
	return cmd
}

func (a *app) demoJob(ctx context.Context, steps int, stepTime time.Duration) error {
	id := os.Getenv("HERALD_ID")
	done := 0
	if cp := os.Getenv("HERALD_CHECKPOINT"); cp != "" {
		var total int
		if _, err := fmt.Sscanf(cp, "step=%d/%d", &done, &total); err != nil {
			return fmt.Errorf("checkpoint %q is not step=K/N: %w", cp, err)
		}
		fmt.Fprintf(a.stdout, "%s resuming from checkpoint %q (saved in term %s)\n", id, cp, os.Getenv("HERALD_CHECKPOINT_TERM"))
	} else {
		fmt.Fprintf(a.stdout, "%s starting from step 0: no checkpoint yet\n", id)
	}
	if done >= steps {
		fmt.Fprintf(a.stdout, "%s: the job is complete (%d/%d); nothing left to do\n", id, done, steps)
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for k := done + 1; k <= steps; k++ {
		t := time.NewTimer(stepTime)
		select {
		case <-ctx.Done():
			t.Stop()
			fmt.Fprintf(a.stdout, "%s: stopped at step %d/%d\n", id, k-1, steps)
			return &exitError{code: 143}
		case <-t.C:
		}
		put := exec.CommandContext(ctx, exe, "checkpoint", "put", fmt.Sprintf("step=%d/%d", k, steps))
		put.Stdout, put.Stderr = a.stdout, a.stderr
		if err := put.Run(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == exitNotLeader {
				fmt.Fprintf(a.stdout, "%s: checkpoint of step %d refused, no longer the leader; stopping\n", id, k)
				return &exitError{code: exitNotLeader}
			}
			return fmt.Errorf("checkpoint step %d: %w", k, err)
		}
		fmt.Fprintf(a.stdout, "%s: step %d/%d done and checkpointed\n", id, k, steps)
	}
	return nil
}
