-- The idempotency records of sqsonce's pgstore. Safe to run more than once.
-- Column names are Powertools for AWS Lambda's attribute names.
CREATE TABLE IF NOT EXISTS "idempotency" (
    id                     text        PRIMARY KEY,  -- "{namespace}#{digest}"
    status                 text        NOT NULL CHECK (status IN ('INPROGRESS', 'COMPLETED')),
    expiration             timestamptz NOT NULL,     -- the record counts until then
    in_progress_expiration timestamptz NOT NULL,     -- the lease's end
    data                   bytea,                    -- the result, JSON
    validation             text,                     -- payload digest, when validation is on
    lease_owner            text        NOT NULL,     -- the lease owner token (fencing)
    quarantined            timestamptz,              -- when strict mode quarantined the claim
    strict_lease_expiration timestamptz              -- a strict claim's lease end
);

-- Tables created before strict mode gain its columns.
ALTER TABLE "idempotency" ADD COLUMN IF NOT EXISTS quarantined timestamptz;
ALTER TABLE "idempotency" ADD COLUMN IF NOT EXISTS strict_lease_expiration timestamptz;

-- For DeleteExpired: PostgreSQL has no TTL.
CREATE INDEX IF NOT EXISTS "idempotency_expiration_idx" ON "idempotency" (expiration);
