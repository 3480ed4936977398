//! The PostgreSQL schema: its steps, its version (a row of `clix_schema`),
//! and the explicit migration that brings a database to this clix's.

use clix_postgres::Connection;
use clix_postgres::schema::Component;

use crate::record::MemoryError;

/// Bumped with every step; stored in `clix_schema` under [`COMPONENT`].
const SCHEMA_VERSION: i32 = 4;

/// This crate's row in `clix_schema` (clix-postgres's `schema` runs the
/// steps: in one transaction under one advisory lock, so two migrations at
/// once run each step once and a failing step leaves the database as it
/// was). Other parts of clix version theirs under their own names.
pub(crate) const SCHEMA: Component = Component { name: "memory", steps: &MIGRATIONS };

/// The schema, one step per version: step n brings a database from
/// version n - 1 to n. pgvector is created before step 1 (its own error).
///
/// - `clix_english`: English stemming without a stopword list, as FTS5's
///   porter tokenizer (the store drops stopwords from queries itself, and
///   keeps a query of stopwords alone).
/// - `folded`: the text lowercased by clix (Unicode, whatever the
///   server's locale): the full-text vector is made from it, and the
///   keyword filter reads it.
/// - `xid`: the transaction that wrote or moved the memory, so that a
///   process finds the memories still missing a vector among those
///   written since it last looked, without scanning them all.
/// - Vectors live in one table per space (`memory_vectors_<id>`, made
///   when first needed, with an HNSW cosine index); every record of a
///   memory goes with it (`ON DELETE CASCADE`).
///
/// Step 2 keeps what BM25 needs besides each memory's `tsvector` (see
/// `full_text` in `mod.rs`), so that a search reads it instead of scanning
/// every memory:
/// - `tokens`: the memory's length in tokens, as FTS5 counts it (every
///   word, repeats included: the positions of its `tsvector`, not its
///   distinct lexemes).
/// - `memory_fts_stats`: how many memories there are and their total
///   length, kept by a trigger. In 64 slots, each writer adding to the
///   slot of its connection (`pg_backend_pid() % 64`) and a search summing
///   them: one row would make concurrent writers wait for each other's
///   commits. The step's `ALTER TABLE` locks `memories` against writes
///   until the migration commits, so the counts filled in at its end miss
///   no memory and count none twice. The trigger's `search_path` is
///   pinned, so that it finds the table whatever the writing session's is.
///
/// Step 3 keeps those counts right through a `TRUNCATE memories` (which
/// fires no row trigger): a statement trigger zeroes them. Creating it
/// locks `memories` against writes until the migration commits, so the
/// recount at its end (what an earlier `TRUNCATE` left stale) misses no
/// memory and counts none twice.
///
/// Step 4 keeps what a search reads instead of each memory's `tsvector`
/// (see `full_text.rs`), both kept by the same trigger:
/// - `memory_lexeme_docs`: n(t), the memories holding each lexeme, in the
///   same 64 slots per lexeme (a writer adds to its connection's slot, in
///   the `tsvector`'s sorted lexeme order, so two writers of one slot never
///   wait for each other in a cycle).
/// - `memory_postings`: one row per (lexeme, memory) with the lexeme's
///   frequency, the memory's length and topic, all in the primary key's
///   index, so scoring is an index-only scan. A memory's rows follow its
///   text and topic (the trigger fires on both).
///
/// `clix_memory_fts_recount()` makes both again from the memories (this
/// step, and a bulk load with the trigger off); the step first locks
/// `memories` against writes until it commits.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    "
    CREATE TEXT SEARCH DICTIONARY clix_english_stem (TEMPLATE = snowball, Language = english);
    CREATE TEXT SEARCH CONFIGURATION clix_english (COPY = english);
    ALTER TEXT SEARCH CONFIGURATION clix_english ALTER MAPPING REPLACE english_stem WITH clix_english_stem;
    CREATE TABLE memories (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        topic TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('note', 'fact', 'summary')),
        text TEXT NOT NULL,
        created_at BIGINT NOT NULL DEFAULT extract(epoch FROM now())::bigint,
        session TEXT NOT NULL DEFAULT '',
        folded TEXT NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (to_tsvector('clix_english'::regconfig, folded)) STORED,
        xid BIGINT NOT NULL DEFAULT pg_current_xact_id()::text::bigint
    );
    CREATE INDEX memories_topic ON memories (topic, created_at);
    CREATE INDEX memories_tsv ON memories USING gin (tsv);
    CREATE INDEX memories_xid ON memories (xid);
    CREATE TABLE memory_embedders (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        key TEXT NOT NULL,
        dim INTEGER NOT NULL,
        created_at BIGINT NOT NULL DEFAULT extract(epoch FROM now())::bigint,
        UNIQUE (key, dim)
    );
    CREATE TABLE memory_embedded (
        embedder BIGINT NOT NULL REFERENCES memory_embedders (id),
        id BIGINT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        PRIMARY KEY (embedder, id)
    );
    CREATE INDEX memory_embedded_id ON memory_embedded (id);
    CREATE TABLE memory_embed_failed (
        embedder BIGINT NOT NULL REFERENCES memory_embedders (id),
        id BIGINT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        PRIMARY KEY (embedder, id)
    );
    CREATE INDEX memory_embed_failed_id ON memory_embed_failed (id);
