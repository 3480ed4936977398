//! The first stage of the SQLite KNN: the memories whose sign bits are
//! nearest the query's (Hamming distance), read straight from the chunks
//! sqlite-vec keeps for a `vec0` table, and selected in one pass.
//!
//! Why not vec0's own `bits MATCH … AND k = ?`: sqlite-vec 0.1.9 picks
//! each chunk's `k` nearest by `k` passes over the chunk's 1,024 vectors,
//! so its time grows with the candidates kept (at 100,000 memories, 160
//! candidates took 20 ms and 320 took 34 ms), and more candidates are
//! what recall needs. Reading the same chunks and keeping the nearest in
//! one selection costs the same for any number of candidates.
//!
//! This reads vec0's shadow tables, whose layout belongs to sqlite-vec
//! (pinned to 0.1.9 in Cargo.toml): `{table}_chunks` (one row per chunk of
//! a partition: a validity bitmap and the chunk's rowids as little-endian
//! i64s) and `{table}_vector_chunks00` (the chunk's bit vectors, one after
//! the other). A chunk whose sizes disagree is an error, never a shorter
//! answer; a test checks that this stage agrees with vec0's own KNN.

use rusqlite::{Connection, params};

/// A layout this stage does not know, as an error that names it.
fn layout_error(table: &str, what: &str) -> rusqlite::Error {
    rusqlite::Error::UserFunctionError(
        format!(
            "the sqlite-vec chunks of {table} are not laid out as sqlite-vec 0.1.9 lays them out ({what}); \
             this clix reads them directly for speed: rebuild with the sqlite-vec version in Cargo.toml"
        )
        .into(),
    )
}

/// The `wanted` rowids of `table` (a vec0 table whose first vector column
/// is `bit[8 × query_bits.len()]` and whose first partition key is the
/// topic) nearest to `query_bits` in Hamming distance, nearest first (ties
/// by rowid), within `topic` (`""`: every partition).
pub(super) fn nearest_bits(
    db: &Connection,
    table: &str,
    query_bits: &[u8],
    topic: &str,
    wanted: usize,
) -> rusqlite::Result<Vec<i64>> {
    let width = query_bits.len();
    let query_words = words(query_bits);
    let sql = format!(
        "SELECT c.validity, c.rowids, v.vectors FROM \"{table}_chunks\" c
         JOIN \"{table}_vector_chunks00\" v ON v.rowid = c.chunk_id
         WHERE ?1 = '' OR c.partition00 = ?1"
    );
    let mut stmt = db.prepare_cached(&sql)?;
    let mut rows = stmt.query(params![topic])?;
    // (distance, rowid) of every valid vector: 12 bytes each, 1.2 MB at
    // 100,000; one selection at the end keeps the `wanted` nearest.
    let mut scored: Vec<(u32, i64)> = Vec::new();
    while let Some(row) = rows.next()? {
        let validity = row.get_ref(0)?.as_blob()?;
        let rowids = row.get_ref(1)?.as_blob()?;
        let vectors = row.get_ref(2)?.as_blob()?;
        let size = validity.len() * 8;
        if rowids.len() != size * 8 {
            return Err(layout_error(table, "rowids do not match the validity bitmap"));
        }
        if vectors.len() < size * width {
            return Err(layout_error(table, "the vector chunk is shorter than its rowids"));
        }
        for slot in 0..size {
            if validity[slot / 8] >> (slot % 8) & 1 == 0 {
                continue;
            }
            let mut rowid = [0u8; 8];
            rowid.copy_from_slice(&rowids[slot * 8..slot * 8 + 8]);
            let rowid = i64::from_le_bytes(rowid);
            let distance = hamming(&query_words, &vectors[slot * width..(slot + 1) * width]);
            scored.push((distance, rowid));
        }
    }
    if scored.len() > wanted {
        scored.select_nth_unstable(wanted);
        scored.truncate(wanted);
    }
    scored.sort_unstable();
    Ok(scored.into_iter().map(|(_, rowid)| rowid).collect())
}

/// Bits as 64-bit words (the tail zero-padded), for [`hamming`].
fn words(bits: &[u8]) -> Vec<u64> {
    bits.chunks(8)
        .map(|w| {
            let mut word = [0u8; 8];
            word[..w.len()].copy_from_slice(w);
            u64::from_le_bytes(word)
        })
        .collect()
}

