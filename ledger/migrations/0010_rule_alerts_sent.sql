-- rule_alerts.delivered_at is now written when an alert is handed to the notification outbox,
-- and every process hands on the alerts still without one (see rules.Store.SendAlerts). Before,
-- it was never written: `trueup serve` handed its own alerts on as they were raised, and those
-- `trueup check` raised were never sent. Of those older alerts only each rule's newest, which
-- says what state the rule is in now, is still to be handed on (one serve already sent is not
-- sent again: the outbox knows it); the ones before it describe states long gone.
UPDATE rule_alerts SET delivered_at = at_time
WHERE delivered_at IS NULL AND id NOT IN (SELECT max(id) FROM rule_alerts GROUP BY rule);
