// Package spawn starts child processes from one thread that never ends.
//
// On Linux the kernel sends a child's Pdeathsig when the thread that
// started it ends, not the process (go.dev/issue/27505), and Go ends a
// thread when a goroutine locked to it returns. A child started with
// Pdeathsig from such a thread is killed while its parent lives: a
// command while herald still holds its leadership (the next holder's
// copy would then start beside whatever it left), a test's ZooKeeper
// under the test binary's other tests. Start runs every start on one
// thread locked for good; elsewhere there is no Pdeathsig and it is
// cmd.Start.
package spawn

// LoopFunc is the function of the goroutine that starts the children on
// Linux, on its thread for good: test binaries' checks for leaked
// goroutines pass it over.
const LoopFunc = "github.com/zkherald/herald/internal/spawn.loop"
