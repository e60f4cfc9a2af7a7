-- A swap or rollback on a cluster target, node by node: each node's row is written, state
-- intent, before the views are repointed, and its outcome after: switched (the node's views read
-- the new versions), not switched (detail says why: it was lost part-way), undone (a
-- `trueup swap --resume TABLE --undo` put it back). A publish some of whose nodes did not switch
-- stays an intent in swaps (half done: the nodes answer from different versions) until start-up
-- recovery or `trueup swap --resume TABLE` completes it, or `--resume --undo` takes it back.
CREATE TABLE swap_nodes (
    swap_id BIGINT NOT NULL,
    node    VARCHAR NOT NULL,
    shard   INTEGER NOT NULL,
    replica INTEGER NOT NULL,
    state   VARCHAR NOT NULL,
    detail  VARCHAR NOT NULL DEFAULT '',
    at_time TIMESTAMP NOT NULL,
    PRIMARY KEY (swap_id, node)
);
