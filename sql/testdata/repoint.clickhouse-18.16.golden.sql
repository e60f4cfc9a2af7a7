CREATE VIEW `orders__next_abc` AS SELECT * FROM `orders__v2`;
CREATE VIEW `daily_revenue__next_abc` AS SELECT * FROM `daily_revenue__v2`;
RENAME TABLE `orders` TO `orders__old_abc`, `orders__next_abc` TO `orders`, `daily_revenue` TO `daily_revenue__old_abc`, `daily_revenue__next_abc` TO `daily_revenue`;
DROP TABLE IF EXISTS `orders__old_abc`;
DROP TABLE IF EXISTS `daily_revenue__old_abc`;
