package audit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/zkherald/herald/publish"
)

// LogRead is what ReadBatches read of one log.
type LogRead struct {
	// Path is the log as given.
	Path string
	// Records counts the lines that are herald events, of any group.
	Records int64
	// Malformed joins one *LineError for each line that is no herald
	// event, each line once; nil when there is none.
	Malformed error
	// OldestRemoved says the first read found the log's oldest rotated
	// files removed (retention), as OldestRemoved tells, from the files
	// it opened: asked after the read, a file the read held whole but
	// removed since said so too.
	OldestRemoved bool
}

// ReadBatches reads the audit logs at paths (each with its rotated files)
// and hands fn the events of group ("" for every group), a batch of groups
// at a time, so that a history can be told from logs too big to hold:
// fn's logs[i] is the batch's events from paths[i], in that log's order,
// ready for Merge and History; every event of a group is in the same
// batch; and each batch's groups sort after those of the batches before
// it, as History sorts its tenures.
//
// Logs that hold no more than budget events of group are read once and
// handed over in one batch. Bigger ones are then counted, group by group,
// and read again once for each batch of groups whose events add up to no
// more than budget (a single group may exceed it: its events come
// together); on those reads a line of a group outside the batch is
// skimmed for its group, not decoded. A single group asked for is read
// once, however big.
//
// Malformed lines do not stop it (see LogRead); ctx ending, a log that
// cannot be opened or read, or fn's error does.
func ReadBatches(ctx context.Context, paths []string, group string, budget int, fn func(logs [][]publish.Event) error) ([]LogRead, error) {
	return ReadBatchesCounted(ctx, paths, group, budget, nil, fn)
}

