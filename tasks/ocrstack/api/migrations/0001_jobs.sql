-- Jobs and page runs: the columns of the SQLite store (ocrstack.api.store), PostgreSQL types.
CREATE TABLE jobs (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT UNIQUE NOT NULL,
    state TEXT NOT NULL,
    filename TEXT NOT NULL,
    input TEXT NOT NULL,
    options TEXT NOT NULL,
    pages_total INTEGER NOT NULL,
    pages_done INTEGER NOT NULL DEFAULT 0,
    pages_cached INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    fix TEXT,
    created DOUBLE PRECISION NOT NULL,
    started DOUBLE PRECISION,
    finished DOUBLE PRECISION,
    expires DOUBLE PRECISION
);
CREATE INDEX jobs_state ON jobs (state, seq);
CREATE TABLE page_runs (
    job_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    boot TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE INDEX page_runs_job ON page_runs (job_id);
