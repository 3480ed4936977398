//! The lexical score on both backends: `Hit::bm25` is Okapi BM25 as FTS5
//! computes it, on SQLite (FTS5 itself) and on PostgreSQL (computed from
//! the `tsvector`s), so that one `recall_min_bm25` serves both. Stemming
//! differs (porter against snowball), so the scores are held equal only
//! where the tokens agree; elsewhere both must rank clear cases alike and
//! fall on the same side of the default recall threshold. Each test runs
//! on both backends (`sqlite::NAME`, `postgres::NAME`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

#[path = "support/backends.rs"]
mod backends;

use backends::{Fixture, conformance};
use clix_memory::{Filter, GLOBAL_TOPIC, Hit, MemorySettings, Store};

conformance!(
    bm25_is_fts5s_formula_where_the_tokens_agree,
    clear_cases_rank_alike,
    a_rare_word_passes_the_default_recall_threshold_and_a_common_one_does_not,
    recall_finds_a_memory_by_its_words_alone,
);

/// FTS5's BM25 of document `doc` of `docs` for `query` (words matched
/// exactly: the test's words stem to distinct stems on both backends).
fn expected_bm25(docs: &[&str], doc: usize, query: &[&str]) -> f64 {
    let (k1, b) = (1.2, 0.75);
    let tokens: Vec<Vec<&str>> = docs.iter().map(|d| d.split_whitespace().collect()).collect();
    let n = docs.len() as f64;
    let avgdl = tokens.iter().map(Vec::len).sum::<usize>() as f64 / n;
    let dl = tokens[doc].len() as f64;
    query
        .iter()
        .map(|term| {
            let holding = tokens.iter().filter(|t| t.contains(term)).count() as f64;
            let idf = ((n - holding + 0.5) / (holding + 0.5)).ln();
            let idf = if idf <= 0.0 { 1e-6 } else { idf };
            let tf = tokens[doc].iter().filter(|t| *t == term).count() as f64;
            idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl))
        })
        .sum()
}

fn bm25_is_fts5s_formula_where_the_tokens_agree(f: Fixture) {
    const DOCS: &[&str] = &["red green blue", "red red yellow", "red cyan", "magenta black white grey", "orange"];
    let mut s = f.open();
    let ids: Vec<i64> = DOCS.iter().map(|d| s.store(d, "t", "note", "").unwrap()).collect();
    // A rare word, a word in more than half the documents (its IDF is
    // clamped to 1e-6), both at once, two rare words, repeats.
    for query in ["yellow", "red", "red yellow", "cyan orange", "red red", "black"] {
        let words: Vec<&str> = query.split_whitespace().collect();
        let hits = s.search(query, &Filter::default(), 10).unwrap();
        let holding: Vec<i64> = (0..DOCS.len())
            .filter(|&d| DOCS[d].split_whitespace().any(|t| words.contains(&t)))
            .map(|d| ids[d])
            .collect();
        let mut found: Vec<i64> = hits.iter().map(|h| h.memory.id).collect();
        found.sort();
        assert_eq!(found, holding, "{query:?}: every memory holding a word, and no other");
        for hit in &hits {
            let doc = ids.iter().position(|id| *id == hit.memory.id).unwrap();
            let want = expected_bm25(DOCS, doc, &words);
            let got = hit.bm25.unwrap();
            assert!(
                (got - want).abs() <= 1e-9 * want.max(1.0),
                "{query:?} in {:?}: bm25 {got}, FTS5's {want}",
                DOCS[doc]
            );
            assert_eq!(hit.score, got, "full text alone: the score is the BM25");
        }
    }
}

/// Thirty memories that all say "team", so that it is a common word.
fn common_corpus(s: &mut Store) {
    const THINGS: &[&str] = &[
        "budget",
        "hiring",
        "roadmap",
        "offsite",
        "laptops",
        "parking",
        "coffee",
        "printer",
        "security",
        "onboarding",
        "invoices",
        "backups",
        "licenses",
        "travel",
        "payroll",
        "interviews",
        "deadlines",
        "feedback",
        "holidays",
        "training",
        "hardware",
        "contracts",
        "metrics",
        "hosting",
        "logging",
        "testing",
        "pricing",
        "support",
        "branding",
        "outreach",
    ];
    for thing in THINGS {
        s.store(&format!("the team talked about {thing} today"), "t", "note", "").unwrap();
    }
}

