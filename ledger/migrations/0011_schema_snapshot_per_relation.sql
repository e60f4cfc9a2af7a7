-- A schema rule keeps one snapshot per target and relation it has run on, so a rule pointed at
-- another table or target (--target) compares with that relation's own columns. The target is
-- named as before: the rule's own target: key, or '' for the configured default.
CREATE TABLE rule_schemas_by_relation (
    rule        VARCHAR NOT NULL,
    target      VARCHAR NOT NULL,
    relation    VARCHAR NOT NULL,
    columns     VARCHAR NOT NULL,
    recorded_at TIMESTAMP NOT NULL,
    PRIMARY KEY (rule, target, relation)
);
INSERT INTO rule_schemas_by_relation SELECT rule, target, relation, CAST(columns AS VARCHAR), recorded_at FROM rule_schemas;
DROP TABLE rule_schemas;
ALTER TABLE rule_schemas_by_relation RENAME TO rule_schemas;
