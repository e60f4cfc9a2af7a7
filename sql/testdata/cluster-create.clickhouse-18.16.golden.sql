-- create table customers, once, from the entry node
CREATE TABLE `shop`.`customers_local` ON CLUSTER `trueup` (`customer_id` Int64, `region` String, `signup` Date) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/shop/customers_local', '{replica}') ORDER BY (`customer_id`);
CREATE TABLE `shop`.`customers` ON CLUSTER `trueup` AS `shop`.`customers_local` ENGINE = Distributed('trueup', 'shop', 'customers_local', cityHash64(`customer_id`));
-- create table events (no order key), once, from the entry node
CREATE TABLE `shop`.`events_local` ON CLUSTER `trueup` (`customer_id` Int64) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/shop/events_local', '{replica}') ORDER BY tuple();
CREATE TABLE `shop`.`events` ON CLUSTER `trueup` AS `shop`.`events_local` ENGINE = Distributed('trueup', 'shop', 'events_local', rand());
-- create table orders__v1 as a query, once, from the entry node
CREATE TABLE `shop`.`orders__v1_local` ON CLUSTER `trueup` (`order_id` Int64, `order_date` Date, `amount` Nullable(Decimal(18, 2))) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/shop/orders__v1_local', '{replica}') PARTITION BY `order_date` ORDER BY (`order_id`, `order_date`);
CREATE TABLE `shop`.`orders__v1` ON CLUSTER `trueup` AS `shop`.`orders__v1_local` ENGINE = Distributed('trueup', 'shop', 'orders__v1_local', cityHash64(`order_id`));
-- fill it through the Distributed table, from the entry node (then SYSTEM SYNC REPLICA on each replica)
INSERT INTO `shop`.`orders__v1` SELECT * FROM (
SELECT order_id, order_date, sum(amount) AS amount FROM orders_raw WHERE order_date >= ? AND order_date < ? GROUP BY order_id, order_date
);
-- undo a create or fill that failed, once, from the entry node
DROP TABLE IF EXISTS `shop`.`orders__v1` ON CLUSTER `trueup`;
DROP TABLE IF EXISTS `shop`.`orders__v1_local` ON CLUSTER `trueup`;
