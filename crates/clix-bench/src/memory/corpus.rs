//! The two corpora the memory benchmark loads: synthetic texts with
//! seeded random vectors (timing, and the hardest case for an approximate
//! KNN), and real text embedded by the MiniLM model2vec folder the tests
//! build (what recall@5 means for clix's users).

use std::path::{Path, PathBuf};

use clix_memory::{EmbedError, Embedder, Model2Vec};

pub(super) const DIM: usize = 384;

/// Memory i belongs to topic `TOPICS[i % 8]`.
pub(super) const TOPICS: [&str; 8] = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];

/// The topic the filtered searches ask for (an eighth of the memories).
pub(super) const FILTER_TOPIC: usize = 2;

/// N memories and the queries, with the vectors the store will hold (unit
/// length, scaled as the store scales them) for the exact baseline.
pub(super) struct Dataset {
    /// What the table's title says about it.
    pub(super) describe: String,
    pub(super) texts: Vec<String>,
    pub(super) vectors: Vec<Vec<f32>>,
    pub(super) queries: Vec<String>,
    pub(super) query_vectors: Vec<Vec<f32>>,
    /// A new embedder for a store (each store owns one).
    pub(super) embedder: Box<dyn Fn() -> Box<dyn Embedder>>,
    /// Made-up words and random vectors: what the concurrent writers store.
    pub(super) synthetic: bool,
}

/// `vector` scaled to unit length in f64, exactly as clix-memory scales
/// what an embedder gives; `None` for a vector without a direction.
fn unit(vector: &[f32]) -> Option<Vec<f32>> {
    let norm = vector.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    (norm.is_finite() && norm > 0.0).then(|| vector.iter().map(|x| (f64::from(*x) / norm) as f32).collect())
}

/// Synthetic vectors (timing only): a unit vector seeded by the text's hash.
pub(super) struct Synthetic;

impl Embedder for Synthetic {
    fn id(&self) -> String {
        format!("bench:synthetic:{DIM}")
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| vector(hash(t))).collect())
    }
}

pub(super) fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// xorshift64*: deterministic, no dependency.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
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
pub(super) struct Corpus {
    words: Vec<String>,
    rng: Rng,
}

impl Corpus {
    pub(super) fn new() -> Self {
        let mut rng = Rng(42);
        let syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "da", "fe", "gu", "hi", "jo"];
        let words = (0..5000)
            .map(|_| (0..2 + rng.below(3)).map(|_| syllables[rng.below(syllables.len())]).collect::<String>())
            .collect();
        Corpus { words, rng }
    }

    /// The same vocabulary, other draws.
    pub(super) fn reseeded(self, seed: u64) -> Self {
        Corpus { rng: Rng(seed), ..self }
    }

    fn word(&mut self) -> &str {
        // The smaller of two draws: low indexes are more frequent.
        let i = self.rng.below(self.words.len()).min(self.rng.below(self.words.len()));
        &self.words[i]
    }

    pub(super) fn text(&mut self, n: usize) -> String {
        (0..n).map(|_| self.word().to_string()).collect::<Vec<_>>().join(" ")
    }

    /// A memory's text: 8–20 words.
    pub(super) fn note(&mut self) -> String {
        let len = 8 + self.rng.below(13);
        self.text(len)
    }
}

/// N synthetic notes and `queries` queries of 3 words, vectors seeded by
/// each text's hash (as issue 7's benchmark had them).
pub(super) fn synthetic(n: usize, queries: usize) -> Dataset {
    let mut corpus = Corpus::new();
    let texts: Vec<String> = (0..n).map(|_| corpus.note()).collect();
    let queries: Vec<String> = (0..queries).map(|_| corpus.text(3)).collect();
    let embed = |t: &String| unit(&vector(hash(t))).expect("a random vector has a direction");
    Dataset {
        describe: format!(
            "synthetic: 8–20 made-up words from a skewed 5,000-word vocabulary, seeded random unit vectors of \
             dimension {DIM}; {} queries of 3 words",
            queries.len()
        ),
        vectors: texts.iter().map(embed).collect(),
        query_vectors: queries.iter().map(embed).collect(),
        texts,
        queries,
        embedder: Box::new(|| Box::new(Synthetic)),
        synthetic: true,
    }
}

