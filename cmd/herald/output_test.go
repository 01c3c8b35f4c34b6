package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestOutputWriteErrorsAreReported: output that cannot be written (stdout
// on a full disk) is an error on stderr and exit 1, for help and for
// bridge shard-of as for every other command's output, not exit 0 with
// nothing written.
func TestOutputWriteErrorsAreReported(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{
		{"--help"},
		{},
		{"help", "who"},
		{"who", "--help"},
		{"bridge", "shard-of", "--shards", "2", "/locks/orders"},
		{"version"}, // already reported: the same message and code
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, heraldBin, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &stderr
		err := cmd.Run()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("herald %v > /dev/full: %v, want exit %d reporting the write error; stderr: %s", args, err, exitFailure, stderr.String())
		}
	}
}
