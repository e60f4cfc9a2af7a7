package notices

import (
	"context"
	"fmt"
	"strconv"

	"trueup/rules"
)

// AlertMessage is a monitor alert (a rule changing state) as a message to the subscribers of
// the rule's table. The event is alert:<id>, so an alert is delivered once per subscriber.
func AlertMessage(a rules.Alert, table, pageURL string) Message {
	from := string(a.From)
	if from == "" {
		from = "no result"
	}
	subject := fmt.Sprintf("Rule %s is now %s", a.Rule, a.To)
	if table != "" {
		subject += " on " + table
	}
	text := fmt.Sprintf("%s (severity %s): %s → %s at %s.\n", subject, a.Severity, from, a.To, a.At.UTC().Format("2 January 2006 15:04 UTC"))
	if a.Message != "" {
		text += "\n" + a.Message + "\n"
	}
	if pageURL != "" {
		text += "\nRule history: " + pageURL + "\n"
	}
	var tables []string
	if table != "" {
		tables = []string{table}
	}
	return Message{
		Event:   "alert:" + strconv.FormatInt(a.ID, 10),
		Tables:  tables,
		Subject: subject,
		Text:    text,
		Alert:   true,
		Card:    &Card{Title: subject, Status: fmt.Sprintf("%s → %s (severity %s)", from, a.To, a.Severity), Lines: alertLines(a.Message), URL: pageURL, Link: "Rule history"},
		Payload: map[string]any{"event": "alert:" + strconv.FormatInt(a.ID, 10), "kind": "alert", "alert": a, "table": table, "subject": subject, "text": text, "url": pageURL},
	}
}

// AlertSender hands a rule alert to the outbox, addressed to the subscribers of its rule's table
// (tableOf names it, "" when it has none): what check and serve give rules.Store.SendAlerts.
// The outbox keys a delivery by alert id and recipient, so handing an alert on again adds
// nothing; an error leaves the alert waiting in the ledger for the next sweep.
func AlertSender(ob *Outbox, publicURL string, tableOf func(rule string) string) func(context.Context, rules.Alert) error {
	return func(ctx context.Context, a rules.Alert) error {
		page := ""
		if publicURL != "" {
			page = publicURL + "/rules/" + a.Rule
		}
		_, err := ob.Enqueue(ctx, AlertMessage(a, tableOf(a.Rule), page))
		return err
	}
}

func alertLines(msg string) []string {
	if msg == "" {
		return nil
	}
	return []string{msg}
}
