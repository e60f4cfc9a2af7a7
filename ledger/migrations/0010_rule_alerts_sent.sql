-- rule_alerts.delivered_at is now written when an alert is handed to the notification outbox,
-- and every process hands on the alerts still without one (see rules.Store.SendAlerts). Before,
-- it was never written: `trueup serve` handed its own alerts on as they were raised, and those
-- `trueup check` raised were never sent. Alerts recorded before this are history: none is
-- handed on at the upgrade.
UPDATE rule_alerts SET delivered_at = at_time WHERE delivered_at IS NULL;
