-- Address keys (search.AddressKeys): the vector of each artifact stored
-- from this build on holds, as a lexeme without position, every four
-- consecutive tokens of one to three digits joined by dots ("10.0.0.53"),
-- so that an address is searched as one lexeme of the GIN index instead
-- of the phrase of four of the commonest words, rechecked row by row (380
-- ms p99 at 10 M artifacts, docs/benchmarks.md).
--
-- The artifacts stored before have no keys: their vectors are not
-- rewritten here (an UPDATE of every row, about an hour per 10 M on the
-- project's machine). Each partition that holds artifacts now is listed
-- below, with the time of this migration; searches keep reading addresses
-- as phrases while any listed partition still exists (for the DEFAULT
-- partition: while it holds an artifact created before that time), that
-- is until retention has dropped them, or `vigil migrate
-- --address-keys` has written their keys and taken them off the list.
CREATE TABLE address_keys_pending (
    part   TEXT COLLATE "C" PRIMARY KEY,
    before BIGINT NOT NULL
);
DO $$
DECLARE
    r record;
    held boolean;
BEGIN
    FOR r IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'artifacts'::regclass LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', r.relname) INTO held;
        IF held THEN
            INSERT INTO address_keys_pending (part, before)
                VALUES (r.relname, (extract(epoch FROM clock_timestamp()) * 1e9)::bigint);
        END IF;
    END LOOP;
END $$;
