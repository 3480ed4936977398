//! Vector spaces in SQLite: one sqlite-vec `vec0` table per (embedder,
//! dimension), listed in `embedders`; `embedded` records which memories
//! each space holds, `embed_failed` the memories it has no vector for.
//! Triggers created with each table remove a forgotten memory's vector
//! from every space. The topic is each table's partition key.

use rusqlite::{Connection, OptionalExtension, params};

use crate::backend::{Scope, Space, Target};
use crate::record::Filter;
use crate::vectors::Embedding;

/// The vec0 table of the space with this id.
fn table_of(id: i64) -> String {
    format!("memories_vec_{id}")
}

/// Spaces whose dimension is a multiple of 8 index each vector's sign
/// bits (`bits bit[dim]`) and keep the float vector beside them (an
/// auxiliary column); other dimensions index the float vector itself.
fn has_bits(space: &Space) -> bool {
    space.dim.is_multiple_of(8)
}

/// Drops every space's vector of the memories of `topic` and the record
/// that they were embedded (inside the caller's transaction), so the next
/// fill embeds them again: a vector's topic is its table's partition key.
pub(super) fn forget_vectors_of(db: &Connection, topic: &str) -> rusqlite::Result<()> {
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

/// The space of `target`'s embedder for vectors of `dim`, created if new
/// (inside the caller's transaction).
pub(super) fn space_for(db: &Connection, target: Target<'_>, dim: usize) -> rusqlite::Result<Space> {
    if let Some(space) = target.known.filter(|s| s.dim == dim) {
        return Ok(space.clone());
    }
    db.execute("INSERT OR IGNORE INTO embedders (key, dim) VALUES (?1, ?2)", params![target.key, dim as i64])?;
    let id: i64 =
        db.query_row("SELECT id FROM embedders WHERE key = ?1 AND dim = ?2", params![target.key, dim as i64], |r| {
            r.get(0)
        })?;
    let space = Space { id, dim };
    let table = table_of(id);
    let columns = if has_bits(&space) {
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
    Ok(space)
}

/// Memory `id`'s embedding into its embedder's space of that dimension
/// (inside the caller's transaction): its vector, or the record that it
/// has none. The space it went to.
pub(super) fn save(
    db: &Connection,
    target: Target<'_>,
    id: i64,
    topic: &str,
    embedding: &Embedding,
) -> rusqlite::Result<Space> {
    let space = space_for(db, target, embedding.dim())?;
    match embedding {
        Embedding::Vector(vector) => {
            let sql = if has_bits(&space) {
                "INSERT INTO {} (rowid, topic, bits, embedding) VALUES (?1, ?2, vec_quantize_binary(vec_f32(?3)), ?3)"
            } else {
                "INSERT INTO {} (rowid, topic, embedding) VALUES (?1, ?2, ?3)"
            };
            db.prepare_cached(&sql.replace("{}", &table_of(space.id)))?.execute(params![id, topic, blob(vector)])?;
            db.prepare_cached("INSERT INTO embedded (embedder, id) VALUES (?1, ?2)")?.execute(params![space.id, id])?;
        }
        Embedding::None { .. } => {
            db.prepare_cached("INSERT OR IGNORE INTO embed_failed (embedder, id) VALUES (?1, ?2)")?
                .execute(params![space.id, id])?;
        }
    }
    Ok(space)
}

/// The `k` nearest memories to `query` as (id, cosine similarity),
/// filters applied before ranking: the topic inside the vec0 KNN (a
/// partition key: only that topic's chunks are read), a keyword by
/// scoring exactly the memories that contain it. `scope` confines both:
/// without a filter topic, each of its topics is searched and the results
/// merged.
///
/// With sign bits (dimensions that are multiples of 8) the KNN has two
/// stages: vec0's Hamming KNN over the bits picks [`COARSE_PER_RESULT`]
/// candidates per result (at least [`COARSE_MIN`]), and exact cosine
/// over their float vectors ranks them; a space of at most that many
/// vectors is thus searched exactly. Other spaces: vec0's exact KNN.
pub(super) fn knn(
    db: &Connection,
    space: &Space,
    query: &[f32],
    filter: &Filter<'_>,
    scope: Scope<'_>,
    k: usize,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let table = table_of(space.id);
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
        let scope = super::scope_json(scope);
        let rows = stmt.query_map(params![blob(query), filter.topic, filter.keyword, k as i64, scope], pair)?;
        return similarities(rows);
    }
    let Some(topics) = scope else { return knn_topic(db, space, query, filter.topic, k) };
    if !filter.topic.is_empty() {
        if topics.iter().any(|t| t == filter.topic) {
            return knn_topic(db, space, query, filter.topic, k);
        }
        return Ok(Vec::new());
    }
    // Each topic is a partition of its own: the nearest of each, merged.
    let mut merged = Vec::new();
    for topic in topics {
        merged.extend(knn_topic(db, space, query, topic, k)?);
    }
    merged.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    merged.truncate(k);
    Ok(merged)
}

/// The KNN within one topic's partition (`""`: every topic).
fn knn_topic(
    db: &Connection,
    space: &Space,
    query: &[f32],
    topic_filter: &str,
    k: usize,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let table = table_of(space.id);
    if !has_bits(space) {
        let topic = if topic_filter.is_empty() { "?3 = ''" } else { "topic = ?3" };
        let sql = format!("SELECT rowid, distance FROM {table} WHERE embedding MATCH ?1 AND k = ?2 AND {topic}");
        let mut stmt = db.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![blob(query), k as i64, topic_filter], pair)?;
        return similarities(rows);
    }
    let wanted = k.saturating_mul(COARSE_PER_RESULT).max(COARSE_MIN);
    let bits = super::coarse::sign_bits(query);
    let candidates = super::coarse::nearest_bits(db, &table, &bits, topic_filter, wanted)?;
    // The float vector is the auxiliary column, in a table of its own keyed by rowid.
    let mut exact = db.prepare_cached(&format!("SELECT value00 FROM \"{table}_auxiliary\" WHERE rowid = ?1"))?;
    let mut scored = Vec::with_capacity(candidates.len());
    for id in candidates {
        let stored: Vec<u8> = exact.query_row(params![id], |r| r.get(0))?;
        // None: a zero vector stored by an older clix; it has no direction.
        if let Some(similarity) = cosine(query, &stored) {
            scored.push((id, similarity));
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(k);
    Ok(scored)
}

/// Cosine similarity of `query` and a stored vector (little-endian f32s),
/// as sqlite-vec's `vec_distance_cosine` computes it (in f32); `None` for
/// a zero vector, or a blob of another length.
fn cosine(query: &[f32], stored: &[u8]) -> Option<f64> {
    if stored.len() != query.len() * 4 {
        return None;
    }
    let (mut dot, mut a, mut b) = (0f32, 0f32, 0f32);
    for (q, x) in query.iter().zip(stored.chunks_exact(4)) {
        let x = f32::from_le_bytes([x[0], x[1], x[2], x[3]]);
        dot += q * x;
        a += q * q;
        b += x * x;
    }
    let norm = (a * b).sqrt();
    (norm > 0.0).then(|| f64::from(dot / norm))
}

/// sqlite-vec's largest `k`.
const MAX_K: usize = 4096;
/// Candidates of the SQLite KNN's coarse (sign-bit) stage per result wanted.
pub const COARSE_PER_RESULT: usize = 8;
/// The fewest candidates the SQLite KNN's coarse stage keeps, however few
/// results are wanted (hybrid search asks for 20: 160 with 8 per result,
/// so this decides). At 100,000 real embeddings (`clix-bench memory
/// --vectors model2vec`, one run each) 160 held 86.8% of the exact top 5
/// and 480 hold 94.1% (97.9% within a topic), for 6.2 ms against 4.8 ms
/// of KNN: the coarse stage selects in one pass (`coarse.rs`), so the
/// extra candidates cost only their exact cosines (a few microseconds each).
pub const COARSE_MIN: usize = 480;

/// The newest space of embedder `key`: its dimension is what it gives now.
pub(super) fn newest_space(db: &Connection, key: &str) -> rusqlite::Result<Option<Space>> {
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
fn blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// (embedder id, dimension, vectors held) of every space.
pub(super) fn spaces(db: &Connection) -> rusqlite::Result<Vec<(String, usize, usize)>> {
    let mut stmt = db.prepare(
        "SELECT e.key, e.dim, (SELECT count(*) FROM embedded d WHERE d.embedder = e.id) FROM embedders e ORDER BY e.id",
    )?;
    stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as usize, r.get::<_, i64>(2)? as usize)))?.collect()
}

/// Rows for memory `id` across every vec0 table.
pub(super) fn rows_of(db: &Connection, id: i64) -> rusqlite::Result<usize> {
    let ids: Vec<i64> =
        db.prepare("SELECT id FROM embedders")?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    let mut n = 0;
    for space in ids {
        let table = table_of(space);
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
