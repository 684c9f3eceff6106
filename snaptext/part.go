package snaptext

import (
	"strings"
	"unicode/utf8"
)

// Part is the part of a snapshot's text that starts at byte offset from
// and holds at most budget bytes: whole lines, but for a line longer
// than the budget alone, which is cut (at a character's start) and goes on in the
// next part. next is where the next part starts, 0 after the last. The
// parts of a text from 0 cover it once, in order: nothing is left out or
// repeated. context is the lines of the ancestors of the line the part
// starts in, not part of the text, for a reader of a part that starts
// deep in the tree. ok is false when from is not a character's start in
// the text.
func Part(text string, from, budget int) (part string, next int, context string, ok bool) {
	if from < 0 || from > len(text) || (from < len(text) && !utf8.RuneStart(text[from])) {
		return "", 0, "", false
	}
	budget = max(budget, 1)
	end := from
	for end < len(text) {
		lineEnd := len(text)
		if nl := strings.IndexByte(text[end:], '\n'); nl >= 0 {
			lineEnd = end + nl + 1
		}
		if lineEnd-from > budget {
			break
		}
		end = lineEnd
	}
	if end == from && from < len(text) { // a line longer than the budget: cut
		end = from + budget
		for end > from && !utf8.RuneStart(text[end]) {
			end--
		}
		if end == from { // the budget is less than one character
			_, size := utf8.DecodeRuneInString(text[from:])
			end = from + size
		}
	}
	if end < len(text) {
		next = end
	}
	lineStart := strings.LastIndexByte(text[:from], '\n') + 1
	return text[from:end], next, ancestors(text, lineStart), true
}

// ancestors are the lines of the nodes the line at offset at is under,
// outermost first: for each lower indentation, the nearest line before
// it.
func ancestors(text string, at int) string {
	if at == 0 {
		return ""
	}
	depth := indent(text[at:])
	var lines []string
	for end := at - 1; end > 0 && depth > 0; {
		start := strings.LastIndexByte(text[:end], '\n') + 1
		line := text[start:end]
		if d := indent(line); d < depth {
			lines = append(lines, line)
			depth = d
		}
		end = start - 1
	}
	var b strings.Builder
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString(lines[i] + "\n")
	}
	return b.String()
}

// indent counts a line's leading spaces.
func indent(line string) int {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}
