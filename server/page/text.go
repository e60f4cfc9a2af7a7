package page

import "regexp"

// datePattern finds a date, with its time and zone if it has them, in running text.
var datePattern = regexp.MustCompile(`\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?(?: UTC)?`)

// textPart is a piece of running text: a date, kept on one line, or the words between.
type textPart struct {
	Text string
	Date bool
}

// textParts cuts s into its dates and the words between them.
func textParts(s string) []textPart {
	var out []textPart
	at := 0
	for _, m := range datePattern.FindAllStringIndex(s, -1) {
		if m[0] > at {
			out = append(out, textPart{Text: s[at:m[0]]})
		}
		out = append(out, textPart{Text: s[m[0]:m[1]], Date: true})
		at = m[1]
	}
	if at < len(s) {
		out = append(out, textPart{Text: s[at:]})
	}
	return out
}
