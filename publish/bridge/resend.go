package bridge

// A sink that keeps every group's current state (JetStream's owners
// bucket, Kafka's owners topic) and finds that store deleted while the
// bridge runs makes it again (publish.StateKeeper); the pipeline then
// writes every group's current state to that sink alone, as snapshots
// without gap (see publish.Pipeline.Observed). The pipeline knows that
// state: it is what the bridge published. What the bridge adds is which
// groups it observes now, so that a group it stopped observing is not
// written again.

// observes reports whether the bridge observes group now.
func (b *Bridge) observes(group string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.groups[group]
	return ok
}
