//! The PostgreSQL backend: one database shared by every process and
//! machine that names it. Full text in a `tsvector` column (GIN index,
//! `websearch_to_tsquery`, ranked by BM25 computed as FTS5 computes it),
//! vectors in pgvector tables (one per space, HNSW cosine index, iterative
//! scans so that filters apply before the `k` nearest are cut). The schema is in
//! `schema.rs`; it is migrated only when asked ([`crate::migrate`]).
//!
//! The connection is plain TCP or a unix socket (no TLS in this build: a
//! URL asking for it is refused with what to do). A dropped connection
//! (the server restarted) is opened again at the next operation.

mod full_text;
mod schema;

use clix_postgres::Connection;
use postgres::{Client, Transaction};

use crate::backend::{Backend, NewMemory, Pending, Rankings, Scope, Space, Target, at_once};
use crate::record::{Filter, Hit, Memory, MemoryError};
use crate::vectors::Embedding;

/// pgvector's HNSW indexes `vector` columns of at most this many
/// dimensions; larger spaces are searched exactly (a scan).
const HNSW_MAX_DIM: usize = 2000;

/// The bounds of `hnsw.ef_search`, the candidates the index keeps while
/// it searches: at least as many as results wanted, at most pgvector's
/// 1000. The floor is 100, not pgvector's default 40: at 100,000 real
/// embeddings (`clix-bench memory --vectors model2vec`) 40 held 89–90%
/// of the exact top 5 (84–85% with a topic filter), 100 holds 95–96%
/// (93%), for about 2 ms more per KNN.
const EF_SEARCH: (usize, usize) = (100, 1000);

/// The columns of a [`Memory`], in [`memory`]'s order (`m`: memories).
const COLUMNS: &str = "m.id, m.topic, m.kind, m.text, m.created_at, \
     to_char(to_timestamp(m.created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), m.session";

/// One database, through clix-postgres's connection: opened again after the
/// server dropped it, and usable from any thread (on one that drives
/// async tasks, each operation runs on a scoped thread of its own, as the
/// synchronous client requires).
pub(crate) struct Postgres {
    conn: Connection,
    /// A second connection, opened on the first hybrid search, for the
    /// vector KNN to run while `conn` runs the full-text query.
    reader: Connection,
}

impl Postgres {
    /// Connects to a database at this clix's schema version. (Each KNN
    /// sets its own scan settings for its transaction: see `knn`.)
    pub(crate) fn connect(url: &str) -> Result<Self, MemoryError> {
        let conn = Connection::open(url)?;
        schema::SCHEMA.check(&conn)?;
        let reader = conn.sibling();
        Ok(Postgres { conn, reader })
    }

    /// Brings the database at `url` to this clix's schema; (before, after).
    pub(crate) fn migrate(url: &str) -> Result<(i32, i32), MemoryError> {
        schema::migrate(url)
    }

    /// Runs `work` on the connection.
    fn db<T: Send>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, postgres::Error> + Send,
    ) -> Result<T, MemoryError> {
        Ok(self.conn.with(work)?)
    }

    /// Runs `work` in one transaction, committed when it returns `Ok`.
    fn in_transaction<T: Send>(
        &self,
        work: impl FnOnce(&mut Transaction<'_>) -> Result<T, postgres::Error> + Send,
    ) -> Result<T, MemoryError> {
        self.db(|db| {
            let mut tx = db.transaction()?;
            let value = work(&mut tx)?;
            tx.commit()?;
            Ok(value)
        })
    }
}

/// The `k` nearest memories to `query` in `space` over `conn`, as (id,
/// cosine similarity), best first: pgvector's HNSW scan, filters applied
/// inside it.
fn nearest(
    conn: &Connection,
    space: &Space,
    query: &[f32],
    filter: &Filter<'_>,
    scope: Scope<'_>,
    k: usize,
) -> Result<Vec<(i64, f64)>, MemoryError> {
    let ef = k.clamp(EF_SEARCH.0, EF_SEARCH.1);
    let table = table_of(space.id);
    let keyword = filter.keyword.to_lowercase();
    let sql = format!(
        "SELECT v.id, 1 - (v.embedding <=> $1::text::vector) FROM {table} v
         WHERE ($2 = '' OR v.topic = $2)
           AND ($3::text[] IS NULL OR v.topic = ANY ($3))
           AND ($4 = '' OR EXISTS (SELECT 1 FROM memories m WHERE m.id = v.id AND strpos(m.folded, $4) > 0))
         ORDER BY v.embedding <=> $1::text::vector LIMIT $5"
    );
    let vector = vector_text(query);
    // The candidates the index keeps and the scan's order, for this
    // query's transaction only.
    let mut nearest: Vec<(i64, f64)> = conn.with(|db| {
        let mut tx = db.transaction()?;
        tx.batch_execute(&format!("SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = relaxed_order"))?;
        let rows = tx.query(&sql, &[&vector, &filter.topic, &scope, &keyword, &(k as i64)])?;
        let found = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        tx.commit()?;
        Ok(found)
    })?;
    // Equal distances in the order SQLite gives them (the lower id first).
    nearest.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(nearest)
}

