-- create like live, on every node
CREATE TABLE `shop`.`orders__v2_local` AS `shop`.`orders__v1_local` ENGINE = MergeTree() PARTITION BY toYYYYMM(order_date) ORDER BY order_id SETTINGS index_granularity = 8192;
CREATE TABLE `shop`.`orders__v2` AS `shop`.`orders__v2_local` ENGINE = Distributed('trueup', 'shop', 'orders__v2_local', cityHash64(order_id));
-- shard 1's rows of a partition, staged on its writer
SELECT * FROM (SELECT CAST(`order_id` AS Int64) AS `order_id`, CAST(`order_date` AS Date) AS `order_date`, CAST(`amount` AS Nullable(Decimal(18, 2))) AS `amount` FROM (SELECT * FROM orders_raw WHERE order_date >= {start:Date} AND order_date < {end:Date})) WHERE ((cityHash64(order_id)) % 2) >= 0 AND ((cityHash64(order_id)) % 2) < 1;
-- shard 2's rows of a partition, staged on its writer
SELECT * FROM (SELECT CAST(`order_id` AS Int64) AS `order_id`, CAST(`order_date` AS Date) AS `order_date`, CAST(`amount` AS Nullable(Decimal(18, 2))) AS `amount` FROM (SELECT * FROM orders_raw WHERE order_date >= {start:Date} AND order_date < {end:Date})) WHERE ((cityHash64(order_id)) % 2) >= 1 AND ((cityHash64(order_id)) % 2) < 2;
-- drop the version
DROP TABLE IF EXISTS `shop`.`orders__v2`;
DROP TABLE IF EXISTS `shop`.`orders__v2_local`;
