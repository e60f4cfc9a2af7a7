-- Self-service subscriptions: people who asked, from a public page, to be told of changes to a
-- table, an exposure or everything. One row per request; it counts only once the address has
-- confirmed it by the link mailed to it (double opt-in), and it ends by the one-click link in
-- every message or by an approver. The configured subscriptions stay in trueup.yaml.
CREATE SEQUENCE subscription_seq START 1;
CREATE TABLE subscriptions (
    id           BIGINT PRIMARY KEY DEFAULT nextval('subscription_seq'),
    email        VARCHAR NOT NULL,            -- bare, lower-cased
    follow       VARCHAR NOT NULL,            -- table:NAME, exposure:NAME or all
    alerts       BOOLEAN NOT NULL,            -- rule alerts of the followed tables too
    state        VARCHAR NOT NULL,            -- pending, active, ended
    created_at   TIMESTAMP NOT NULL,
    confirmed_at TIMESTAMP,
    ended_at     TIMESTAMP,
    ended_by     VARCHAR NOT NULL DEFAULT ''  -- the subscriber, or the approver who removed it
);
-- The key subscription links are signed with (HMAC-SHA256), made on first use: links mailed
-- before a restart stay valid after it.
CREATE TABLE subscription_key (
    id     INTEGER PRIMARY KEY,
    secret VARCHAR NOT NULL
);
