//! Vector spaces: one sqlite-vec `vec0` table per (embedder, dimension),
//! listed in `embedders`; `embedded` records which memories each space
//! holds. Triggers created with each table remove a forgotten memory's
//! vector from every space.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::embed::{EmbedError, Embedder};
use crate::store::Filter;

/// One vector space: its row in `embedders` and its `vec0` table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Space {
    id: i64,
    dim: usize,
}

impl Space {
    fn table(&self) -> String {
        format!("memories_vec_{}", self.id)
    }

    /// Spaces whose dimension is a multiple of 8 index each vector's sign
    /// bits (`bits bit[dim]`) and keep the float vector beside them (an
    /// auxiliary column); other dimensions index the float vector itself.
    fn has_bits(&self) -> bool {
        self.dim.is_multiple_of(8)
    }

    pub(crate) fn insert(&self, db: &Connection, id: i64, topic: &str, vector: &[f32]) -> rusqlite::Result<()> {
        let sql = if self.has_bits() {
            "INSERT INTO {} (rowid, topic, bits, embedding) VALUES (?1, ?2, vec_quantize_binary(vec_f32(?3)), ?3)"
        } else {
            "INSERT INTO {} (rowid, topic, embedding) VALUES (?1, ?2, ?3)"
        };
        db.prepare_cached(&sql.replace("{}", &self.table()))?.execute(params![id, topic, blob(vector)])?;
        db.prepare_cached("INSERT INTO embedded (embedder, id) VALUES (?1, ?2)")?.execute(params![self.id, id])?;
        Ok(())
    }
}

/// The configured embedder and the space its vectors go to.
pub(crate) struct Vectors {
    embedder: Box<dyn Embedder>,
    key: String,
    /// Known once a vector of this embedder exists (its dimension).
    space: Option<Space>,
    /// `PRAGMA data_version` when every memory last had a vector here: it
    /// changes only when another connection commits, so while it stands
    /// (and our own stores got their vectors) there is nothing to fill.
    synced_at: Option<i64>,
}

impl Vectors {
    pub(crate) fn new(db: &Connection, embedder: Box<dyn Embedder>) -> rusqlite::Result<Self> {
        let key = embedder.id();
        let space = newest_space(db, &key)?;
        Ok(Vectors { embedder, key, space, synced_at: None })
    }

    /// After a failed transaction: a space it created was rolled back too,
    /// so what is known about the spaces is read again.
    pub(crate) fn reload(&mut self, db: &Connection) {
        self.space = newest_space(db, &self.key).ok().flatten();
        self.synced_at = None;
    }

