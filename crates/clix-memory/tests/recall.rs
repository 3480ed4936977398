//! Hybrid beats lexical: a labelled set where no query shares a content
//! word with its answer, searched with full text alone and with full text
//! plus a real embedder (a model2vec folder built from all-MiniLM-L6-v2 by
//! scripts/make-minilm-model2vec.py). Prints the recall figures. Each
//! test runs on both backends (`sqlite::NAME`, `postgres::NAME`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

#[path = "support/backends.rs"]
mod backends;
#[path = "support/model2vec.rs"]
mod model2vec;
use std::path::PathBuf;

use backends::{Fixture, conformance};
use clix_memory::{Filter, Model2Vec, Store};

conformance!(
    hybrid_beats_lexical_on_queries_that_share_no_words,
    text_the_model_has_no_vector_for_keeps_search_working,
    the_two_stage_knn_agrees_with_exact_cosine_on_real_text,
);

/// (query, the memory that answers it): no shared word but stopwords.
const PAIRS: &[(&str, &str)] = &[
    ("when does the signing key rotate", "credentials are replaced every Friday"),
    ("how do I reach the database from my laptop", "open an SSH tunnel through the bastion to postgres"),
    ("what breaks the nightly build", "the CI pipeline fails at midnight when the disk fills up"),
    ("who approves vacation requests", "holiday leave must be signed off by your manager"),
    ("where are the application logs kept", "error messages from the service end up in journald"),
    ("which programming language is the backend written in", "the server side is implemented in Rust"),
    ("what is the wifi password at the office", "the wireless network passphrase at headquarters is on the whiteboard"),
    ("when is the team meeting", "we sync every Tuesday morning with the whole group"),
    ("how do I restart the web server", "reboot nginx with systemctl"),
    ("what pet does the boss have", "our manager owns a golden retriever puppy"),
    ("where should I park my car", "vehicles go in the garage on level two"),
    ("what is the deadline for the tax report", "the fiscal filing is due on April 15"),
    ("which doctor treats heart problems", "the cardiologist handles cardiac issues"),
    ("what food is served at lunch", "the cafeteria offers pasta and salad at noon"),
    ("how much does cloud hosting cost", "the AWS bill is about three thousand dollars"),
];

/// Memories that share words with the queries but answer none of them.
const DISTRACTORS: &[&str] = &[
    "the signing ceremony for the new office lease is in May",
    "the database schema has twelve tables",
    "my laptop battery is weak",
    "the build badge on the README is green",
    "the dog park near the office is closed",
    "car insurance renewal letters arrive by post",
    "the meeting notes template lives in the wiki",
    "web fonts are loaded from a CDN",
    "tax-free shopping ends at the airport",
    "heart emoji reactions are disabled in chat",
    "the programming contest had forty teams",
    "lunch orders are collected in a spreadsheet",
    "the key to the bike shed hangs by the door",
    "request templates are kept in the docs folder",
    "the team photo is on the intranet",
    "the cloud icon in the menu opens settings",
];

/// Share of queries whose answer is among the first `k` hits.
fn recall(store: &mut Store, answers: &[i64], k: usize) -> f64 {
    let found = PAIRS
        .iter()
        .zip(answers)
        .filter(|((query, _), id)| {
            let hits = store.search(query, &Filter::default(), k).unwrap();
            hits.iter().any(|h| h.memory.id == **id)
        })
        .count();
    found as f64 / PAIRS.len() as f64
}

