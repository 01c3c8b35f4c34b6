package ident

import (
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the generic form: an id is meant to be read in an event, not
// to carry a whole payload.
const (
	maxTextID = 256 // runes
	maxHexID  = 32  // bytes shown
)

// decodeGeneric is the data as text when it is text, else as hex ("0x…",
// and Fields["encoding"] "hex", so that a note can say which: text may
// begin with "0x" too). Long data is cut, and the cut said with "…";
// Fields["bytes"] keeps the whole length.
func decodeGeneric(data []byte) Identity {
	id := Identity{Format: Generic, Fields: map[string]string{"bytes": strconv.Itoa(len(data))}}
	if s := strings.TrimSpace(string(data)); isText(s) {
		id.ID = cut(s, maxTextID)
		return id
	}
	n := min(len(data), maxHexID)
	id.Fields["encoding"] = "hex"
	id.ID = "0x" + hex.EncodeToString(data[:n])
	if n < len(data) {
		id.ID += "…"
	}
	return id
}

// isText reports whether s is valid UTF-8 without control characters
// (other than tabs and line breaks).
func isText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}

// cut keeps the first n runes of s, marking a cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// textField is s when it is short printable text; ok is false otherwise,
// so that a decoder never passes binary junk on as an id.
func textField(s string) (string, bool) {
	if s == "" || !isText(s) || strings.ContainsAny(s, "\n\r") {
		return "", false
	}
	return cut(s, maxTextID), true
}
