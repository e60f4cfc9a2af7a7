-- on every node
CREATE TABLE `shop`.`orders__v2_local` (`id` UInt64, `d` Date, `amount` Nullable(Decimal(18, 2))) ENGINE = MergeTree() PARTITION BY `d` ORDER BY (`id`);
CREATE TABLE `shop`.`orders__v2` AS `shop`.`orders__v2_local` ENGINE = Distributed('trueup', 'shop', 'orders__v2_local', cityHash64(`id`));
-- repoint, on every node at once: prepare
CREATE VIEW `orders__next_abc` AS SELECT * FROM `orders__v2`;
-- repoint, on every node at once: switch
RENAME TABLE `orders` TO `orders__old_abc`, `orders__next_abc` TO `orders`;
-- repoint, on every node at once: clean up
DROP TABLE IF EXISTS `orders__old_abc`;
-- undo a failed create
DROP TABLE IF EXISTS `shop`.`orders__v2`;
DROP TABLE IF EXISTS `shop`.`orders__v2_local`;