fn hybrid_beats_lexical_on_queries_that_share_no_words(f: Fixture) {
    let model = Model2Vec::load(&model2vec::model_dir()).unwrap();
    assert_eq!(model.dim(), 384);

    let mut lexical = f.open();
    let answers: Vec<i64> = PAIRS.iter().map(|(_, a)| lexical.store(a, "t", "note", "").unwrap()).collect();
    for d in DISTRACTORS {
        lexical.store(d, "t", "note", "").unwrap();
    }
    let mut hybrid = f.open().with_embedder(Box::new(model)).unwrap();

    let mut rows = Vec::new();
    for k in [1, 3, 5] {
        rows.push((k, recall(&mut lexical, &answers, k), recall(&mut hybrid, &answers, k)));
    }
    assert!(hybrid.take_warnings().is_empty());
    println!("recall@k over {} queries, {} memories, {:?}", PAIRS.len(), PAIRS.len() + DISTRACTORS.len(), f.backend);
    println!(
        "| k | lexical (full text) | hybrid (full text + model2vec MiniLM, RRF) | vectors alone |\n|---|---|---|---|"
    );
    for (k, lex, hyb) in &rows {
        let vectors = PAIRS
            .iter()
            .zip(&answers)
            .filter(|((q, _), id)| hybrid.nearest(q, &Filter::default(), *k).unwrap().iter().any(|n| n.0 == **id))
            .count() as f64
            / PAIRS.len() as f64;
        println!("| {k} | {lex:.2} | {hyb:.2} | {vectors:.2} |");
    }
    // At k = 1 a distractor that shares a word with the query and sits
    // near it in vector space too wins the fusion; from k = 3 the answers
    // the words cannot find are there.
    for (k, lex, hyb) in rows {
        assert!(hyb >= lex, "recall@{k}: hybrid {hyb:.2} must not lose to lexical {lex:.2}");
        if k >= 3 {
            assert!(hyb > lex, "recall@{k}: hybrid {hyb:.2} must beat lexical {lex:.2}");
            assert!(hyb >= 0.5, "recall@{k}: hybrid {hyb:.2} finds at least half the answers");
        }
    }
}

fn text_the_model_has_no_vector_for_keeps_search_working(f: Fixture) {
    // MiniLM's model2vec gives emoji-only text, and runes, a zero vector.
    let model = Model2Vec::load(&model2vec::model_dir()).unwrap();
    let mut store = f.open().with_embedder(Box::new(model)).unwrap();
    let deploy = store.store("deploys go through CI on every merge", "t", "note", "").unwrap();
    let party = store.store("🎉🚀", "t", "note", "").unwrap();
    let runes = store.store("ᚠᚢᚦ", "t", "note", "").unwrap();
    assert_eq!(store.take_warnings().len(), 2);
    assert_eq!(store.vector_rows(party).unwrap() + store.vector_rows(runes).unwrap(), 0);
    let hits = store.search("how are releases shipped", &Filter::default(), 5).unwrap();
    assert_eq!(hits.iter().map(|h| h.memory.id).collect::<Vec<_>>(), vec![deploy]);
    let hits = store.search("ᚠᚢᚦ", &Filter::default(), 5).unwrap();
    assert_eq!(hits.iter().map(|h| h.memory.id).collect::<Vec<_>>(), vec![runes], "found by its words");
    assert!(store.take_warnings().iter().any(|w| w.contains("searched full text only")));
}

/// Lines of five words or more from the repository's docs and comments:
/// real text, hundreds of lines, more than the KNN's coarse pool.
fn repository_lines() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for dir in ["docs", "crates/clix-agent/src", "crates/clix-engine/src", "crates/clix-memory/src", "crates/clix/src"]
    {
        for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            files.push(entry.path());
        }
    }
    let mut lines: Vec<String> = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| text.lines().map(str::to_string).collect::<Vec<_>>())
        .map(|l| l.trim().trim_start_matches('/').trim_start_matches('!').trim().to_string())
        .filter(|l| l.split_whitespace().count() >= 5)
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