fn memory(r: &postgres::Row) -> Memory {
    Memory {
        id: r.get(0),
        topic: r.get(1),
        kind: r.get(2),
        text: r.get(3),
        created_at: r.get(4),
        date: r.get(5),
        session: r.get(6),
    }
}

/// The vector table of the space with this id.
fn table_of(id: i64) -> String {
    format!("memory_vectors_{id}")
}

/// A vector in pgvector's text form, `[0.1,-0.2,…]` (each f32 written
/// exactly: Rust's shortest round-trip form).
fn vector_text(vector: &[f32]) -> String {
    let parts: Vec<String> = vector.iter().map(f32::to_string).collect();
    format!("[{}]", parts.join(","))
}

/// The space of `target`'s embedder for vectors of `dim`, created if new
/// (inside the caller's transaction; an advisory lock keeps two
/// processes from creating one table at once).
fn space_for(tx: &mut Transaction<'_>, target: Target<'_>, dim: usize) -> Result<Space, postgres::Error> {
    if let Some(space) = target.known.filter(|s| s.dim == dim) {
        return Ok(space.clone());
    }
    tx.batch_execute("SELECT pg_advisory_xact_lock(hashtext('clix_memory_spaces'))")?;
    let dim_sql = dim as i32;
    tx.execute(
        "INSERT INTO memory_embedders (key, dim) VALUES ($1, $2) ON CONFLICT (key, dim) DO NOTHING",
        &[&target.key, &dim_sql],
    )?;
    let id: i64 =
        tx.query_one("SELECT id FROM memory_embedders WHERE key = $1 AND dim = $2", &[&target.key, &dim_sql])?.get(0);
    let table = table_of(id);
    let hnsw = if dim <= HNSW_MAX_DIM {
        format!("CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops);")
    } else {
        String::new()
    };
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (
             id BIGINT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
             topic TEXT NOT NULL,
             embedding vector({dim}) NOT NULL
         );
         CREATE INDEX IF NOT EXISTS {table}_topic ON {table} (topic);
         {hnsw}"
    ))?;
    Ok(Space { id, dim })
}

/// Memory `id`'s embedding into its space (inside the caller's
/// transaction): its vector, or the record that it has none. Rows another
/// process saved first are left as they are.
fn save(
    tx: &mut Transaction<'_>,
    space: &Space,
    id: i64,
    topic: &str,
    embedding: &Embedding,
) -> Result<(), postgres::Error> {
    match embedding {
        Embedding::Vector(vector) => {
            let table = table_of(space.id);
            tx.execute(
                &format!("INSERT INTO {table} (id, topic, embedding) VALUES ($1, $2, $3::text::vector) ON CONFLICT (id) DO NOTHING"),
                &[&id, &topic, &vector_text(vector)],
            )?;
            tx.execute(
                "INSERT INTO memory_embedded (embedder, id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&space.id, &id],
            )?;
        }
        Embedding::None { .. } => {
            tx.execute(
                "INSERT INTO memory_embed_failed (embedder, id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&space.id, &id],
            )?;
        }
    }
    Ok(())
}

/// The memories without a vector (nor a record of having none) in space
/// `$1`; with `since`, only those written or moved by transactions that
/// the mark's snapshot did not see (xid at least its xmin).
fn missing_where(since: Option<&str>) -> (String, Option<i64>) {
    let xmin = since.and_then(|mark| mark.split(':').next()).and_then(|x| x.parse::<i64>().ok());
    let recent = if xmin.is_some() { "m.xid >= $2 AND" } else { "" };
    (
        format!(
            "FROM memories m WHERE {recent}
                 NOT EXISTS (SELECT 1 FROM memory_embedded e WHERE e.embedder = $1 AND e.id = m.id)
             AND NOT EXISTS (SELECT 1 FROM memory_embed_failed f WHERE f.embedder = $1 AND f.id = m.id)"
        ),
        xmin,
    )
}

impl Backend for Postgres {
    fn shown(&self) -> &str {
        self.conn.shown()
    }