    pub(crate) fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embedder.embed(texts)
    }

    /// A memory was stored without a vector: the next store or search
    /// looks for missing vectors again.
    pub(crate) fn unsynced(&mut self) {
        self.synced_at = None;
    }

    /// The space for vectors of `dim`, created if new (inside the caller's
    /// transaction).
    pub(crate) fn space_for(&mut self, db: &Connection, dim: usize) -> rusqlite::Result<Space> {
        if let Some(space) = self.space.as_ref().filter(|s| s.dim == dim) {
            return Ok(space.clone());
        }
        db.execute("INSERT OR IGNORE INTO embedders (key, dim) VALUES (?1, ?2)", params![self.key, dim as i64])?;
        let id: i64 =
            db.query_row("SELECT id FROM embedders WHERE key = ?1 AND dim = ?2", params![self.key, dim as i64], |r| {
                r.get(0)
            })?;
        let space = Space { id, dim };
        let table = space.table();
        let columns = if space.has_bits() {
            format!("bits bit[{dim}], +embedding blob")
        } else {
            format!("embedding float[{dim}] distance_metric=cosine")
        };
        db.execute_batch(&format!(
            "CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0 (topic text partition key, {columns});
             CREATE TRIGGER IF NOT EXISTS {table}_ad AFTER DELETE ON memories BEGIN
                 DELETE FROM {table} WHERE rowid = old.id;
             END;"
        ))?;
        self.space = Some(space.clone());
        Ok(space)
    }

    /// Embeds every memory without a vector in the current space, `batch`
    /// at a time, each batch in one transaction; `progress(done, total)`
    /// after each.
    pub(crate) fn fill_missing(
        &mut self,
        db: &Connection,
        batch: usize,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<(), String> {
        let sql_error = |e: rusqlite::Error| e.to_string();
        let version: i64 = db.query_row("PRAGMA data_version", [], |r| r.get(0)).map_err(sql_error)?;
        if self.synced_at == Some(version) {
            return Ok(());
        }
        let total: i64 = db.query_row("SELECT count(*) FROM memories", [], |r| r.get(0)).map_err(sql_error)?;
        let have: i64 = match &self.space {
            Some(s) => db
                .query_row("SELECT count(*) FROM embedded WHERE embedder = ?1", params![s.id], |r| r.get(0))
                .map_err(sql_error)?,
            None => 0,
        };
        let total = (total - have).max(0) as usize;
        if total == 0 {
            self.synced_at = Some(version);
            return Ok(());
        }
        let mut done = 0;
        loop {
            let space_id = self.space.as_ref().map_or(-1, |s| s.id);
            let rows: Vec<(i64, String, String)> = {
                let mut stmt = db
                    .prepare_cached(
                        "SELECT m.id, m.topic, m.text FROM memories m
                         WHERE NOT EXISTS (SELECT 1 FROM embedded e WHERE e.embedder = ?1 AND e.id = m.id)
                         ORDER BY m.id LIMIT ?2",
                    )
                    .map_err(sql_error)?;
                stmt.query_map(params![space_id, batch as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .and_then(Iterator::collect)
                    .map_err(sql_error)?
            };
            if rows.is_empty() {
                self.synced_at = Some(version);
                return Ok(());
            }
            let texts: Vec<String> = rows.iter().map(|(_, _, text)| text.clone()).collect();
            let vectors = self.embed(&texts).map_err(|e| e.to_string())?;
            let dim = vectors.first().map_or(0, Vec::len);
            if dim == 0 || vectors.len() != rows.len() || vectors.iter().any(|v| v.len() != dim) {
                return Err(format!("the embedder {} gave vectors of no or mixed dimensions", self.key));
            }
            if let Err(e) = self.save_batch(db, &rows, &vectors, dim) {
                self.reload(db);
                return Err(e.to_string());
            }
            done += rows.len();
            progress(done.min(total), total);
        }
    }

    /// One batch of embedded memories, in one transaction.
    fn save_batch(
        &mut self,
        db: &Connection,
        rows: &[(i64, String, String)],
        vectors: &[Vec<f32>],
        dim: usize,
    ) -> rusqlite::Result<()> {
        let tx = rusqlite::Transaction::new_unchecked(db, TransactionBehavior::Immediate)?;
        let space = self.space_for(&tx, dim)?;
        for ((id, topic, _), vector) in rows.iter().zip(vectors) {
            // Another process may have embedded or forgotten it meanwhile.
            let wanted: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM memories WHERE id = ?1)
                    AND NOT EXISTS (SELECT 1 FROM embedded WHERE embedder = ?2 AND id = ?1)",
                params![id, space.id],
                |r| r.get(0),
            )?;
            if wanted {
                space.insert(&tx, *id, topic, vector)?;
            }
        }
        tx.commit()
    }

    /// The `k` nearest memories to `query` as (id, cosine similarity),
    /// filters applied before ranking: the topic inside the vec0 KNN (a
    /// partition key: only that topic's chunks are read), a keyword by
    /// scoring exactly the memories that contain it.
    ///
    /// With sign bits (dimensions that are multiples of 8) the KNN has two
    /// stages: vec0's Hamming KNN over the bits picks [`COARSE_PER_RESULT`]
    /// candidates per result (at least [`COARSE_MIN`]), and exact cosine
    /// over their float vectors ranks them; a space of at most that many
    /// vectors is thus searched exactly. Other spaces: vec0's exact KNN.
    pub(crate) fn knn(
        &self,
        db: &Connection,
        query: &[f32],
        filter: &Filter<'_>,
        k: usize,
    ) -> rusqlite::Result<Vec<(i64, f64)>> {
        let Some(space) = self.space.as_ref().filter(|s| s.dim == query.len()) else { return Ok(Vec::new()) };
        let table = space.table();
        let query = blob(query);
        let k = k.clamp(1, MAX_K);
        if !filter.keyword.is_empty() {
            let sql = format!(
                "SELECT m.id, vec_distance_cosine(v.embedding, ?1) AS d
                 FROM memories m JOIN {table} v ON v.rowid = m.id
                 WHERE (?2 = '' OR m.topic = ?2) AND instr(lower(m.text), lower(?3)) > 0
                 ORDER BY d LIMIT ?4"
            );
            let mut stmt = db.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![query, filter.topic, filter.keyword, k as i64], pair)?;
            return rows.map(|r| r.map(|(id, d)| (id, 1.0 - d))).collect();
        }
        let topic = if filter.topic.is_empty() { "?3 = ''" } else { "topic = ?3" };
        if !space.has_bits() {
            let sql = format!("SELECT rowid, distance FROM {table} WHERE embedding MATCH ?1 AND k = ?2 AND {topic}");
            let mut stmt = db.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![query, k as i64, filter.topic], pair)?;
            return rows.map(|r| r.map(|(id, d)| (id, 1.0 - d))).collect();
        }
        let wanted = k.saturating_mul(COARSE_PER_RESULT).clamp(COARSE_MIN, MAX_K);
        let sql = format!(
            "SELECT rowid, distance FROM {table} WHERE bits MATCH vec_quantize_binary(vec_f32(?1)) AND k = ?2 AND {topic}"
        );
        let mut stmt = db.prepare_cached(&sql)?;
        let candidates: Vec<(i64, f64)> =
            stmt.query_map(params![query, wanted as i64, filter.topic], pair)?.collect::<rusqlite::Result<_>>()?;
        let mut exact =
            db.prepare_cached(&format!("SELECT vec_distance_cosine(embedding, ?1) FROM {table} WHERE rowid = ?2"))?;
        let mut scored = Vec::with_capacity(candidates.len());
        for (id, _) in candidates {
            let distance: f64 = exact.query_row(params![query, id], |r| r.get(0))?;
            scored.push((id, 1.0 - distance));
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        Ok(scored)
    }
}

