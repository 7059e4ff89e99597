-- The batch queue: what was submitted, one job per row, every attempt at a row, and the
-- write-ahead intent journal. Times are the database's own clock, so workers on machines whose
-- clocks disagree still agree on when a lease ran out.

CREATE TABLE cua_batches (
    id text PRIMARY KEY,
    -- `id@version` of the capability, its content hash, and the tenant and base URL it was
    -- bound with when the batch was submitted.
    capability text NOT NULL,
    content_hash text NOT NULL,
    tenant text,
    base_url text,
    -- blake3 of the capability as a run executes it (overlay applied): a worker whose catalog
    -- binds it differently refuses the batch's jobs.
    effective_digest text NOT NULL,
    -- The approval document the batch was submitted under, when it was submitted under one.
    approval text,
    allow_irreversible boolean NOT NULL,
    rows_digest text NOT NULL,
    row_count integer NOT NULL CHECK (row_count >= 0),
    submitted_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE cua_jobs (
    batch_id text NOT NULL REFERENCES cua_batches (id),
    row_number integer NOT NULL CHECK (row_number >= 1),
    -- The row's inputs; null for a row that is no row (its line says why).
    inputs jsonb,
    -- The same for every attempt at the row, and for no other row.
    idempotency_key text NOT NULL,
    state text NOT NULL CHECK (state IN ('queued', 'running', 'done')),
    -- The fencing epoch: raised by every claim, so a worker that lost the row can no longer
    -- write anything for it.
    epoch bigint NOT NULL DEFAULT 0,
    worker text,
    lease_expires_at timestamptz,
    claimed_at timestamptz,
    finished_at timestamptz,
    status text,
    exit_code integer,
    error_code text,
    -- The row's result line, as `cua replay --inputs` prints it.
    line jsonb,
    PRIMARY KEY (batch_id, row_number),
    UNIQUE (batch_id, idempotency_key),
    CHECK ((state = 'done') = (line IS NOT NULL))
);

CREATE INDEX cua_jobs_open ON cua_jobs (batch_id, row_number) WHERE state <> 'done';

CREATE TABLE cua_attempts (
    batch_id text NOT NULL,
    row_number integer NOT NULL,
    attempt integer NOT NULL CHECK (attempt >= 1),
    run_id text NOT NULL UNIQUE,
    epoch bigint NOT NULL,
    worker text NOT NULL,
    -- Where the attempt's evidence is: a directory under the workers' shared evidence root.
    evidence_dir text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (batch_id, row_number, attempt),
    FOREIGN KEY (batch_id, row_number) REFERENCES cua_jobs (batch_id, row_number)
);

CREATE TABLE cua_intents (
    run_id text NOT NULL REFERENCES cua_attempts (run_id),
    -- The intent's line in the attempt's trace.
    seq bigint NOT NULL,
    batch_id text NOT NULL,
    row_number integer NOT NULL,
    epoch bigint NOT NULL,
    worker text NOT NULL,
    intent jsonb NOT NULL,
    -- `announced` until the attempt's worker finished the row and read the trace; the
    -- trace's verdict after that.
    state text NOT NULL DEFAULT 'announced'
        CHECK (state IN ('announced', 'confirmed', 'not_dispatched', 'in_doubt')),
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, seq)
);
