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
	live    []string            // per log, the live log read, or ""
	liveTo  []int               // per log, the rotation that renames it
}

func newHeadsRead(logs int) *headsRead {
	h := &headsRead{files: make([][]string, logs), firstIn: make([]map[string]string, logs),
		live: make([]string, logs), liveTo: make([]int, logs)}
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
		} else {
			h.live[i], h.liveTo[i] = path, nextSeq(r.last)
		}
	}
}

// liveGone reports whether the live log the counting read read of log i
// was rotated (rd, a batch's reader, lists a rotation at or past its
// number) into a file rd does not find: retention removed it with the
// older ones, and with it the first events of the groups it began. Not
// counted, the groups were told from what the later files held, unmarked
// (TestHistoryInBatchesMarksAGroupOfALiveLogRotatedAndRemovedBetweenThem).
func (h *headsRead) liveGone(i int, rd *Reader, has map[string]bool) bool {
	return h.live[i] != "" && rd.last >= h.liveTo[i] && !has[rotatedName(h.live[i], h.liveTo[i])]
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
	if h.liveGone(i, rd, has) {
		gone = map[string]bool{h.live[i]: true}
	}
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
