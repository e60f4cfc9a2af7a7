package notices

import (
	"bytes"
	"html/template"
)

// NumberRow is one row of a notice's numbers table, formatted for reading.
type NumberRow struct {
	Report, Row, Number, Before, After, Change string
}

// ReportRows lists the changing numbers of every exposure, formatted.
func ReportRows(ev Evidence) []NumberRow {
	var out []NumberRow
	for _, x := range ev.Exposures {
		for _, r := range x.Rows {
			change := ""
			if p, ok := r.PctChange(); ok {
				change = Pct(p)
			}
			out = append(out, NumberRow{x.Title, r.Label, r.Column, optNumber(r.Before), optNumber(r.After), change})
		}
	}
	return out
}

// BodyHTML renders a notice body's plain-text markup as HTML.
func BodyHTML(body string) template.HTML { return template.HTML(textToHTML(body)) } //nolint:gosec // escaped by textToHTML

// noticeTemplate lays a notice out as HTML: "content" is its state, text and numbers, as the
// Atom feed carries them; "email" is the whole message around them.
var noticeTemplate = template.Must(template.New("email").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.N.Title}}</title></head>
<body style="font-family: sans-serif; max-width: 44em; line-height: 1.45">
<h1 style="font-size: 1.4em">{{.N.Title}}</h1>
{{template "content" .}}
</body></html>
{{define "content"}}<p><strong>{{.Status}}</strong></p>
{{.Body}}
{{- if .Reports}}
<h2>Reports, before and after</h2>
<table cellpadding="4" style="border-collapse: collapse">
<tr><th align="left">Report</th><th align="left">Row</th><th align="left">Number</th><th align="right">Before</th><th align="right">After</th><th align="right">Change</th></tr>
{{- range .Reports}}
<tr><td>{{.Report}}</td><td>{{.Row}}</td><td>{{.Number}}</td><td align="right">{{.Before}}</td><td align="right">{{.After}}</td><td align="right">{{.Change}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- if .Partitions}}
<h2>{{if .Measured}}Rows and totals{{else}}Rows{{end}} per {{.Unit}}, old and new</h2>
{{- if .LeftOut}}
<p>{{.LeftOut}}</p>
{{- end}}
<table cellpadding="4" style="border-collapse: collapse">
<tr><th align="left">Table</th><th align="left">{{.Unit}}</th><th align="right">Old rows</th><th align="right">New rows</th><th align="right">{{if .Measured}}Row change{{else}}Change{{end}}</th>
{{- if .Measured}}<th align="left">Measure</th><th align="right">Old total</th><th align="right">New total</th><th align="right">Total change</th>{{end}}<th align="left">Verdict</th></tr>
{{- range .Partitions}}
<tr><td>{{.Table}}</td><td>{{.Partition}}</td><td align="right">{{.Old}}</td><td align="right">{{.New}}</td><td align="right">{{.Change}}</td>
{{- if $.Measured}}<td>{{.Measure}}</td><td align="right">{{.OldTotal}}</td><td align="right">{{.NewTotal}}</td><td align="right">{{.TotalChange}}</td>{{end}}<td>{{if .Unexpected}}<strong>{{.Verdict}}</strong>{{else}}{{.Verdict}}{{end}}</td></tr>
{{- end}}
</table>
{{- end}}
<p><a href="{{.Page}}">Read the notice online</a>{{if .Ack}} · <a href="{{.Ack}}">Let us know you have read it</a>{{end}}</p>
{{- end}}`))

// HTML is the whole notice as an HTML email: the title, its state, the body, the numbers and
// the links to its page and to the recipient's acknowledgement.
func HTML(n Notice, page, ack string) string { return render(n, page, ack, "email") }

// ContentHTML is a notice's state, text and numbers as HTML, without a document around them: an
// Atom entry's content.
func ContentHTML(n Notice, page string) string { return render(n, page, "", "content") }

func render(n Notice, page, ack, name string) string {
	parts := PartitionRows(n.Evidence)
	var b bytes.Buffer
	err := noticeTemplate.ExecuteTemplate(&b, name, map[string]any{
		"N": n, "Status": stateLine(n), "Body": BodyHTML(Body(n)), "Reports": ReportRows(n.Evidence),
		"Partitions": parts, "Measured": measured(parts), "LeftOut": LeftOut(n.Evidence), "Unit": partitionUnit(n.Evidence),
		"Page": template.URL(page), "Ack": template.URL(ack),
	})
	if err != nil {
		panic("notices: email template: " + err.Error()) // the template and its data are fixed
	}
	return b.String()
}