/// Questions a user might ask about this repository, in their own words:
/// none of them is a stored line.
const PARAPHRASES: &[&str] = &[
    "how does the agent remember things between sessions",
    "which embedding model runs offline on my machine",
    "what happens when the output of a command is too long",
    "can programs reach the network inside the sandbox",
    "where do truncated results get saved",
    "how are binary files shown to the model",
    "what does the exit code 127 mean",
    "how do I forget a stored note",
    "which commands are available in the shell",
    "how is a timeout reported",
    "what is the workspace folder jail",
    "how does search combine words and meaning",
    "what is reciprocal rank fusion",
    "how are two processes kept from corrupting the database",
    "what does the model see after each call",
    "how are secrets kept away from sandboxed programs",
    "which settings go in the memory section of the config file",
    "how do I run the test suite",
    "what does a usage error look like",
    "how does the agent loop stop when interrupted",
    "where is the api key read from",
    "how are memories filtered by topic",
    "what is stored at the end of a run",
    "how does the help command work",
    "which programs run in bubblewrap",
    "how are pipes and redirections handled",
    "what happens when the embedder is unreachable",
    "how are old vectors kept when the model changes",
    "what is the limit on lines shown",
    "how does the chat interface draw the terminal",
    "what did the benchmark measure",
    "how are images displayed",
    "how are control characters detected in output",
    "what happens with a misspelled command name",
    "how is the system prompt assembled",
    "where does the session topic come from",
    "how are facts listed",
    "how fast is a command that forks nothing",
    "what is the schema version for",
    "how are vectors compared quickly with bits",
];

/// The exact top 5 of `query` by cosine over `vectors`, as ids.
fn exact_top5(vectors: &[Vec<f32>], ids: &[i64], query: &[f32]) -> Vec<i64> {
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let q = norm(query);
    let mut exact: Vec<(i64, f32)> = vectors
        .iter()
        .zip(ids)
        .map(|(v, id)| (*id, v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>() / (norm(v) * q)))
        .collect();
    exact.sort_by(|a, b| b.1.total_cmp(&a.1));
    exact.iter().take(5).map(|e| e.0).collect()
}

/// SQLite's KNN has two stages (sign bits, then exact cosine);
/// PostgreSQL's is pgvector's HNSW index: both are approximate, and both
/// must hold 90% of the exact top 5.
fn the_two_stage_knn_agrees_with_exact_cosine_on_real_text(f: Fixture) {
    use clix_memory::Embedder;
    let lines = repository_lines();
    // Three times the coarse pool: most vectors are not candidates.
    assert!(lines.len() > 3 * clix_memory::COARSE_MIN, "only {} lines", lines.len());
    let model = Model2Vec::load(&model2vec::model_dir()).unwrap();
    let vectors = model.embed(&lines).unwrap();
    let paraphrases: Vec<String> = PARAPHRASES.iter().map(|q| q.to_string()).collect();
    assert!(paraphrases.iter().all(|q| !lines.contains(q)), "a paraphrase is a stored line");
    let paraphrase_vectors = model.embed(&paraphrases).unwrap();
    let mut store = f.open().with_embedder(Box::new(model)).unwrap();
    let ids: Vec<i64> = lines.iter().map(|l| store.store(l, "t", "note", "").unwrap()).collect();
    // Share of the exact top 5 that the two-stage KNN's top 5 holds.
    let mut overlap = |queries: &[(&String, &Vec<f32>)]| {
        let mut agree = 0;
        for (text, vector) in queries {
            let truth = exact_top5(&vectors, &ids, vector);
            let near = store.nearest(text, &Filter::default(), 5).unwrap();
            agree += near.iter().filter(|n| truth.contains(&n.0)).count();
        }
        agree as f64 / (5 * queries.len()) as f64
    };
    // Stored lines as queries (each is its own nearest), and paraphrases
    // that are not stored (their neighbours are farther, the sign bits
    // coarser a filter).
    let stored: Vec<(&String, &Vec<f32>)> = lines.iter().zip(&vectors).step_by(lines.len() / 100).collect();
    let unstored: Vec<(&String, &Vec<f32>)> = paraphrases.iter().zip(&paraphrase_vectors).collect();
    let (of_stored, of_unstored) = (overlap(&stored), overlap(&unstored));
    println!(
        "{:?}, {} memories of real text: the KNN's top 5 holds {:.1}% of the exact top 5 \
         for {} stored lines as queries, {:.1}% for {} paraphrased questions",
        f.backend,
        lines.len(),
        of_stored * 100.0,
        stored.len(),
        of_unstored * 100.0,
        unstored.len()
    );
    assert!(of_stored >= 0.9, "{of_stored:.3}");
    assert!(of_unstored >= 0.9, "{of_unstored:.3}");
}
