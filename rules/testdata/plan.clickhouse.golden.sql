-- query 1
-- rules: complete_calendar, complete_continuous, complete_min_rows, complete_not_null, complete_range, complete_recent, complete_table_ids, complete_table_ok, custom_big, custom_neg, dist_loose, dist_min_rows, dist_tight, fresh_date, fresh_ok, fresh_stale, rel_customer, rel_id, rel_region, rel_region_bad, totals_loose, totals_tight, unique_region_daily
SELECT `d` AS _tu_k1,
       `region` AS _tu_k2,
       count(*) AS _tu_n,
       count(`customer_id`) AS _tu_a1,
       count(`region`) AS _tu_a2,
       sum(amount) AS _tu_a3,
       count(`id`) AS _tu_a4,
       count(`d`) AS _tu_a5,
       max(`d`) AS _tu_a6,
       max(`ts`) AS _tu_a7,
       countIf((amount > 15)) AS _tu_a8,
       countIf((amount < 0)) AS _tu_a9,
       min(`customer_id`) AS _tu_a10,
       max(`customer_id`) AS _tu_a11,
       min(`id`) AS _tu_a12,
       max(`id`) AS _tu_a13
FROM `orders`
GROUP BY _tu_k1, _tu_k2;

-- query 2
-- rules: complete_ts
SELECT toDate(toDateTime(`ts`, 'UTC')) AS _tu_k1,
       count(*) AS _tu_n
FROM `orders`
GROUP BY _tu_k1;

-- query 3
-- rules: totals_monthly
SELECT toStartOfMonth(toDateTime(`d`, 'UTC')) AS _tu_k1,
       count(*) AS _tu_n,
       sum(amount) AS _tu_a1
FROM `orders`
GROUP BY _tu_k1;

-- query 4
-- rules: unique_id
SELECT count(*) AS _tu_n,
       count(`id`) AS _tu_a1,
       uniqExact(`id`) AS _tu_a2
FROM `orders`;

-- query 5
-- rules: unique_id_region
SELECT `id` AS _tu_k1,
       `region` AS _tu_k2,
       count(*) AS _tu_n
FROM `orders`
WHERE `id` IS NOT NULL AND `region` IS NOT NULL
GROUP BY _tu_k1, _tu_k2
HAVING count(*) > 1
ORDER BY _tu_n DESC, _tu_k1, _tu_k2
LIMIT 10001;

-- query 6
-- rules: complete_calendar
SELECT `d` AS _tu_k1,
       count(*) AS _tu_n
FROM `calendar`
GROUP BY _tu_k1;

-- query 7
-- rules: totals_monthly
SELECT toStartOfMonth(toDateTime(`d`, 'UTC')) AS _tu_k1,
       count(*) AS _tu_n,
       sum(amount) AS _tu_a1
FROM `raw`
GROUP BY _tu_k1;

-- query 8
-- rules: totals_tight
SELECT `d` AS _tu_k1,
       count(*) AS _tu_n,
       sum(amount) AS _tu_a1
FROM `raw`
GROUP BY _tu_k1;

-- query 9
-- rules: schema_dims
-- the columns of `dims` as the engine reports them;

-- query 10
-- rules: totals_loose
SELECT * FROM (
SELECT d, sum(amount) AS amount
FROM raw
GROUP BY d
) AS _tu_q LIMIT 100001;

-- query 11
-- rules: rel_customer, rel_id
SELECT * FROM (
SELECT min(`customer_id`), max(`customer_id`), uniqExact(`customer_id`) FROM `customers` WHERE `customer_id` IS NOT NULL
) AS _tu_q LIMIT 2;

-- query 12
-- rules: rel_region
SELECT * FROM (
SELECT DISTINCT `region` FROM `regions` WHERE `region` IS NOT NULL
) AS _tu_q LIMIT 100001;

-- query 13
-- rules: rel_region_bad
SELECT * FROM (
SELECT DISTINCT `b` FROM `dims` WHERE `b` IS NOT NULL
) AS _tu_q LIMIT 100001;

