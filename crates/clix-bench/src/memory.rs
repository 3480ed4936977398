//! Memory at scale (issue 7): insert throughput and search latency at N
//! memories (100k by default), full text alone vs hybrid (FTS5 + sqlite-vec
//! vec0, vectors of dimension 384), with brute-force cosine over the same
//! vectors as the baseline: in RAM, and read from SQLite rows each query as
//! agent-clip does.

use std::path::Path;
use std::time::{Duration, Instant};

use clix_memory::{EmbedError, Embedder, Filter, Store};

use crate::{fmt, stats};

const DIM: usize = 384;
const QUERIES: usize = 200;

/// Synthetic vectors (timing only): a unit vector seeded by the text's hash.
struct Synthetic;

impl Embedder for Synthetic {
    fn id(&self) -> String {
        format!("bench:synthetic:{DIM}")
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| vector(hash(t))).collect())
    }
}

fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn vector(seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed | 1);
    let v: Vec<f32> = (0..DIM).map(|_| (rng.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

/// A vocabulary of 5000 made-up words; texts of 8–20 words drawn with a
/// skew (a few words common, most rare), like real notes.
struct Corpus {
    words: Vec<String>,
    rng: Rng,
}

impl Corpus {
    fn new() -> Self {
        let mut rng = Rng(42);
        let syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "da", "fe", "gu", "hi", "jo"];
        let words = (0..5000)
            .map(|_| (0..2 + rng.below(3)).map(|_| syllables[rng.below(syllables.len())]).collect::<String>())
            .collect();
        Corpus { words, rng }
    }

    fn word(&mut self) -> &str {
        // The smaller of two draws: low indexes are more frequent.
        let i = self.rng.below(self.words.len()).min(self.rng.below(self.words.len()));
        &self.words[i]
    }

    fn text(&mut self, n: usize) -> String {
        (0..n).map(|_| self.word().to_string()).collect::<Vec<_>>().join(" ")
    }
}

pub(crate) fn memory(n: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut fts = Store::open(&dir.path().join("fts.sqlite")).expect("store");
    let mut hybrid = Store::open(&dir.path().join("hybrid.sqlite"))
        .and_then(|s| s.with_embedder(Box::new(Synthetic)))
        .expect("store");
    let mut corpus = Corpus::new();
    let topics = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];

    // Inserts take turns, one memory each (one transaction each, as the
    // `memory store` command does), so drift hits both alike.
    let (mut fts_insert, mut hybrid_insert) = (Duration::ZERO, Duration::ZERO);
    for i in 0..n {
        let len = 8 + corpus.rng.below(13);
        let text = corpus.text(len);
        let topic = topics[i % topics.len()];
        let t = Instant::now();
        fts.store(&text, topic, "note", "bench").expect("store");
        fts_insert += t.elapsed();
        let t = Instant::now();
        hybrid.store(&text, topic, "note", "bench").expect("store");
        hybrid_insert += t.elapsed();
    }
    assert!(hybrid.take_warnings().is_empty());

    // The baselines hold the very vectors the hybrid store has.
    let t = Instant::now();
    let vectors = load_vectors(&dir.path().join("hybrid.sqlite"), n);
    let load = t.elapsed();
    let blob_db = blob_table(&dir.path().join("blobs.sqlite"), &vectors);

    let queries: Vec<String> = (0..QUERIES).map(|_| corpus.text(3)).collect();
    let (mut s_fts, mut s_hybrid, mut s_ram, mut s_blob, mut s_topic) = (vec![], vec![], vec![], vec![], vec![]);
    let mut s_knn = vec![];
    let (mut found, mut agree) = (0, 0);
    for q in &queries {
        let t = Instant::now();
        let hits = fts.search(q, &Filter::default(), 5).expect("search");
        s_fts.push(t.elapsed());
        found += usize::from(!hits.is_empty());

        let t = Instant::now();
        let hits = hybrid.search(q, &Filter::default(), 5).expect("search");
        s_hybrid.push(t.elapsed());
        assert_eq!(hits.len(), 5);

        let t = Instant::now();
        let hits = hybrid.search(q, &Filter { topic: "gamma", keyword: "" }, 5).expect("search");
        s_topic.push(t.elapsed());
        assert!(hits.iter().all(|h| h.memory.topic == "gamma"));

        let t = Instant::now();
        let near = hybrid.nearest(q, &Filter::default(), 5).expect("nearest");
        s_knn.push(t.elapsed());

        let query = vector(hash(q));
        let t = Instant::now();
        let best = brute_force_ram(&vectors, &query, 5);
        s_ram.push(t.elapsed());
        assert_eq!(best.len(), 5);
        // Vectors were loaded in id order from 1.
        let truth: Vec<i64> = best.iter().map(|(i, _)| *i as i64 + 1).collect();
        agree += near.iter().filter(|(id, _)| truth.contains(id)).count();

        let t = Instant::now();
        let best = brute_force_sqlite(&blob_db, &query, 5);
        s_blob.push(t.elapsed());
        assert_eq!(best.len(), 5);
    }

    let per_sec = |d: Duration| n as f64 / d.as_secs_f64();
    println!("\nmemory at {n} memories (dimension {DIM}, synthetic vectors; {QUERIES} queries of 3 words, top 5)\n");
    println!("| contender | insert (one transaction each) |\n|---|---|");
    println!("| full text (FTS5) | {:.0}/s |", per_sec(fts_insert));
    println!("| hybrid (FTS5 + vec0, vector given) | {:.0}/s |", per_sec(hybrid_insert));
    println!("\n| search | p50 | p95 |\n|---|---|---|");
    for (name, s) in [
        ("full text alone (BM25)", stats(s_fts)),
        ("hybrid: BM25 + vec0 KNN, RRF", stats(s_hybrid)),
        ("hybrid, topic filter (1/8 of the rows)", stats(s_topic)),
        ("vector KNN alone as search uses it (Store::nearest)", stats(s_knn)),
        ("brute-force cosine, vectors in RAM", stats(s_ram)),
        ("brute-force cosine, vectors read from SQLite rows (agent-clip)", stats(s_blob)),
    ] {
        println!("| {name} | {} | {} |", fmt(s.p50), fmt(s.p95));
    }
    println!(
        "\nKNN: vec0 Hamming over sign bits picks max({}, {}·k) candidates, exact cosine ranks them; \
         its top 5 holds {:.1}% of brute force's top 5 (synthetic random vectors: the hardest case)",
        clix_memory::COARSE_MIN,
        clix_memory::COARSE_PER_RESULT,
        100.0 * agree as f64 / (QUERIES * 5) as f64
    );
    println!("{found}/{QUERIES} full-text queries matched; loading {n} vectors into RAM took {}", fmt(load));
}

