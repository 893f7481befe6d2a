-- 0034: rate_take_n, rate_take for n requests at once. postgres.RateLimiter
-- combines the requests of one account that wait while a call for it is
-- in flight into the next call: one statement (and one asynchronous
-- commit) counts them all, so a busy account's requests no longer queue
-- one by one on its row's lock. It counts as many of the n requests as
-- both windows have room for (the first ones of the batch are allowed, the
-- rest refused) and returns that number and the rings after them; the
-- rule is rate_take's (ratelimit.State), applied n times in one go.
-- rate_take stays for processes of the version before during an upgrade.
CREATE FUNCTION rate_take_n(p_account TEXT, p_minute BIGINT, p_day BIGINT, p_per_minute BIGINT, p_per_day BIGINT, p_n INTEGER,
    OUT granted INTEGER, OUT o_minute_last BIGINT, OUT o_minute INTEGER[], OUT o_day_last BIGINT, OUT o_day INTEGER[])
LANGUAGE plpgsql AS $$
DECLARE
    nm CONSTANT INTEGER := 61;
    nd CONSTANT INTEGER := 25;
    mc      BIGINT;
    dc      BIGINT;
    i       INTEGER;
    existed BOOLEAN;
    moved   BOOLEAN;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    -- The common case of a busy account: its newest slots are now's and
    -- both windows have room for all n.
    UPDATE rate_windows r
       SET minute[(p_minute % nm)::integer + 1] = r.minute[(p_minute % nm)::integer + 1] + p_n,
           minute_count = r.minute_count + p_n,
           day[(p_day % nd)::integer + 1] = r.day[(p_day % nd)::integer + 1] + p_n,
           day_count = r.day_count + p_n
     WHERE r.account = p_account AND r.minute_last = p_minute AND r.day_last = p_day
       AND r.minute_count + p_n <= p_per_minute AND r.day_count + p_n <= p_per_day
    RETURNING r.minute, r.day INTO o_minute, o_day;
    IF FOUND THEN
        granted := p_n; o_minute_last := p_minute; o_day_last := p_day;
        RETURN;
    END IF;
    -- Otherwise: read the row under its lock and apply the whole rule.
    LOOP
        SELECT r.minute_last, r.minute, r.minute_count, r.day_last, r.day, r.day_count
          INTO o_minute_last, o_minute, mc, o_day_last, o_day, dc
          FROM rate_windows r WHERE r.account = p_account FOR UPDATE;
        existed := FOUND;
        IF NOT existed THEN
            o_minute_last := 0; o_minute := array_fill(0, ARRAY[nm]); mc := 0;
            o_day_last := 0;    o_day := array_fill(0, ARRAY[nd]);    dc := 0;
        END IF;
        moved := false;
        IF p_minute > o_minute_last THEN
            FOR k IN 1..LEAST(p_minute - o_minute_last, nm) LOOP
                i := ((o_minute_last + k) % nm)::integer + 1;
                mc := mc - o_minute[i];
                o_minute[i] := 0;
            END LOOP;
            o_minute_last := p_minute; moved := true;
        END IF;
        IF p_day > o_day_last THEN
            FOR k IN 1..LEAST(p_day - o_day_last, nd) LOOP
                i := ((o_day_last + k) % nd)::integer + 1;
                dc := dc - o_day[i];
                o_day[i] := 0;
            END LOOP;
            o_day_last := p_day; moved := true;
        END IF;
        granted := GREATEST(LEAST(p_n::bigint, p_per_minute - mc, p_per_day - dc), 0)::integer;
        IF granted > 0 THEN
            i := (o_minute_last % nm)::integer + 1;
            o_minute[i] := o_minute[i] + granted;
            mc := mc + granted;
            i := (o_day_last % nd)::integer + 1;
            o_day[i] := o_day[i] + granted;
            dc := dc + granted;
        END IF;
        IF existed THEN
            IF moved OR granted > 0 THEN
                UPDATE rate_windows SET minute_last = o_minute_last, minute = o_minute, minute_count = mc,
                                        day_last = o_day_last, day = o_day, day_count = dc
                 WHERE account = p_account;
            END IF;
            RETURN;
        END IF;
        INSERT INTO rate_windows (account, minute_last, minute, minute_count, day_last, day, day_count)
        VALUES (p_account, o_minute_last, o_minute, mc, o_day_last, o_day, dc)
        ON CONFLICT (account) DO NOTHING;
        IF FOUND THEN
            RETURN;
        END IF;
        -- Another request of the account inserted its row first: start
        -- again, on that row, under its lock.
    END LOOP;
END
$$;
