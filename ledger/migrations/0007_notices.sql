-- Notices: stakeholder change notices with every state change and text revision kept, the
-- people each announced notice went to (with their acknowledgement), and the durable outbox
-- every delivery goes through: one row per (event, recipient), unique by key, so a crash or an
-- unreachable receiver never loses a message and never sends it twice.
CREATE SEQUENCE notice_seq START 1;
CREATE TABLE notices (
    id          BIGINT PRIMARY KEY DEFAULT nextval('notice_seq'),
    state       VARCHAR NOT NULL,            -- draft, announced, completed, rolled-back, withdrawn
    title       VARCHAR NOT NULL,
    body        VARCHAR NOT NULL,            -- the current revision's text
    revision    INTEGER NOT NULL,
    target      VARCHAR NOT NULL DEFAULT '',
    backfill    VARCHAR NOT NULL DEFAULT '',
    run_id      BIGINT NOT NULL DEFAULT 0,
    tables      JSON NOT NULL,               -- ["orders", "daily_revenue"]
    versions    JSON NOT NULL,               -- {"orders": 2}: the versions whose swap completes it
    evidence    JSON NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
CREATE TABLE notice_transitions (
    notice_id   BIGINT NOT NULL,
    seq         INTEGER NOT NULL,
    from_state  VARCHAR NOT NULL,            -- '' for the draft's creation
    to_state    VARCHAR NOT NULL,
    at_time     TIMESTAMP NOT NULL,
    actor       VARCHAR NOT NULL,
    reason      VARCHAR NOT NULL DEFAULT '',
    PRIMARY KEY (notice_id, seq)
);
CREATE TABLE notice_revisions (
    notice_id   BIGINT NOT NULL,
    revision    INTEGER NOT NULL,
    title       VARCHAR NOT NULL,
    body        VARCHAR NOT NULL,
    at_time     TIMESTAMP NOT NULL,
    actor       VARCHAR NOT NULL,
    PRIMARY KEY (notice_id, revision)
);
CREATE TABLE notice_recipients (
    notice_id   BIGINT NOT NULL,
    recipient   VARCHAR NOT NULL,            -- webhook:NAME or email:ADDRESS
    token       VARCHAR NOT NULL UNIQUE,     -- the secret part of the acknowledgement link
    added_at    TIMESTAMP NOT NULL,
    acked_at    TIMESTAMP,
    PRIMARY KEY (notice_id, recipient)
);
CREATE SEQUENCE outbox_seq START 1;
CREATE TABLE outbox (
    id            BIGINT PRIMARY KEY DEFAULT nextval('outbox_seq'),
    key           VARCHAR NOT NULL UNIQUE,   -- event key + recipient: the idempotency key receivers see
    event         VARCHAR NOT NULL,          -- e.g. notice:7:announced, alert:12
    recipient     VARCHAR NOT NULL,          -- webhook:NAME or email:ADDRESS
    notice_id     BIGINT NOT NULL DEFAULT 0,
    subject       VARCHAR NOT NULL,
    text_body     VARCHAR NOT NULL,
    html_body     VARCHAR NOT NULL,
    payload       JSON NOT NULL,             -- the webhook body
    state         VARCHAR NOT NULL,          -- pending, delivered, failed (gave up)
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_at       TIMESTAMP NOT NULL,
    last_error    VARCHAR NOT NULL DEFAULT '',
    created_at    TIMESTAMP NOT NULL,
    delivered_at  TIMESTAMP
);
