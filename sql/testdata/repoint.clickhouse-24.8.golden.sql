CREATE OR REPLACE VIEW `orders` AS SELECT * FROM `orders__v2`;
CREATE OR REPLACE VIEW `daily_revenue` AS SELECT * FROM `daily_revenue__v2`;
