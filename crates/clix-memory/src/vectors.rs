//! Vector spaces: one sqlite-vec `vec0` table per (embedder, dimension),
//! listed in `embedders`; `embedded` records which memories each space
//! holds, `embed_failed` the memories it has no vector for (the embedder
//! rejects them, or gives a zero vector): they are found by their words
//! only, and not embedded again in that space. Triggers created with each
//! table remove a forgotten memory's vector from every space.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::embed::{EmbedError, Embedder};
use crate::store::Filter;

/// The vec0 table of the space with this id.
fn table_of(id: i64) -> String {
    format!("memories_vec_{id}")
}

/// Drops every space's vector of the memories of `topic` and the record
/// that they were embedded (inside the caller's transaction), so the next
/// fill embeds them again: a vector's topic is its table's partition key.
pub(crate) fn forget_vectors_of(db: &Connection, topic: &str) -> rusqlite::Result<()> {
    let spaces: Vec<i64> =
        db.prepare("SELECT id FROM embedders")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    for space in spaces {
        let table = table_of(space);
        let exists: bool =
            db.query_row("SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1", [&table], |r| {
                r.get(0)
            })?;
        if exists {
            db.execute(
                &format!("DELETE FROM {table} WHERE rowid IN (SELECT id FROM memories WHERE topic = ?1)"),
                [topic],
            )?;
        }
    }
    for record in ["embedded", "embed_failed"] {
        db.execute(&format!("DELETE FROM {record} WHERE id IN (SELECT id FROM memories WHERE topic = ?1)"), [topic])?;
    }
    Ok(())
}

/// One vector space: its row in `embedders` and its `vec0` table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Space {
    id: i64,
    dim: usize,
}

impl Space {
    fn table(&self) -> String {
        table_of(self.id)
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

    /// Records that memory `id` has no vector in this space.
    pub(crate) fn insert_failed(&self, db: &Connection, id: i64) -> rusqlite::Result<()> {
        db.prepare_cached("INSERT OR IGNORE INTO embed_failed (embedder, id) VALUES (?1, ?2)")?
            .execute(params![self.id, id])?;
        Ok(())
    }
}

/// What the embedder made of one text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Embedding {
    /// A usable vector, scaled to unit length.
    Vector(Vec<f32>),
    /// No vector for this text in a space of this dimension: a zero or
    /// non-finite vector, or an error for this text alone.
    None { dim: usize, reason: String },
}

impl Embedding {
    pub(crate) fn dim(&self) -> usize {
        match self {
            Embedding::Vector(v) => v.len(),
            Embedding::None { dim, .. } => *dim,
        }
    }
}

/// Why a zero or non-finite vector is not stored.
pub(crate) const NO_DIRECTION: &str = "the embedder gives a zero (or non-finite) vector for it";

/// `vector` scaled to unit length (cosine similarity is unchanged, and
/// sqlite-vec's f32 sums can neither overflow nor vanish), or `None` for a
/// zero, empty or non-finite vector: it has no direction to compare.
pub(crate) fn unit(vector: &[f32]) -> Option<Vec<f32>> {
    let norm = vector.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    (norm.is_finite() && norm > 0.0).then(|| vector.iter().map(|x| (f64::from(*x) / norm) as f32).collect())
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
    /// The dimension of a vector the embedder gave during the current
    /// operation (a store or a search): proof that it is up, so a text it
    /// rejects alone is rejected for itself.
    answered: Option<usize>,
}

impl Vectors {
    pub(crate) fn new(db: &Connection, embedder: Box<dyn Embedder>) -> rusqlite::Result<Self> {
        let key = embedder.id();
        let space = newest_space(db, &key)?;
        Ok(Vectors { embedder, key, space, synced_at: None, answered: None })
    }

    /// After a failed transaction: a space it created was rolled back too,
    /// so what is known about the spaces is read again.
    pub(crate) fn reload(&mut self, db: &Connection) {
        self.space = newest_space(db, &self.key).ok().flatten();
        self.synced_at = None;
    }

    /// A store or a search begins: whether the embedder is up is not
    /// known yet.
    pub(crate) fn begin(&mut self) {
        self.answered = None;
    }

