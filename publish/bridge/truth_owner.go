package bridge

// truthOwner is the node the bridge last saw own group ("" for none, or a
// group it does not know).
func (b *Bridge) truthOwner(group string) string {
	b.truth.mu.Lock()
	defer b.truth.mu.Unlock()
	if g := b.truth.groups[group]; g != nil {
		return g.owner
	}
	return ""
}
