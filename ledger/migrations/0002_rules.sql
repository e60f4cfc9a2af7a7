-- Rules: every run of `trueup check`, of a schedule or of a run-now button, with one result per
-- rule; the current state of each rule, the alerts raised when it changed, the column snapshots
-- of schema rules and the last scheduled slot the monitor ran per rule.
CREATE SEQUENCE rule_run_seq START 1;
CREATE TABLE rule_runs (
    id          BIGINT PRIMARY KEY DEFAULT nextval('rule_run_seq'),
    trigger     VARCHAR NOT NULL,            -- cli, schedule, manual
    actor       VARCHAR NOT NULL DEFAULT '',
    started_at  TIMESTAMP NOT NULL,
    finished_at TIMESTAMP NOT NULL,
    queries     INTEGER NOT NULL,
    rules       INTEGER NOT NULL,
    passed      INTEGER NOT NULL,
    failed      INTEGER NOT NULL,
    errors      INTEGER NOT NULL
);
CREATE TABLE rule_results (
    run_id             BIGINT NOT NULL,
    rule               VARCHAR NOT NULL,
    kind               VARCHAR NOT NULL,
    severity           VARCHAR NOT NULL,
    target             VARCHAR NOT NULL DEFAULT '',
    relation           VARCHAR NOT NULL DEFAULT '',
    status             VARCHAR NOT NULL,     -- pass, fail, error
    violations         BIGINT NOT NULL,
    failing_partitions JSON NOT NULL,
    sample             JSON NOT NULL,
    message            VARCHAR NOT NULL DEFAULT '',
    sql                VARCHAR NOT NULL DEFAULT '',
    duration_ms        DOUBLE NOT NULL,
    at_time            TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, rule)
);
CREATE TABLE rule_state (
    rule        VARCHAR PRIMARY KEY,
    status      VARCHAR NOT NULL,
    since       TIMESTAMP NOT NULL,          -- when it entered this status
    last_run_id BIGINT NOT NULL,
    last_at     TIMESTAMP NOT NULL
);
CREATE SEQUENCE rule_alert_seq START 1;
CREATE TABLE rule_alerts (
    id           BIGINT PRIMARY KEY DEFAULT nextval('rule_alert_seq'),
    rule         VARCHAR NOT NULL,
    run_id       BIGINT NOT NULL,
    at_time      TIMESTAMP NOT NULL,
    from_status  VARCHAR NOT NULL,           -- '' when the rule had no result before
    to_status    VARCHAR NOT NULL,
    severity     VARCHAR NOT NULL,
    message      VARCHAR NOT NULL DEFAULT '',
    delivered_at TIMESTAMP                   -- set by the notification channels once sent
);
CREATE TABLE rule_schemas (
    rule        VARCHAR PRIMARY KEY,
    target      VARCHAR NOT NULL,
    relation    VARCHAR NOT NULL,
    columns     JSON NOT NULL,
    recorded_at TIMESTAMP NOT NULL
);
CREATE TABLE monitor_slots (
    rule      VARCHAR PRIMARY KEY,
    schedule  VARCHAR NOT NULL,
    last_slot TIMESTAMP NOT NULL,            -- the newest scheduled slot that has been run
    updated_at TIMESTAMP NOT NULL
);