    /// One vector per text (checked), noting that the embedder answered.
    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self.embedder.embed(texts)?;
        if vectors.len() != texts.len() {
            let message = format!("gave {} vectors for {} texts", vectors.len(), texts.len());
            return Err(EmbedError::Request { url: self.key.clone(), message });
        }
        if let Some(v) = vectors.iter().find(|v| !v.is_empty()) {
            self.answered = Some(v.len());
        }
        Ok(vectors)
    }

    /// The embedding of one text (a memory being stored, a query):
    /// [`Embedding::None`] for a zero, empty or non-finite vector.
    pub(crate) fn embed_one(&mut self, text: &str) -> Result<Embedding, String> {
        let vector = self.embed(&[text.to_string()]).map_err(|e| e.to_string())?.pop().unwrap_or_default();
        Ok(match unit(&vector) {
            Some(v) => Embedding::Vector(v),
            None => Embedding::None { dim: vector.len(), reason: NO_DIRECTION.into() },
        })
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
        // A new space holds none of the other memories yet.
        self.synced_at = None;
        Ok(space)
    }

    /// Memory `id`'s embedding into the space of its dimension (inside the
    /// caller's transaction): its vector, or the record that it has none.
    pub(crate) fn save(
        &mut self,
        db: &Connection,
        id: i64,
        topic: &str,
        embedding: &Embedding,
    ) -> rusqlite::Result<()> {
        let space = self.space_for(db, embedding.dim())?;
        match embedding {
            Embedding::Vector(vector) => space.insert(db, id, topic, vector),
            Embedding::None { .. } => space.insert_failed(db, id),
        }
    }

    /// Embeds every memory without a vector in the current space, `batch`
    /// at a time, each batch in one transaction; `progress(done, total)`
    /// after each. A batch the embedder rejects is embedded text by text:
    /// the texts it still rejects alone (while it answers others), and those
    /// it gives zero vectors for, are recorded as having no vector (named in
    /// `warnings`) and skipped from then on. An embedder that answers nothing
    /// marks nothing: the error is returned and the next call tries again.
    pub(crate) fn fill_missing(
        &mut self,
        db: &Connection,
        batch: usize,
        mut progress: impl FnMut(usize, usize),
        warnings: &mut Vec<String>,
    ) -> Result<(), String> {
        let sql_error = |e: rusqlite::Error| e.to_string();
        let version: i64 = db.query_row("PRAGMA data_version", [], |r| r.get(0)).map_err(sql_error)?;
        if self.synced_at == Some(version) {
            return Ok(());
        }
        let total: i64 = db.query_row("SELECT count(*) FROM memories", [], |r| r.get(0)).map_err(sql_error)?;
        let have: i64 = match &self.space {
            Some(s) => db
                .query_row(
                    "SELECT (SELECT count(*) FROM embedded WHERE embedder = ?1)
                          + (SELECT count(*) FROM embed_failed WHERE embedder = ?1)",
                    params![s.id],
                    |r| r.get(0),
                )
                .map_err(sql_error)?,
            None => 0,
        };
        let total = (total - have).max(0) as usize;
        if total == 0 {
            self.synced_at = Some(version);
            return Ok(());
        }
        let mut done = 0;
        let mut left_out: Vec<(i64, String)> = Vec::new();
        let result = loop {
            let space_id = self.space.as_ref().map_or(-1, |s| s.id);
            let rows: Vec<(i64, String, String)> = {
                let mut stmt = db
                    .prepare_cached(
                        "SELECT m.id, m.topic, m.text FROM memories m
                         WHERE NOT EXISTS (SELECT 1 FROM embedded e WHERE e.embedder = ?1 AND e.id = m.id)
                           AND NOT EXISTS (SELECT 1 FROM embed_failed f WHERE f.embedder = ?1 AND f.id = m.id)
                         ORDER BY m.id LIMIT ?2",
                    )
                    .map_err(sql_error)?;
                stmt.query_map(params![space_id, batch as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .and_then(Iterator::collect)
                    .map_err(sql_error)?
            };
            if rows.is_empty() {
                self.synced_at = Some(version);
                break Ok(());
            }
            let embeddings = match self.embed_rows(&rows) {
                Ok(e) => e,
                Err(e) => break Err(e),
            };
            if let Err(e) = self.save_batch(db, &rows, &embeddings) {
                self.reload(db);
                break Err(e.to_string());
            }
            for ((id, _, _), embedding) in rows.iter().zip(&embeddings) {
                if let Embedding::None { reason, .. } = embedding {
                    left_out.push((*id, reason.clone()));
                }
            }
            done += rows.len();
            progress(done.min(total), total);
        };
        if let Some((_, reason)) = left_out.first() {
            let ids: Vec<String> = left_out.iter().take(10).map(|(id, _)| format!("#{id}")).collect();
            let more = if left_out.len() > ids.len() { ", …" } else { "" };
            warnings.push(format!(
                "{} left without a vector ({reason}), found by their words only: {}{more}",
                if left_out.len() == 1 { "1 memory".to_string() } else { format!("{} memories", left_out.len()) },
                ids.join(", ")
            ));
        }
        result
    }

    /// The embeddings of a batch of rows, one per row, all of one
    /// dimension. When the embedder rejects the batch, each text is tried
    /// alone; a text rejected alone gets no vector once the embedder has
    /// answered another text during this operation. Two texts rejected
    /// before any answer: the embedder looks down, the error is returned.
    fn embed_rows(&mut self, rows: &[(i64, String, String)]) -> Result<Vec<Embedding>, String> {
        let texts: Vec<String> = rows.iter().map(|(_, _, text)| text.clone()).collect();
        let results: Vec<Result<Vec<f32>, EmbedError>> = match self.embed(&texts) {
            Ok(vectors) => vectors.into_iter().map(Ok).collect(),
            Err(e) if texts.len() == 1 => vec![Err(e)],
            Err(_) => {
                let mut results = Vec::with_capacity(texts.len());
                let mut unanswered = 0;
                for text in &texts {
                    let result = self.embed(std::slice::from_ref(text)).map(|mut v| v.pop().unwrap_or_default());
                    if let Err(e) = &result
                        && self.answered.is_none()
                    {
                        unanswered += 1;
                        if unanswered == 2 {
                            return Err(e.to_string());
                        }
                    }
                    results.push(result);
                }
                results
            }
        };
        let dims: Vec<usize> =
            results.iter().filter_map(|r| r.as_ref().ok()).map(Vec::len).filter(|n| *n > 0).collect();
        if dims.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!("the embedder {} gave vectors of mixed dimensions", self.key));
        }
        let Some(dim) = dims.first().copied().or(self.answered).or(self.space.as_ref().map(|s| s.dim)) else {
            return Err(results
                .into_iter()
                .find_map(Result::err)
                .map_or_else(|| format!("the embedder {} gave empty vectors", self.key), |e| e.to_string()));
        };
        let mut embeddings = Vec::with_capacity(results.len());
        for result in results {
            embeddings.push(match result {
                Ok(vector) => match unit(&vector) {
                    Some(v) => Embedding::Vector(v),
                    None => Embedding::None { dim, reason: NO_DIRECTION.into() },
                },
                // A busy or unreachable server says nothing about the text:
                // it stays missing and is tried again next time.
                Err(e) if self.answered.is_some() && !e.is_transient() => {
                    Embedding::None { dim, reason: format!("the embedder rejects it alone: {e}") }
                }
                Err(e) => return Err(e.to_string()),
            });
        }
        Ok(embeddings)
    }

    /// One batch of embedded memories, in one transaction.
    fn save_batch(
        &mut self,
        db: &Connection,
        rows: &[(i64, String, String)],
        embeddings: &[Embedding],
    ) -> rusqlite::Result<()> {
        let tx = rusqlite::Transaction::new_unchecked(db, TransactionBehavior::Immediate)?;
        for ((id, topic, _), embedding) in rows.iter().zip(embeddings) {
            let space = self.space_for(&tx, embedding.dim())?;
            // Another process may have embedded or forgotten it meanwhile.
            let wanted: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM memories WHERE id = ?1)
                    AND NOT EXISTS (SELECT 1 FROM embedded WHERE embedder = ?2 AND id = ?1)
                    AND NOT EXISTS (SELECT 1 FROM embed_failed WHERE embedder = ?2 AND id = ?1)",
                params![id, space.id],
                |r| r.get(0),
            )?;
            if wanted {
                self.save(&tx, *id, topic, embedding)?;
            }
        }
        tx.commit()
    }

    /// The `k` nearest memories to `query` as (id, cosine similarity),
    /// filters applied before ranking: the topic inside the vec0 KNN (a
    /// partition key: only that topic's chunks are read), a keyword by
    /// scoring exactly the memories that contain it. `scope` (a JSON array
    /// of topics, or empty) confines both: without a filter topic, each of
    /// its topics is searched and the results merged.
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
        scope: &str,
        k: usize,
    ) -> rusqlite::Result<Vec<(i64, f64)>> {
        let Some(space) = self.space.as_ref().filter(|s| s.dim == query.len()) else { return Ok(Vec::new()) };
        let table = space.table();
        let k = k.clamp(1, MAX_K);
        if !filter.keyword.is_empty() {
            let sql = format!(
                "SELECT m.id, vec_distance_cosine(v.embedding, ?1) AS d
                 FROM memories m JOIN {table} v ON v.rowid = m.id
                 WHERE (?2 = '' OR m.topic = ?2) AND clix_contains(m.text, ?3)
                   AND (?5 = '' OR m.topic IN (SELECT value FROM json_each(?5)))
                 ORDER BY d LIMIT ?4"
            );
            let mut stmt = db.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![blob(query), filter.topic, filter.keyword, k as i64, scope], pair)?;
            return similarities(rows);
        }
        let topics: Vec<String> =
            if scope.is_empty() { Vec::new() } else { serde_json::from_str(scope).unwrap_or_default() };
        if topics.is_empty() || (!filter.topic.is_empty() && topics.iter().any(|t| t == filter.topic)) {
            return self.knn_topic(db, space, query, filter.topic, k);
        }
        if !filter.topic.is_empty() {
            return Ok(Vec::new());
        }
        // Each topic is a partition of its own: the nearest of each, merged.
        let mut merged = Vec::new();
        for topic in &topics {
            merged.extend(self.knn_topic(db, space, query, topic, k)?);
        }
        merged.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        merged.truncate(k);
        Ok(merged)
    }

    /// The KNN within one topic's partition (`""`: every topic).
    fn knn_topic(
        &self,
        db: &Connection,
        space: &Space,
        query: &[f32],
        topic_filter: &str,
        k: usize,
    ) -> rusqlite::Result<Vec<(i64, f64)>> {
        let table = space.table();
        let query = blob(query);
        let topic = if topic_filter.is_empty() { "?3 = ''" } else { "topic = ?3" };
        if !space.has_bits() {
            let sql = format!("SELECT rowid, distance FROM {table} WHERE embedding MATCH ?1 AND k = ?2 AND {topic}");
            let mut stmt = db.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![query, k as i64, topic_filter], pair)?;
            return similarities(rows);
        }
        let wanted = k.saturating_mul(COARSE_PER_RESULT).clamp(COARSE_MIN, MAX_K);
        let sql = format!(
            "SELECT rowid, distance FROM {table} WHERE bits MATCH vec_quantize_binary(vec_f32(?1)) AND k = ?2 AND {topic}"
        );
        let mut stmt = db.prepare_cached(&sql)?;
        let candidates: Vec<(i64, Option<f64>)> =
            stmt.query_map(params![query, wanted as i64, topic_filter], pair)?.collect::<rusqlite::Result<_>>()?;
        let mut exact =
            db.prepare_cached(&format!("SELECT vec_distance_cosine(embedding, ?1) FROM {table} WHERE rowid = ?2"))?;
        let mut scored = Vec::with_capacity(candidates.len());
        for (id, _) in candidates {
            // NULL: a zero vector stored by an older clix; it has no direction.
            let distance: Option<f64> = exact.query_row(params![query, id], |r| r.get(0))?;
            if let Some(d) = distance {
                scored.push((id, 1.0 - d));
            }
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
/// The fewest candidates the coarse stage keeps, however few results are wanted.
pub const COARSE_MIN: usize = 160;

/// The newest space of embedder `key`: its dimension is what it gives now.
fn newest_space(db: &Connection, key: &str) -> rusqlite::Result<Option<Space>> {
    db.query_row("SELECT id, dim FROM embedders WHERE key = ?1 ORDER BY id DESC LIMIT 1", params![key], |r| {
        Ok(Space { id: r.get(0)?, dim: r.get::<_, i64>(1)? as usize })
    })
    .optional()
}

/// (id, cosine distance); the distance is NULL (a NaN) for a zero vector.
fn pair(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, Option<f64>)> {
    Ok((r.get(0)?, r.get(1)?))
}

/// (id, cosine similarity) of ranked (id, distance) rows, leaving out the
/// vectors without a direction (zero vectors stored by an older clix).
fn similarities(rows: impl Iterator<Item = rusqlite::Result<(i64, Option<f64>)>>) -> rusqlite::Result<Vec<(i64, f64)>> {
    let mut out = Vec::new();
    for row in rows {
        if let (id, Some(distance)) = row? {
            out.push((id, 1.0 - distance));
        }
    }
    Ok(out)
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
