-- 0027: PostgreSQL partitions its history by day (see its migration);
-- SQLite purges in batches instead (sqlstore.PurgeBatch).
SELECT 1;
