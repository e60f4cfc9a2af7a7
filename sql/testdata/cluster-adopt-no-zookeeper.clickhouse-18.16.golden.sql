-- adopt orders, every node answering
-- on every node
CREATE TABLE `shop`.`orders__v1` AS `shop`.`orders_local` ENGINE = Distributed('trueup', 'shop', 'orders__v1_local', cityHash64(id));
-- on every node at once: prepare
CREATE VIEW `orders__adopting` AS SELECT * FROM `orders__v1`;
-- on every node
RENAME TABLE `shop`.`orders_local` TO `shop`.`orders__v1_local`;
-- on every node at once: switch, then clean up
RENAME TABLE `orders` TO `orders__adopted`, `orders__adopting` TO `orders`;
DROP TABLE IF EXISTS `orders__adopted`;
-- undo
-- on every node
CREATE TABLE `shop`.`orders__unadopting` AS `shop`.`orders__v1_local` ENGINE = Distributed('trueup', 'shop', 'orders_local', cityHash64(id));
RENAME TABLE `shop`.`orders__v1_local` TO `shop`.`orders_local`;
-- on every node at once: switch
RENAME TABLE `orders` TO `orders__adopted`, `orders__unadopting` TO `orders`;
-- on every node
DROP TABLE IF EXISTS `shop`.`orders__v1`;
-- on every node: clean up
DROP TABLE IF EXISTS `orders__adopted`;