    fn insert(
        &self,
        new: &NewMemory<'_>,
        embedding: Option<(Target<'_>, &Embedding)>,
    ) -> Result<(i64, Option<Space>), MemoryError> {
        let folded = new.text.to_lowercase();
        self.in_transaction(|tx| {
            // The space first: creating one locks `memories` against writes
            // (its foreign key), which must not wait on a writer that waits
            // for the space's lock in turn.
            let space = match embedding {
                Some((target, embedding)) => Some(space_for(tx, target, embedding.dim())?),
                None => None,
            };
            let id: i64 = tx
                .query_one(
                    "INSERT INTO memories (topic, kind, text, session, folded) VALUES ($1, $2, $3, $4, $5) RETURNING id",
                    &[&new.topic, &new.kind, &new.text, &new.session, &folded],
                )?
                .get(0);
            if let (Some(space), Some((_, embedding))) = (&space, embedding) {
                save(tx, space, id, new.topic, embedding)?;
            }
            Ok((id, space))
        })
    }

    fn newest_space(&self, key: &str) -> Result<Option<Space>, MemoryError> {
        self.db(|db| {
            let row =
                db.query_opt("SELECT id, dim FROM memory_embedders WHERE key = $1 ORDER BY id DESC LIMIT 1", &[&key])?;
            Ok(row.map(|r| Space { id: r.get(0), dim: r.get::<_, i32>(1) as usize }))
        })
    }

    /// The current snapshot (`xmin:xmax:running xids`): the same text means
    /// the same set of committed transactions.
    fn mark(&self) -> Result<String, MemoryError> {
        self.db(|db| Ok(db.query_one("SELECT pg_current_snapshot()::text", &[])?.get(0)))
    }

    fn missing_count(&self, space: Option<&Space>, since: Option<&str>) -> Result<usize, MemoryError> {
        let (condition, xmin) = missing_where(since);
        let space_id = space.map_or(-1, |s| s.id);
        let sql = format!("SELECT count(*) {condition}");
        self.db(|db| {
            let row = match xmin {
                Some(x) => db.query_one(&sql, &[&space_id, &x]),
                None => db.query_one(&sql, &[&space_id]),
            }?;
            Ok(row.get::<_, i64>(0).max(0) as usize)
        })
    }

    fn missing(&self, space: Option<&Space>, since: Option<&str>, limit: usize) -> Result<Vec<Pending>, MemoryError> {
        let (condition, xmin) = missing_where(since);
        let space_id = space.map_or(-1, |s| s.id);
        let limit = limit as i64;
        self.db(|db| {
            let rows = match xmin {
                Some(x) => db.query(
                    &format!("SELECT m.id, m.topic, m.text {condition} ORDER BY m.id LIMIT $3"),
                    &[&space_id, &x, &limit],
                ),
                None => db.query(
                    &format!("SELECT m.id, m.topic, m.text {condition} ORDER BY m.id LIMIT $2"),
                    &[&space_id, &limit],
                ),
            }?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect())
        })
    }

    fn save_embeddings(
        &self,
        target: Target<'_>,
        batch: &[(&Pending, &Embedding)],
    ) -> Result<Option<Space>, MemoryError> {
        self.in_transaction(|tx| {
            let mut used: Option<Space> = None;
            for ((id, topic, _), embedding) in batch {
                let known = used.as_ref().or(target.known);
                let space = space_for(tx, Target { key: target.key, known }, embedding.dim())?;
                // Another process may have embedded or forgotten it meanwhile.
                let wanted: bool = tx
                    .query_one(
                        "SELECT EXISTS (SELECT 1 FROM memories WHERE id = $1)
                            AND NOT EXISTS (SELECT 1 FROM memory_embedded WHERE embedder = $2 AND id = $1)
                            AND NOT EXISTS (SELECT 1 FROM memory_embed_failed WHERE embedder = $2 AND id = $1)",
                        &[id, &space.id],
                    )?
                    .get(0);
                if wanted {
                    save(tx, &space, *id, topic, embedding)?;
                }
                used = Some(space);
            }
            Ok(used)
        })
    }

    /// The HNSW index's KNN (exact for spaces too large for it), the
    /// topic, scope and keyword in the same query: iterative scans go on
    /// until `k` rows pass them (or the index is exhausted, or pgvector's
    /// `hnsw.max_scan_tuples` is reached). The scan is `relaxed_order`,
    /// which pgvector documents as better recall than `strict_order` at
    /// the price of rows slightly out of distance order: they are sorted
    /// here anyway.
    fn knn(
        &self,
        space: &Space,
        query: &[f32],
        filter: &Filter<'_>,
        scope: Scope<'_>,
        k: usize,
    ) -> Result<Vec<(i64, f64)>, MemoryError> {
        nearest(&self.conn, space, query, filter, scope, k)
    }

    /// The KNN on the second connection, in a thread of its own, while
    /// this one runs the full text: a search takes the longer of the two,
    /// not their sum.
    fn rankings(
        &self,
        fts: &str,
        vector: Option<(&Space, &[f32])>,
        filter: &Filter<'_>,
        scope: Scope<'_>,
        pool: usize,
    ) -> Result<Rankings, MemoryError> {
        let Some((space, query)) = vector else { return Ok((self.full_text(fts, filter, scope, pool)?, Vec::new())) };
        let (semantic, lexical) = at_once(
            || nearest(&self.reader, space, query, filter, scope, pool),
            || self.full_text(fts, filter, scope, pool),
        );
        Ok((lexical?, semantic?))
    }

