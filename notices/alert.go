package notices

import (
	"context"
	"fmt"
	"log/slog"
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
		Payload: map[string]any{"event": "alert:" + strconv.FormatInt(a.ID, 10), "kind": "alert", "alert": a, "table": table, "subject": subject, "text": text, "url": pageURL},
	}
}

// AlertSender returns a function for monitor.WithAlerts that enqueues each alert for the
// subscribers of its rule's table. tableOf names a rule's table ("" when it has none).
func (s *Service) AlertSender(tableOf func(rule string) string, log *slog.Logger) func(ctx context.Context, alerts []rules.Alert) {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, alerts []rules.Alert) {
		for _, a := range alerts {
			page := ""
			if base := s.opt.Notify.PublicURL; base != "" {
				page = base + "/rules/" + a.Rule
			}
			if _, err := s.outbox.Enqueue(ctx, AlertMessage(a, tableOf(a.Rule), page)); err != nil {
				log.Error("alert not enqueued", "alert", a.ID, "rule", a.Rule, "err", err)
			}
		}
	}
}
