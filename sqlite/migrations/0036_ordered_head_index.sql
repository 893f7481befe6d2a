-- 0036: nothing in SQLite. PostgreSQL's 0036 narrows the index of its
-- ordered webhooks' heads, which SQLite never had (its 0032). Kept so
-- that both engines number their schema alike.
SELECT 1;