/// Bits that differ between `query` (as [`words`]) and `vector` (bytes of the same length).
fn hamming(query: &[u64], vector: &[u8]) -> u32 {
    query
        .iter()
        .zip(vector.chunks(8))
        .map(|(q, w)| {
            let mut word = [0u8; 8];
            word[..w.len()].copy_from_slice(w);
            (q ^ u64::from_le_bytes(word)).count_ones()
        })
        .sum()
}

/// A unit-free float vector's sign bits, as sqlite-vec's
/// `vec_quantize_binary` makes them: bit `i % 8` of byte `i / 8` is set
/// when component `i` is above zero.
pub(super) fn sign_bits(vector: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; vector.len().div_ceil(8)];
    for (i, x) in vector.iter().enumerate() {
        if *x > 0.0 {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded pseudo-random vector (xorshift), components in [-1, 1).
    fn vector(seed: u64, dim: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    fn blob(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// This stage and vec0's own Hamming KNN give the same distances, in
    /// every partition and across them, after deletes (validity bits)
    /// and over several chunks: the shadow-table layout is what this
    /// module expects.
    #[test]
    fn agrees_with_vec0s_own_knn() {
        let (db, _) = crate::sqlite::schema::connect(std::path::Path::new(":memory:")).unwrap();
        let dim = 72; // 9 bytes: a partial last word
        db.execute_batch(&format!(
            "CREATE VIRTUAL TABLE t USING vec0 (topic text partition key, bits bit[{dim}], +embedding blob)"
        ))
        .unwrap();
        let n = 2_600; // three chunks of 1,024 in the busiest partition
        for id in 1..=n {
            let topic = ["a", "b", "c"][(id % 3) as usize];
            let v = vector(id as u64, dim);
            db.execute(
                "INSERT INTO t (rowid, topic, bits, embedding) VALUES (?1, ?2, vec_quantize_binary(vec_f32(?3)), ?3)",
                params![id, topic, blob(&v)],
            )
            .unwrap();
        }
        db.execute("DELETE FROM t WHERE rowid % 7 = 0", []).unwrap();
        let distance = |q: &[u8], id: i64| -> u32 {
            let bits: Vec<u8> = db.query_row("SELECT bits FROM t WHERE rowid = ?1", [id], |r| r.get(0)).unwrap();
            hamming(&words(q), &bits)
        };
        for seed in [10_001u64, 10_002, 10_003] {
            let query = vector(seed, dim);
            let bits = sign_bits(&query);
            for topic in ["", "a", "c"] {
                for k in [1usize, 5, 40, 300] {
                    let ours = nearest_bits(&db, "t", &bits, topic, k).unwrap();
                    // The partition constraint must be a plain `topic = ?`
                    // for vec0 to apply it inside the KNN (an OR is
                    // applied after it, to its k rows).
                    let partition = if topic.is_empty() { "?3 = ''" } else { "topic = ?3" };
                    let theirs: Vec<(i64, f64)> = db
                        .prepare(&format!(
                            "SELECT rowid, distance FROM t WHERE bits MATCH vec_quantize_binary(vec_f32(?1))
                             AND k = ?2 AND {partition}"
                        ))
                        .unwrap()
                        .query_map(params![blob(&query), k as i64, topic], |r| Ok((r.get(0)?, r.get(1)?)))
                        .unwrap()
                        .collect::<Result<_, _>>()
                        .unwrap();
                    assert_eq!(ours.len(), theirs.len(), "topic {topic:?}, k {k}");
                    assert!(ours.iter().all(|id| id % 7 != 0), "a deleted vector came back");
                    let our_distances: Vec<u32> = ours.iter().map(|id| distance(&bits, *id)).collect();
                    let their_distances: Vec<u32> = theirs.iter().map(|(_, d)| *d as u32).collect();
                    assert_eq!(our_distances, their_distances, "topic {topic:?}, k {k}");
                    if !topic.is_empty() {
                        let topics: Vec<String> = ours
                            .iter()
                            .map(|id| db.query_row("SELECT topic FROM t WHERE rowid = ?1", [id], |r| r.get(0)).unwrap())
                            .collect();
                        assert!(topics.iter().all(|t| t == topic), "another partition's vector in {topic:?}");
                    }
                }
            }
        }
    }
}