fn clear_cases_rank_alike(f: Fixture) {
    // (what it shows, query, memories in the order they must rank)
    const CASES: &[(&str, &str, &[&str])] = &[
        ("a rare word beats a common one", "zephyr team", &["zephyr module docs", "team module docs"]),
        (
            "more occurrences beat fewer",
            "kestrel",
            &["kestrel kestrel kestrel sightings", "kestrel sightings logged today"],
        ),
        (
            "a short memory beats a long one with as many occurrences",
            "walrus",
            &["walrus tusks", "walrus tusks are long and grey and heavy"],
        ),
        ("two query words beat one", "quokka wombat", &["quokka and wombat", "quokka and emu"]),
    ];
    let mut s = f.open();
    common_corpus(&mut s);
    let stored: Vec<Vec<i64>> =
        CASES.iter().map(|(_, _, docs)| docs.iter().map(|d| s.store(d, "t", "note", "").unwrap()).collect()).collect();
    for ((what, query, docs), ids) in CASES.iter().zip(&stored) {
        let hits = s.search(query, &Filter::default(), 50).unwrap();
        let order: Vec<i64> = hits.iter().map(|h| h.memory.id).filter(|id| ids.contains(id)).collect();
        let shown: Vec<String> = hits.iter().map(|h| format!("{:.3} {}", h.bm25.unwrap(), h.memory.text)).collect();
        assert_eq!(&order, ids, "{what} ({query:?}, {:?}): {shown:#?}", f.backend);
        assert!(hits.windows(2).all(|w| w[0].bm25 >= w[1].bm25), "{query:?} over {docs:?}: best first: {shown:#?}");
    }
}

fn a_rare_word_passes_the_default_recall_threshold_and_a_common_one_does_not(f: Fixture) {
    let threshold = MemorySettings::default().recall_min_bm25;
    let mut s = f.open();
    common_corpus(&mut s);
    let rare = s.store("the narwhal exhibit opens in spring", "t", "note", "").unwrap();
    let hits = s.search("narwhal", &Filter::default(), 10).unwrap();
    assert_eq!(hits.iter().map(|h| h.memory.id).collect::<Vec<_>>(), vec![rare]);
    let bm25 = hits[0].bm25.unwrap();
    assert!(bm25 >= threshold, "{:?}: a word in 1 memory of 31 scores {bm25}, below {threshold}", f.backend);

    let hits = s.search("team", &Filter::default(), 50).unwrap();
    assert_eq!(hits.len(), 30, "found, in every memory that says it");
    for hit in hits {
        let bm25 = hit.bm25.unwrap();
        assert!(bm25 < threshold, "{:?}: a word in 30 memories of 31 scores {bm25}, not below {threshold}", f.backend);
    }
}

/// The agent's recall (clix-agent's `memory.rs`) keeps the candidates that
/// are not facts and score at least `recall_min_bm25`, with no embedder:
/// a memory must be recalled by its words alone on either backend. The
/// memories and tasks of clix-agent's `tests/memory.rs`.
fn recall_finds_a_memory_by_its_words_alone(f: Fixture) {
    let settings = MemorySettings::default();
    let recalled = |s: &mut Store, task: &str| -> Vec<String> {
        let hits: Vec<Hit> = s.search(task, &Filter::default(), 10).unwrap();
        hits.into_iter()
            .filter(|h| h.memory.kind != "fact" && h.bm25.is_some_and(|b| b >= settings.recall_min_bm25))
            .map(|h| h.memory.text)
            .collect()
    };
    let mut s = f.open();
    s.store("the signing key rotates every Friday", "proj", "fact", "earlier").unwrap();
    s.store("releases are tagged vX.Y.Z", "proj", "fact", "earlier").unwrap();
    s.store("the other project uses Go", "elsewhere", "fact", "earlier").unwrap();
    for note in [
        "deploys to staging need the VPN switched on first",
        "the release checklist lives in docs/release.md",
        "lunch orders close at eleven",
        "the flaky test is parser::tests::unicode, retried in CI",
        "coverage reports are uploaded by the nightly job",
        "the design review happens on Thursdays",
        "old branches are pruned monthly",
        "the logo files are in assets/brand",
    ] {
        s.store(note, "proj", "note", "earlier").unwrap();
    }
    s.confine_to(&["proj", GLOBAL_TOPIC]);
    assert_eq!(
        recalled(&mut s, "how do I deploy to staging?"),
        vec!["deploys to staging need the VPN switched on first"]
    );
    assert!(recalled(&mut s, "rename the variable x").is_empty());
}