/// Every vector of the hybrid store, from its vec0 table, in id order.
fn load_vectors(db: &Path, n: usize) -> Vec<Vec<f32>> {
    let conn = rusqlite::Connection::open(db).expect("open");
    let table: String = conn
        .query_row("SELECT 'memories_vec_' || id FROM embedders LIMIT 1", [], |r| r.get(0))
        .expect("a vector space");
    let mut stmt = conn.prepare(&format!("SELECT embedding FROM {table} ORDER BY rowid")).expect("select");
    let vectors: Vec<Vec<f32>> = stmt
        .query_map([], |r| r.get::<_, Vec<u8>>(0))
        .expect("query")
        .map(|b| b.expect("row").chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        .collect();
    assert_eq!(vectors.len(), n);
    vectors
}

/// The same vectors as BLOB rows of a plain table.
fn blob_table(path: &Path, vectors: &[Vec<f32>]) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE v (id INTEGER PRIMARY KEY, embedding BLOB); BEGIN;")
        .expect("schema");
    for (i, v) in vectors.iter().enumerate() {
        let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        conn.execute("INSERT INTO v VALUES (?1, ?2)", rusqlite::params![i as i64, blob]).expect("insert");
    }
    conn.execute_batch("COMMIT;").expect("commit");
    conn
}

fn top(scores: impl Iterator<Item = (usize, f32)>, k: usize) -> Vec<(usize, f32)> {
    let mut all: Vec<(usize, f32)> = scores.collect();
    let k = k.min(all.len());
    all.select_nth_unstable_by(k.saturating_sub(1), |a, b| b.1.total_cmp(&a.1));
    all.truncate(k);
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    all
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    dot / (na.sqrt() * nb.sqrt())
}

fn brute_force_ram(vectors: &[Vec<f32>], query: &[f32], k: usize) -> Vec<(usize, f32)> {
    top(vectors.iter().enumerate().map(|(i, v)| (i, cosine(v, query))), k)
}

fn brute_force_sqlite(conn: &rusqlite::Connection, query: &[f32], k: usize) -> Vec<(usize, f32)> {
    let mut stmt = conn.prepare_cached("SELECT id, embedding FROM v").expect("select");
    let rows = stmt
        .query_map([], |r| {
            let id: i64 = r.get(0)?;
            let blob: Vec<u8> = r.get(1)?;
            let v: Vec<f32> = blob.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            Ok((id as usize, cosine(&v, query)))
        })
        .expect("query");
    top(rows.map(|r| r.expect("row")), k)
}