/// sqlite-vec's largest `k`.
const MAX_K: usize = 4096;
/// Candidates of the coarse (sign-bit) stage per result wanted, and at least.
pub const COARSE_PER_RESULT: usize = 8;
pub const COARSE_MIN: usize = 160;

/// The newest space of embedder `key`: its dimension is what it gives now.
fn newest_space(db: &Connection, key: &str) -> rusqlite::Result<Option<Space>> {
    db.query_row("SELECT id, dim FROM embedders WHERE key = ?1 ORDER BY id DESC LIMIT 1", params![key], |r| {
        Ok(Space { id: r.get(0)?, dim: r.get::<_, i64>(1)? as usize })
    })
    .optional()
}

fn pair(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, f64)> {
    Ok((r.get(0)?, r.get(1)?))
}

/// A vector as sqlite-vec takes it: little-endian f32s.
pub(crate) fn blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// (embedder id, dimension, vectors held) of every space.
pub(crate) fn spaces(db: &Connection) -> rusqlite::Result<Vec<(String, usize, usize)>> {
    let mut stmt = db.prepare(
        "SELECT e.key, e.dim, (SELECT count(*) FROM embedded d WHERE d.embedder = e.id) FROM embedders e ORDER BY e.id",
    )?;
    stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as usize, r.get::<_, i64>(2)? as usize)))?.collect()
}

/// Rows for memory `id` across every vec0 table.
pub(crate) fn rows_of(db: &Connection, id: i64) -> rusqlite::Result<usize> {
    let ids: Vec<i64> =
        db.prepare("SELECT id FROM embedders")?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    let mut n = 0;
    for space in ids {
        let table = format!("memories_vec_{space}");
        let exists: bool =
            db.query_row("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?1)", params![table], |r| r.get(0))?;
        if exists {
            n += db.query_row(&format!("SELECT count(*) FROM {table} WHERE rowid = ?1"), params![id], |r| {
                r.get::<_, i64>(0)
            })? as usize;
        }
    }
    Ok(n)
}
