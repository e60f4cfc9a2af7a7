-- The audit log: one row per write action, never updated or deleted.
CREATE SEQUENCE audit_seq START 1;
CREATE TABLE audit_log (
    id      BIGINT PRIMARY KEY DEFAULT nextval('audit_seq'),
    at_time TIMESTAMP NOT NULL,
    actor   VARCHAR NOT NULL,
    action  VARCHAR NOT NULL,
    target  VARCHAR NOT NULL DEFAULT '',
    params  JSON,
    outcome VARCHAR NOT NULL,
    detail  VARCHAR NOT NULL DEFAULT ''
);