",
    "
    CREATE FUNCTION clix_tokens(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        AS $$ SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1) $$;
    ALTER TABLE memories ADD COLUMN tokens INTEGER NOT NULL
        GENERATED ALWAYS AS (clix_tokens(to_tsvector('clix_english'::regconfig, folded))) STORED;
    CREATE TABLE memory_fts_stats (
        slot INTEGER PRIMARY KEY,
        docs BIGINT NOT NULL DEFAULT 0,
        tokens BIGINT NOT NULL DEFAULT 0
    );
    INSERT INTO memory_fts_stats (slot) SELECT generate_series(0, 63);
    CREATE FUNCTION clix_memory_fts_stats() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            UPDATE memory_fts_stats SET docs = docs + 1, tokens = tokens + NEW.tokens
                WHERE slot = pg_backend_pid() % 64;
        END IF;
        IF TG_OP IN ('DELETE', 'UPDATE') THEN
            UPDATE memory_fts_stats SET docs = docs - 1, tokens = tokens - OLD.tokens
                WHERE slot = pg_backend_pid() % 64;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_fts_stats AFTER INSERT OR DELETE OR UPDATE OF folded ON memories
        FOR EACH ROW EXECUTE FUNCTION clix_memory_fts_stats();
    UPDATE memory_fts_stats
        SET docs = (SELECT count(*) FROM memories), tokens = (SELECT coalesce(sum(tokens), 0) FROM memories)
        WHERE slot = 0;
",
    "
    CREATE FUNCTION clix_memory_fts_stats_truncated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        UPDATE memory_fts_stats SET docs = 0, tokens = 0;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_fts_stats_truncated AFTER TRUNCATE ON memories
        FOR EACH STATEMENT EXECUTE FUNCTION clix_memory_fts_stats_truncated();
    UPDATE memory_fts_stats SET docs = 0, tokens = 0;
    UPDATE memory_fts_stats
        SET docs = (SELECT count(*) FROM memories), tokens = (SELECT coalesce(sum(tokens), 0) FROM memories)
        WHERE slot = 0;
",
    "
    LOCK TABLE memories IN SHARE MODE;
    CREATE TABLE memory_lexeme_docs (
        lexeme TEXT NOT NULL,
        slot INTEGER NOT NULL,
        docs BIGINT NOT NULL,
        PRIMARY KEY (lexeme, slot)
    );
    CREATE TABLE memory_postings (
        lexeme TEXT NOT NULL,
        id BIGINT NOT NULL,
        tf INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        topic TEXT NOT NULL,
        PRIMARY KEY (lexeme, id) INCLUDE (tf, tokens, topic)
    );
    CREATE OR REPLACE FUNCTION clix_memory_fts_stats() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        IF TG_OP IN ('DELETE', 'UPDATE') THEN
            UPDATE memory_fts_stats SET docs = docs - 1, tokens = tokens - OLD.tokens
                WHERE slot = pg_backend_pid() % 64;
            INSERT INTO memory_lexeme_docs AS d (lexeme, slot, docs)
                SELECT l, pg_backend_pid() % 64, -1 FROM unnest(tsvector_to_array(OLD.tsv)) AS l
                ON CONFLICT (lexeme, slot) DO UPDATE SET docs = d.docs - 1;
            DELETE FROM memory_postings WHERE lexeme = ANY (tsvector_to_array(OLD.tsv)) AND id = OLD.id;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            UPDATE memory_fts_stats SET docs = docs + 1, tokens = tokens + NEW.tokens
                WHERE slot = pg_backend_pid() % 64;
            INSERT INTO memory_lexeme_docs AS d (lexeme, slot, docs)
                SELECT l, pg_backend_pid() % 64, 1 FROM unnest(tsvector_to_array(NEW.tsv)) AS l
                ON CONFLICT (lexeme, slot) DO UPDATE SET docs = d.docs + 1;
            INSERT INTO memory_postings (lexeme, id, tf, tokens, topic)
                SELECT u.lexeme, NEW.id, cardinality(u.positions), NEW.tokens, NEW.topic FROM unnest(NEW.tsv) AS u;
        END IF;
        RETURN NULL;
    END $$;
    DROP TRIGGER memories_fts_stats ON memories;
    CREATE TRIGGER memories_fts_stats AFTER INSERT OR DELETE OR UPDATE OF folded, topic ON memories
        FOR EACH ROW EXECUTE FUNCTION clix_memory_fts_stats();
    CREATE OR REPLACE FUNCTION clix_memory_fts_stats_truncated() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        UPDATE memory_fts_stats SET docs = 0, tokens = 0;
        DELETE FROM memory_lexeme_docs;
        TRUNCATE memory_postings;
        RETURN NULL;
    END $$;
    CREATE FUNCTION clix_memory_fts_recount() RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
        UPDATE memory_fts_stats SET docs = 0, tokens = 0;
        UPDATE memory_fts_stats
            SET docs = (SELECT count(*) FROM memories), tokens = (SELECT coalesce(sum(tokens), 0) FROM memories)
            WHERE slot = 0;
        DELETE FROM memory_lexeme_docs;
        INSERT INTO memory_lexeme_docs (lexeme, slot, docs)
            SELECT l, 0, count(*) FROM memories, unnest(tsvector_to_array(tsv)) AS l GROUP BY l;
        TRUNCATE memory_postings;
        INSERT INTO memory_postings (lexeme, id, tf, tokens, topic)
            SELECT u.lexeme, m.id, cardinality(u.positions), m.tokens, m.topic FROM memories m, unnest(m.tsv) AS u;
    $$;
    SELECT clix_memory_fts_recount();
",
];

/// Brings the database at `url` to [`SCHEMA_VERSION`] (pgvector created
/// first, its absence explained); (version before, after). A newer version
/// is left alone (an error); nothing is ever dropped.
pub(crate) fn migrate(url: &str) -> Result<(i32, i32), MemoryError> {
    let connection = Connection::open(url)?;
    let shown = connection.shown().to_string();
    SCHEMA.migrate(&connection, |tx| {
        tx.batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
            .map_err(|e| MemoryError::NoPgvector { url: shown, message: clix_postgres::message(&e) })
    })
}
