CREATE TABLE `sales__v1` AS `sales`;
ALTER TABLE `sales__v1` REPLACE PARTITION ID '202607' FROM `sales`;
ALTER TABLE `sales__v1` REPLACE PARTITION ID '202608' FROM `sales`;
CREATE VIEW `sales__adopting` AS SELECT * FROM `sales__v1`;
EXCHANGE TABLES `sales` AND `sales__adopting`;
ALTER TABLE `sales__v1` REPLACE PARTITION ID '202607' FROM `sales__adopting`;
ALTER TABLE `sales__v1` REPLACE PARTITION ID '202608' FROM `sales__adopting`;
DROP TABLE IF EXISTS `sales__adopting`;
