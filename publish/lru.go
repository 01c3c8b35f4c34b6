package publish

import "container/list"

// idSet remembers the most recent ids, forgetting the oldest beyond size.
type idSet struct {
	size  int
	order *list.List // front = newest; values are ids
	index map[string]*list.Element
}

func newIDSet(size int) *idSet {
	return &idSet{size: size, order: list.New(), index: make(map[string]*list.Element, size)}
}

// add records id and reports whether it was already present (refreshing it).
func (s *idSet) add(id string) bool {
	if el, ok := s.index[id]; ok {
		s.order.MoveToFront(el)
		return true
	}
	s.index[id] = s.order.PushFront(id)
	if s.order.Len() > s.size {
		old := s.order.Back()
		s.order.Remove(old)
		delete(s.index, old.Value.(string))
	}
	return false
}
