-- once, from the entry node
CREATE TABLE `shop`.`orders__v2_local` ON CLUSTER `trueup` (`id` UInt64, `d` Date, `amount` Nullable(Decimal(18, 2))) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/shop/orders__v2_local', '{replica}') PARTITION BY `d` ORDER BY (`id`);
CREATE TABLE `shop`.`orders__v2` ON CLUSTER `trueup` AS `shop`.`orders__v2_local` ENGINE = Distributed('trueup', 'shop', 'orders__v2_local', cityHash64(`id`));
-- repoint, on every node at once: prepare
-- repoint, on every node at once: switch
CREATE OR REPLACE VIEW `orders` AS SELECT * FROM `orders__v2`;
-- repoint, on every node at once: clean up
-- undo a failed create
DROP TABLE IF EXISTS `shop`.`orders__v2` ON CLUSTER `trueup`;
DROP TABLE IF EXISTS `shop`.`orders__v2_local` ON CLUSTER `trueup`;