    /// Okapi BM25 as FTS5 computes it (`full_text.rs`), filters inside
    /// the query; the snippet from `ts_headline`, matches in [brackets].
    fn full_text(
        &self,
        query: &str,
        filter: &Filter<'_>,
        scope: Scope<'_>,
        limit: usize,
    ) -> Result<Vec<Hit>, MemoryError> {
        self.db(|db| full_text::search(db, query, filter, scope, limit))
    }

    fn get(&self, id: i64) -> Result<Option<Memory>, MemoryError> {
        self.db(|db| {
            let row = db.query_opt(&format!("SELECT {COLUMNS} FROM memories m WHERE m.id = $1"), &[&id])?;
            Ok(row.as_ref().map(memory))
        })
    }

    fn list(&self, facts_only: bool, topic: &str, scope: Scope<'_>, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let kind = if facts_only { "m.kind = 'fact' AND" } else { "" };
        let sql = format!(
            "SELECT {COLUMNS} FROM memories m
             WHERE {kind} ($1 = '' OR m.topic = $1) AND ($3::text[] IS NULL OR m.topic = ANY ($3))
             ORDER BY m.created_at DESC, m.id DESC LIMIT $2"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db(|db| Ok(db.query(&sql, &[&topic, &limit, &scope])?.iter().map(memory).collect()))
    }

    /// Its vectors and records go with it (`ON DELETE CASCADE`).
    fn forget(&self, id: i64, scope: Scope<'_>) -> Result<bool, MemoryError> {
        self.db(|db| {
            let n = db.execute(
                "DELETE FROM memories WHERE id = $1 AND ($2::text[] IS NULL OR topic = ANY ($2))",
                &[&id, &scope],
            )?;
            Ok(n > 0)
        })
    }

    /// The moved memories get this transaction's id, so that every process
    /// sees them as written since it last looked, and embeds them again.
    fn retopic(&self, from: &str, to: &str) -> Result<usize, MemoryError> {
        self.in_transaction(|tx| {
            let spaces: Vec<i64> = tx.query("SELECT id FROM memory_embedders", &[])?.iter().map(|r| r.get(0)).collect();
            for space in spaces {
                let table = table_of(space);
                let exists: bool = tx.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])?.get(0);
                if exists {
                    tx.execute(&format!("DELETE FROM {table} WHERE topic = $1"), &[&from])?;
                }
            }
            for record in ["memory_embedded", "memory_embed_failed"] {
                tx.execute(
                    &format!("DELETE FROM {record} WHERE id IN (SELECT id FROM memories WHERE topic = $1)"),
                    &[&from],
                )?;
            }
            let moved = tx.execute(
                "UPDATE memories SET topic = $2, xid = pg_current_xact_id()::text::bigint WHERE topic = $1",
                &[&from, &to],
            )?;
            Ok(moved as usize)
        })
    }

    fn count(&self, topic: &str) -> Result<usize, MemoryError> {
        self.db(|db| {
            Ok(db.query_one("SELECT count(*) FROM memories WHERE topic = $1", &[&topic])?.get::<_, i64>(0) as usize)
        })
    }

    fn indexed(&self, query: &str) -> Result<usize, MemoryError> {
        self.db(|db| {
            let row = db.query_one(
                "SELECT count(*) FROM memories WHERE tsv @@ websearch_to_tsquery('clix_english', $1)",
                &[&query],
            )?;
            Ok(row.get::<_, i64>(0) as usize)
        })
    }

    fn spaces(&self) -> Result<Vec<(String, usize, usize)>, MemoryError> {
        self.db(|db| {
            let rows = db.query(
                "SELECT e.key, e.dim, (SELECT count(*) FROM memory_embedded d WHERE d.embedder = e.id)
                 FROM memory_embedders e ORDER BY e.id",
                &[],
            )?;
            Ok(rows.iter().map(|r| (r.get(0), r.get::<_, i32>(1) as usize, r.get::<_, i64>(2) as usize)).collect())
        })
    }

    fn vector_rows(&self, id: i64) -> Result<usize, MemoryError> {
        self.db(|db| {
            let spaces: Vec<i64> = db.query("SELECT id FROM memory_embedders", &[])?.iter().map(|r| r.get(0)).collect();
            let mut n = 0;
            for space in spaces {
                let table = table_of(space);
                let exists: bool = db.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])?.get(0);
                if exists {
                    n += db.query_one(&format!("SELECT count(*) FROM {table} WHERE id = $1"), &[&id])?.get::<_, i64>(0)
                        as usize;
                }
            }
            Ok(n)
        })
    }
}