// ReadBatchesCounted is ReadBatches that hands counted, when not nil,
// what the first read read of each log (Records and OldestRemoved so
// far) before fn's first batch.
func ReadBatchesCounted(ctx context.Context, paths []string, group string, budget int, counted func([]LogRead), fn func(logs [][]publish.Event) error) ([]LogRead, error) {
	b := &batchRead{ctx: ctx, paths: paths, reads: make([]LogRead, len(paths)), bad: make([][]error, len(paths)), badAt: map[lineKey]bool{},
		heads: newHeadsRead(len(paths))}
	for i, p := range paths {
		b.reads[i].Path = p
	}
	finish := func(err error) ([]LogRead, error) {
		for i := range b.reads {
			b.reads[i].Malformed = errors.Join(b.bad[i]...)
		}
		return b.reads, err
	}
	logs, counts, err := b.first(group, max(budget, 1))
	if err == nil && counted != nil {
		counted(slices.Clone(b.reads))
	}
	switch {
	case err != nil:
		return finish(err)
	case logs != nil:
		return finish(fn(logs))
	}
	for _, r := range batchRanges(counts, max(budget, 1)) {
		logs, err := b.batch(r)
		if err == nil {
			err = fn(logs)
		}
		if err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// batchRead is one ReadBatches call.
type batchRead struct {
	ctx   context.Context
	paths []string
	reads []LogRead
	bad   [][]error
	badAt map[lineKey]bool // the malformed lines noted, across the reads
	// again: the logs are read again for a batch. A line found malformed
	// only now was counted in Records from its group alone.
	again bool
	heads *headsRead // what the counting read saw of each log's files
}

type lineKey struct {
	file string
	line int
}

// malformed notes line error err of log i, once per line.
func (b *batchRead) malformed(i int, err error) {
	var le *LineError
	if errors.As(err, &le) {
		k := lineKey{le.File, le.Line}
		if b.badAt[k] {
			return
		}
		b.badAt[k] = true
	}
	b.bad[i] = append(b.bad[i], err)
	if b.again {
		b.reads[i].Records--
	}
}

// first reads every log once, keeping the events of group until more
// than budget are kept. It returns them when they are all (logs is then
// not nil), or else how many events each group has.
func (b *batchRead) first(group string, budget int) ([][]publish.Event, groupCounts, error) {
	logs := make([][]publish.Event, len(b.paths))
	counts := groupCounts{}
	kept, over := 0, false
	for i, p := range b.paths {
		r, err := Open(p)
		if err != nil {
			return nil, nil, err
		}
		b.heads.opened(i, r, p)
		b.reads[i].OldestRemoved = r.headGone
		err = b.each(r, i, func(line []byte) error {
			if over {
				// Counting only: the line's group, decoded only when it
				// cannot be skimmed.
				g, ok := skimGroup(line)
				if !ok {
					e, err := r.decode(line)
					if err != nil {
						return err
					}
					g = []byte(e.Group)
				}
				b.reads[i].Records++
				count(counts, g)
				saw(b.heads, i, r, g)
				return nil
			}
			e, err := r.decode(line)
			if err != nil {
				return err
			}
			b.reads[i].Records++
			saw(b.heads, i, r, e.Group)
			if group != "" && e.Group != group {
				return nil
			}
			count(counts, e.Group)
			if r.lines == sizeAfter {
				logs[i] = slices.Grow(logs[i], min(budget+1, max(0, r.expect(len(logs[i]))-len(logs[i]))))
			}
			logs[i] = append(logs[i], e)
			if kept++; group == "" && kept > budget {
				over = true
				clear(logs) // counted from here on, read again in batches
			}
			return nil
		})
		r.Close()
		if err != nil {
			return nil, nil, err
		}
	}
	if over {
		return nil, counts, nil
	}
	return logs, nil, nil
}

// batch reads the events of the groups in r from every log.
func (b *batchRead) batch(r groupRange) ([][]publish.Event, error) {
	b.again = true
	logs := make([][]publish.Event, len(b.paths))
	for i, p := range b.paths {
		rd, err := Open(p)
		if err != nil {
			return nil, err
		}
		gone, told := b.heads.gone(i, rd), map[string]bool{}
		err = b.each(rd, i, func(line []byte) error {
			if g, ok := skimGroup(line); ok && !r.holds(string(g)) {
				return nil
			}
			e, err := rd.decode(line)
			if err != nil {
				return err
			}
			if !r.holds(e.Group) {
				return nil
			}
			if gone != nil && !told[e.Group] {
				// Its first event lay in a file removed since the
				// counting read: what it held of the group is lost.
				told[e.Group] = true
				e.Gap = e.Gap || gone[b.heads.firstIn[i][e.Group]]
			}
			logs[i] = append(logs[i], e)
			return nil
		})
		rd.Close()
		if err != nil {
			return nil, err
		}
	}
	return logs, nil
}

// each hands f every line of r, log i's reader, noting the lines f finds
// malformed.
func (b *batchRead) each(r *Reader, i int, f func(line []byte) error) error {
	for {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		line, err := r.nextLine()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = f(line)
		var le *LineError
		switch {
		case errors.As(err, &le):
			b.malformed(i, err)
		case err != nil:
			return err
		}
	}
}

// groupRange is the groups from first to last, in byte order.
type groupRange struct{ first, last string }

func (r groupRange) holds(g string) bool { return r.first <= g && g <= r.last }

// groupCounts counts each group's events.
type groupCounts map[string]*int

// count counts an event of group g in c, a skimmed group's bytes as a
// decoded group's string (a key made only for a group new to c).
func count[G string | []byte](c groupCounts, g G) {
	if n := c[string(g)]; n != nil {
		*n++
		return
	}
	n := 1
	c[string(g)] = &n
}

// batchRanges cuts the groups counted, in order, into ranges of no more
// than budget events each, or of one group that alone has more.
func batchRanges(counts groupCounts, budget int) []groupRange {
	groups := make([]string, 0, len(counts))
	for g := range counts {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var out []groupRange
	n := 0
	for _, g := range groups {
		c := *counts[g]
		if len(out) > 0 && n+c <= budget {
			out[len(out)-1].last = g
			n += c
			continue
		}
		out = append(out, groupRange{g, g})
		n = c
	}
	return out
}

// groupKey is how herald's audit log writes an event's group.
var groupKey = []byte(`"group":"`)

// skimGroup returns the group of the event on line without decoding it,
// when it can tell that a decoder reading an event there would read the
// same: the line has no escapes (a key spelled with one would hide from
// the search), names one key "group" (in any case, as a decoder matches
// keys), written as herald writes it, and its value is valid UTF-8.
// Otherwise ok is false and the line must be decoded. (A line whose one
// "group" key is in a nested object names no group of its own: it is no
// event, and the decoder will say so when its batch is read.)
func skimGroup(line []byte) (group []byte, ok bool) {
	if bytes.IndexByte(line, '\\') >= 0 {
		return nil, false
	}
	at, keys := -1, 0
	for i := 0; ; i++ {
		j := bytes.IndexByte(line[i:], '"')
		if j < 0 {
			break
		}
		if i += j; isGroupKey(line[i:]) {
			keys++
			at = i
		}
	}
	if keys != 1 || len(line)-at < len(groupKey) || string(line[at:at+len(groupKey)]) != string(groupKey) {
		return nil, false
	}
	v := line[at+len(groupKey):]
	end := -1
	for j, c := range v {
		if c == '"' {
			end = j
			break
		}
		if c < 0x20 {
			return nil, false
		}
	}
	if end < 0 || !utf8.Valid(v[:end]) {
		return nil, false
	}
	return v[:end], true
}

// isGroupKey reports whether s starts with the key "group" in any case:
// the quoted word, then blanks, then a colon.
func isGroupKey(s []byte) bool {
	const word = `"group"`
	if len(s) < len(word) {
		return false
	}
	for j := 1; j < len(word)-1; j++ {
		if s[j]|0x20 != word[j] {
			return false
		}
	}
	if s[len(word)-1] != '"' {
		return false
	}
	for _, c := range s[len(word):] {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case ':':
			return true
		}
		return false
	}
	return false
}
