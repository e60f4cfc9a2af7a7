package notices

import (
	"encoding/xml"
	"strconv"
	"time"
)

// Atom feed elements (RFC 4287), only what readers use.
type atomFeed struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	Title   string      `xml:"title"`
	ID      string      `xml:"id"`
	Updated string      `xml:"updated"`
	Links   []atomLink  `xml:"link"`
	Author  atomPerson  `xml:"author"`
	Entries []atomEntry `xml:"entry"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr,omitempty"`
	Href string `xml:"href,attr"`
	Type string `xml:"type,attr,omitempty"`
}

type atomPerson struct {
	Name  string `xml:"name"`
	Email string `xml:"email,omitempty"`
}

type atomEntry struct {
	Title      string         `xml:"title"`
	ID         string         `xml:"id"`
	Updated    string         `xml:"updated"`
	Published  string         `xml:"published"`
	Links      []atomLink     `xml:"link"`
	Author     atomPerson     `xml:"author"`
	Categories []atomCategory `xml:"category"`
	Summary    string         `xml:"summary"`
	Content    atomText       `xml:"content"`
}

type atomCategory struct {
	Term string `xml:"term,attr"`
}

type atomText struct {
	Type string `xml:"type,attr"`
	Text string `xml:",chardata"`
}

// Feed renders notices as an Atom feed. Drafts are left out: a feed reader would show them to
// stakeholders before anyone decided to tell them (List with Told leaves out, besides, the
// drafts withdrawn before anyone was told: a cancelled run's). base is the absolute URL prefix of the pages
// (https://trueup.example.com): Atom ids must be IRIs and feed readers do not resolve relative
// links. self is the feed's own path; table, when set, names the feed's table. now is when the
// feed is made: its updated time when it lists no notice.
func Feed(ns []Notice, base, self, table string, now time.Time) ([]byte, error) {
	title := "trueup change notices"
	if table != "" {
		title += ": " + table
	}
	f := atomFeed{
		Title:  title,
		ID:     base + self,
		Links:  []atomLink{{Rel: "self", Href: base + self, Type: "application/atom+xml"}, {Rel: "alternate", Href: base + "/notices", Type: "text/html"}},
		Author: atomPerson{Name: "trueup"},
	}
	var updated time.Time
	for _, n := range ns {
		if n.State == StateDraft {
			continue
		}
		if n.UpdatedAt.After(updated) {
			updated = n.UpdatedAt
		}
		page := base + "/notices/" + strconv.FormatInt(n.ID, 10)
		author := atomPerson{Name: n.Evidence.Owner}
		if author.Name == "" {
			author.Name = "trueup"
		}
		e := atomEntry{
			Title:     n.Title + " (" + string(n.State) + ")",
			ID:        page,
			Updated:   n.UpdatedAt.UTC().Format(time.RFC3339),
			Published: n.CreatedAt.UTC().Format(time.RFC3339),
			Links:     []atomLink{{Rel: "alternate", Href: page, Type: "text/html"}},
			Author:    author,
			Summary:   stateLine(n),
			Content:   atomText{Type: "html", Text: ContentHTML(n, page)},
		}
		for _, t := range n.Tables {
			e.Categories = append(e.Categories, atomCategory{Term: t})
		}
		f.Entries = append(f.Entries, e)
	}
	if updated.IsZero() {
		// Atom requires an updated time; with no notice to take it from, the feed is as new as
		// this answer (1970, as before, reads as a broken feed).
		updated = now
	}
	f.Updated = updated.UTC().Format(time.RFC3339)
	out, err := xml.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}
