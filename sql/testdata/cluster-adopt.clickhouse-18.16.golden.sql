-- adopt orders, every node answering
-- once, from the entry node
CREATE TABLE `shop`.`orders__v1` ON CLUSTER `trueup` AS `shop`.`orders_local` ENGINE = Distributed('trueup', 'shop', 'orders__v1_local', cityHash64(id));
-- on every node at once: prepare
CREATE VIEW `orders__adopting` AS SELECT * FROM `orders__v1`;
-- once, from the entry node
RENAME TABLE `shop`.`orders_local` TO `shop`.`orders__v1_local` ON CLUSTER `trueup`;
-- on every node at once: switch, then clean up
RENAME TABLE `orders` TO `orders__adopted`, `orders__adopting` TO `orders`;
DROP TABLE IF EXISTS `orders__adopted`;
-- undo
-- once, from the entry node
CREATE TABLE `shop`.`orders__unadopting` ON CLUSTER `trueup` AS `shop`.`orders__v1_local` ENGINE = Distributed('trueup', 'shop', 'orders_local', cityHash64(id));
RENAME TABLE `shop`.`orders__v1_local` TO `shop`.`orders_local` ON CLUSTER `trueup`;
-- on every node at once: switch
RENAME TABLE `orders` TO `orders__adopted`, `orders__unadopting` TO `orders`;
-- once, from the entry node
DROP TABLE IF EXISTS `shop`.`orders__v1` ON CLUSTER `trueup`;
-- on every node: clean up
DROP TABLE IF EXISTS `orders__adopted`;