/// The MiniLM model2vec folder the tests use (`clix_testkit::model2vec_dir`).
pub(super) fn model_dir() -> PathBuf {
    clix_testkit::model2vec_dir().unwrap_or_else(|e| panic!("{e}, or pass --vectors synthetic"))
}

/// N lines of real English and `queries` more (never stored), embedded by
/// the model2vec folder: the doc comments of the crates Cargo.lock pins.
pub(super) fn model2vec(n: usize, queries: usize) -> Dataset {
    let dir = model_dir();
    let model = Model2Vec::load(&dir).expect("the model2vec folder loads");
    assert_eq!(model.dim(), DIM);
    let (lines, crates) = doc_comment_lines();
    let available = lines.len();
    // Lines the model has no vector for (no token it knows) could not be
    // searched by vector; the store would record them as such.
    let mut kept = Vec::with_capacity(n + queries);
    let mut vectors = Vec::with_capacity(n + queries);
    for chunk in lines.chunks(4096) {
        let embedded = model.embed(chunk).expect("model2vec embeds");
        for (line, v) in chunk.iter().zip(embedded) {
            if let Some(v) = unit(&v) {
                kept.push(line.clone());
                vectors.push(v);
            }
        }
        if kept.len() >= n + queries {
            break;
        }
    }
    assert!(
        kept.len() >= n + queries,
        "only {available} distinct doc-comment lines in the registry's sources: ask for fewer memories than {n}"
    );
    kept.truncate(n + queries);
    vectors.truncate(n + queries);
    // The store embeds one text per call, the loader in batches: the same
    // vectors, or the exact baseline would not be the store's.
    let one = model.embed(std::slice::from_ref(&kept[0])).expect("model2vec embeds");
    assert_eq!(unit(&one[0]).as_ref(), Some(&vectors[0]), "model2vec gives a text the same vector alone");
    let query_texts = kept.split_off(n);
    let query_vectors = vectors.split_off(n);
    Dataset {
        describe: format!(
            "real text: lines of 5 words or more from the doc comments of the {crates} crates in Cargo.lock \
             ({available} distinct lines, taken in hash order), embedded by the MiniLM model2vec folder \
             (dimension {DIM}); {} queries are further lines, not stored",
            query_texts.len()
        ),
        texts: kept,
        vectors,
        queries: query_texts,
        query_vectors,
        embedder: Box::new(move || Box::new(Model2Vec::load(&dir).expect("the model2vec folder loads"))),
        synthetic: false,
    }
}

/// The distinct `///` and `//!` lines holding five words or more of
/// letters, from every `.rs` file of the registry crates that Cargo.lock
/// pins and cargo has unpacked, ordered by their hash (a shuffle that
/// needs no seed); and how many crates were read.
fn doc_comment_lines() -> (Vec<String>, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    let registries: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .map(|dirs| dirs.flatten().map(|d| d.path()).collect())
        .unwrap_or_default();
    let mut lines = Vec::new();
    let mut crates = 0;
    for package in lock.split("[[package]]").filter(|p| p.contains("source = \"registry+")) {
        let field = |name: &str| {
            package.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().trim_matches('"').to_string())
        };
        let (Some(name), Some(version)) = (field("name = "), field("version = ")) else { continue };
        let Some(dir) = registries.iter().map(|r| r.join(format!("{name}-{version}"))).find(|d| d.is_dir()) else {
            continue;
        };
        crates += 1;
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else { continue };
            for line in text.lines() {
                let line = line.trim_start();
                let Some(doc) = line.strip_prefix("///").or_else(|| line.strip_prefix("//!")) else { continue };
                let doc = doc.trim();
                let words = doc
                    .split_whitespace()
                    .filter(|w| {
                        let w = w.trim_end_matches(['.', ',', ';', ':']);
                        !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic())
                    })
                    .count();
                if words >= 5 {
                    lines.push(doc.to_string());
                }
            }
        }
    }
    assert!(crates > 0, "no crate of Cargo.lock is unpacked under {}: build the workspace first", cargo_home.display());
    lines.sort_unstable();
    lines.dedup();
    lines.sort_by_key(|l| (hash(l), l.clone()));
    (lines, crates)
}

/// Every `.rs` file under `dir`, in name order.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
