package audit

// headsRead is what ReadBatches' counting read saw of each log: the files
// it read, and the file each group's first event lay in. A rotated file
// removed after that read (retention) and before a batch's took from the
// batch the events of the groups whose first event it held: the first
// event the batch reads of each such group is marked a gap, as after a
// hole. Asked instead whether the oldest files were removed, a batch
// marked GAP maybe every group whose events begin with a change, those
// the removed file held nothing of too.
type headsRead struct {
	files   [][]string          // per log, the files read (plainName)
	firstIn []map[string]string // per log, each group's first file (plainName)
}

func newHeadsRead(logs int) *headsRead {
	h := &headsRead{files: make([][]string, logs), firstIn: make([]map[string]string, logs)}
	for i := range h.firstIn {
		h.firstIn[i] = map[string]string{}
	}
	return h
}

// opened notes the rotated files r, the counting read's reader of the
// log at path (log i), reads. The live log is no file retention removes:
// a batch that opens the logs between a rotation's rename of it and the
// opening of the new one finds none, and its events in the newest
// rotated file; counted as removed, every group whose first event lay in
// it was marked.
func (h *headsRead) opened(i int, r *Reader, path string) {
	for _, n := range r.names {
		if n != path {
			h.files[i] = append(h.files[i], plainName(n))
		}
	}
}

// saw notes an event of group g read by r, log i's reader in the
// counting read, a skimmed group's bytes as a decoded group's string.
func saw[G string | []byte](h *headsRead, i int, r *Reader, g G) {
	if _, ok := h.firstIn[i][string(g)]; !ok {
		h.firstIn[i][string(g)] = plainName(r.names[r.i])
	}
}

// gone names the files of log i the counting read read that rd, a
// batch's reader of it, does not: removed since; nil when none is.
func (h *headsRead) gone(i int, rd *Reader) map[string]bool {
	has := map[string]bool{}
	for _, n := range rd.names {
		has[plainName(n)] = true
	}
	var gone map[string]bool
	for _, n := range h.files[i] {
		if !has[n] {
			if gone == nil {
				gone = map[string]bool{}
			}
			gone[n] = true
		}
	}
	return gone
}

// plainName is the file name n without a readable compressed file's
// extension: a rotated file compressed in place between the reads is the
// same file.
func plainName(n string) string {
	plain, _ := cutReadableExt(n)
	return plain
}
