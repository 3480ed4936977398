//! The store on both backends (a real SQLite file, a real PostgreSQL
//! database): full text, vectors from a small deterministic embedder,
//! filters, forgetting, embedder changes. Each test runs on both
//! (`sqlite::NAME`, `postgres::NAME`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

#[path = "support/backends.rs"]
mod backends;

use std::sync::{Arc, Mutex};

use backends::{Backend, Fixture, conformance};
use clix_memory::{EmbedError, Embedder, Filter, MemoryError, MemorySettings};

conformance!(
    store_search_filter_and_forget_everywhere,
    queries_are_never_fts_syntax_and_stopwords_do_not_match,
    bad_kind_and_reopen_keep_data,
    hybrid_finds_synonyms_and_forget_removes_vectors,
    hybrid_filters_apply_before_ranking,
    a_new_embedder_re_embeds_lazily_into_its_own_space,
    a_failing_embedder_never_loses_a_store,
    past_the_coarse_pool_the_two_stage_knn_still_finds_the_nearest,
    zero_vectors_never_break_hybrid_search,
    empty_text_is_not_stored,
    a_memory_the_embedder_always_rejects_does_not_stall_the_others,
    an_embedder_that_is_down_marks_nothing_as_unembeddable,
    a_dimension_change_mid_session_re_embeds_every_memory_into_the_new_space,
    the_keyword_filter_ignores_case_beyond_ascii,
    a_busy_server_marks_no_memory_as_unembeddable,
    a_confined_store_reads_and_forgets_only_its_topics,
);

/// Bag-of-words vectors: each word (lowercased, crude plural folding) adds
/// to one of `dim` buckets; synonyms listed together share a bucket.
struct Words {
    id: String,
    dim: usize,
    fail: bool,
}

const SYNONYMS: &[&[&str]] = &[&["credentials", "key", "secret"], &["rotate", "replaced", "renewed"]];

/// Words the embedder does not know: they add nothing (as a model2vec
/// model's unknown tokens), so a text of them alone is a zero vector.
const UNKNOWN: &[&str] = &["xyzzy", "plugh"];

impl Embedder for Words {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.fail {
            return Err(EmbedError::Request { url: "http://nowhere".into(), message: "down".into() });
        }
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; self.dim];
                for word in t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                    let w = word.to_lowercase();
                    if UNKNOWN.contains(&w.as_str()) {
                        continue;
                    }
                    let w = w.trim_end_matches('s');
                    let canon = SYNONYMS
                        .iter()
                        .find(|group| group.iter().any(|s| s.trim_end_matches('s') == w))
                        .map_or(w.to_string(), |g| g[0].to_string());
                    let bucket = canon.bytes().fold(7usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
                    v[bucket % self.dim] += 1.0;
                }
                v
            })
            .collect())
    }
}

fn words(id: &str, dim: usize) -> Box<dyn Embedder> {
    Box::new(Words { id: id.into(), dim, fail: false })
}

fn ids(hits: &[clix_memory::Hit]) -> Vec<i64> {
    hits.iter().map(|h| h.memory.id).collect()
}

fn store_search_filter_and_forget_everywhere(f: Fixture) {
    let mut s = f.open();
    let a = s.store("The deploy script needs the staging token rotated weekly", "ops", "fact", "s1").unwrap();
    let b = s.store("Deploys run from CI on every merge to main", "ops", "note", "s1").unwrap();
    let c = s.store("Deploying the docs site uses a different script", "docs", "note", "s2").unwrap();
    let hits = s.search("deploying scripts", &Filter::default(), 5).unwrap();
    assert_eq!(hits.len(), 3, "porter stemming: deploy/deploys/deploying, script/scripts");
    assert!(hits[0].memory.id == a || hits[0].memory.id == c, "two-word matches rank first: {:?}", ids(&hits));
    assert!(hits[0].snippet.contains('['), "{}", hits[0].snippet);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hits.iter().all(|h| h.similarity.is_none() && h.bm25 == Some(h.score)), "no embedder: full text alone");

    assert_eq!(s.search("deploy", &Filter { topic: "ops", keyword: "" }, 5).unwrap().len(), 2);
    assert_eq!(ids(&s.search("deploy", &Filter { topic: "", keyword: "CI" }, 5).unwrap()), vec![b]);

    assert_eq!(s.facts("ops").unwrap().iter().map(|m| m.id).collect::<Vec<_>>(), vec![a]);
    assert_eq!(s.recent(2, "").unwrap().iter().map(|m| m.id).collect::<Vec<_>>(), vec![c, b]);

    assert_eq!(s.indexed("staging").unwrap(), 1);
    assert!(s.forget(a).unwrap());
    assert!(!s.forget(a).unwrap());
    assert_eq!(s.get(a).unwrap(), None);
    assert_eq!(s.indexed("staging").unwrap(), 0, "gone from the index too");
    assert!(s.search("staging token", &Filter::default(), 5).unwrap().is_empty());
}

fn queries_are_never_fts_syntax_and_stopwords_do_not_match(f: Fixture) {
    let mut s = f.open();
    s.store("a NEAR(b c) \"quoted\" col:value -minus", "t", "note", "").unwrap();
    s.store("the cat is on the mat", "t", "note", "").unwrap();
    for q in ["NEAR(b", "\"", "col:value", "-minus", "*", "AND OR NOT", ""] {
        assert!(s.search(q, &Filter::default(), 5).is_ok(), "{q}");
    }
    assert_eq!(s.search("col:value", &Filter::default(), 5).unwrap().len(), 1);
    assert!(s.search("when does the deploy run", &Filter::default(), 5).unwrap().is_empty(), "only 'the' is shared");
    assert_eq!(s.search("the", &Filter::default(), 5).unwrap().len(), 1, "a query of stopwords alone keeps them");
}

fn bad_kind_and_reopen_keep_data(f: Fixture) {
    let mut s = f.open();
    assert!(matches!(s.store("x", "t", "memo", ""), Err(MemoryError::Kind(_))));
    let id = s.store("kept across opens", "t", "note", "").unwrap();
    drop(s);
    assert_eq!(f.open().get(id).unwrap().unwrap().text, "kept across opens");
}

fn hybrid_finds_synonyms_and_forget_removes_vectors(f: Fixture) {
    let mut s = f.open().with_embedder(words("words:a", 64)).unwrap();
    let key = s.store("credentials are replaced every Friday", "ops", "fact", "").unwrap();
    let other = s.store("the build cache lives in target", "ops", "note", "").unwrap();
    assert_eq!(s.spaces().unwrap(), vec![("words:a".to_string(), 64, 2)]);
    assert_eq!(s.vector_rows(key).unwrap(), 1);

    let hits = s.search("when does the signing key rotate", &Filter::default(), 5).unwrap();
    assert_eq!(hits.first().map(|h| h.memory.id), Some(key), "{hits:?}");
    assert!(hits[0].bm25.is_none() && hits[0].similarity.unwrap() > 0.3, "{:?}", hits[0]);
    assert_eq!(hits[0].snippet, "credentials are replaced every Friday");
    let expected = 1.0 / (clix_memory::RRF_K + 1.0);
    assert!((hits[0].score - expected).abs() < 1e-9, "RRF score of a rank-1 vector hit: {}", hits[0].score);

    assert!(s.forget(key).unwrap());
    assert_eq!(s.vector_rows(key).unwrap(), 0, "vector rows go with the memory");
    assert_eq!(s.spaces().unwrap(), vec![("words:a".to_string(), 64, 1)]);
    assert!(!ids(&s.search("signing key rotate", &Filter::default(), 5).unwrap()).contains(&key));
    assert_eq!(s.vector_rows(other).unwrap(), 1);
    assert!(s.take_warnings().is_empty());
}

fn hybrid_filters_apply_before_ranking(f: Fixture) {
    let mut s = f.open().with_embedder(words("words:a", 64)).unwrap();
    let mut in_ops = Vec::new();
    for i in 0..30 {
        s.store(&format!("credentials are replaced every Friday, copy {i}"), "web", "note", "").unwrap();
    }
    in_ops.push(s.store("the signing secret is renewed by the release job", "ops", "note", "").unwrap());
    in_ops.push(s.store("unrelated words about lunch", "ops", "note", "").unwrap());
    let tagged = s.store("key rotation: ask Dana before touching credentials", "web", "note", "").unwrap();

    // The ops memory is far down the unfiltered ranking; filtering first still finds it.
    let hits = s.search("rotate the key", &Filter { topic: "ops", keyword: "" }, 1).unwrap();
    assert_eq!(ids(&hits), vec![in_ops[0]]);
    let hits = s.search("rotate the key", &Filter { topic: "ops", keyword: "" }, 5).unwrap();
    assert!(hits.iter().all(|h| h.memory.topic == "ops"), "{hits:?}");

    let hits = s.search("rotate the key", &Filter { topic: "", keyword: "dana" }, 5).unwrap();
    assert_eq!(ids(&hits), vec![tagged], "keyword filter, case-insensitive");
    let hits = s.search("rotate the key", &Filter { topic: "ops", keyword: "dana" }, 5).unwrap();
    assert!(hits.is_empty(), "{hits:?}");
}

fn a_new_embedder_re_embeds_lazily_into_its_own_space(f: Fixture) {
    let mut s = f.open();
    let first = s.store("credentials are replaced every Friday", "ops", "note", "").unwrap();
    s.store("lunch is at noon", "ops", "note", "").unwrap();
    s.store("the release job tags the commit", "ops", "note", "").unwrap();
    drop(s);

    let seen: Arc<Mutex<Vec<(usize, usize)>>> = Arc::default();
    let mut s = f.open().with_embedder(words("words:a", 32)).unwrap();
    let log = Arc::clone(&seen);
    s.set_progress(Arc::new(move |done, total| log.lock().unwrap().push((done, total))));
    assert!(s.spaces().unwrap().is_empty(), "nothing embedded until used");
    let hits = s.search("rotate key", &Filter::default(), 3).unwrap();
    assert_eq!(hits.first().map(|h| h.memory.id), Some(first));
    assert_eq!(*seen.lock().unwrap(), vec![(3, 3)]);
    assert_eq!(s.spaces().unwrap(), vec![("words:a".to_string(), 32, 3)]);
    drop(s);

    // Another embedder, another dimension: its own table, the old one kept.
    let mut s = f.open().with_embedder(words("words:b", 48)).unwrap();
    s.store("a fourth memory", "ops", "note", "").unwrap();
    assert_eq!(
        s.spaces().unwrap(),
        vec![("words:a".to_string(), 32, 3), ("words:b".to_string(), 48, 4)],
        "vectors of different spaces never mix"
    );
    assert_eq!(s.vector_rows(first).unwrap(), 2);
    assert!(s.forget(first).unwrap());
    assert_eq!(s.vector_rows(first).unwrap(), 0, "forget reaches every space");
    drop(s);

    // A process without an embedder can still forget (the vec0 triggers need sqlite-vec).
    let s = f.open();
    let last = s.recent(1, "").unwrap()[0].id;
    assert!(s.forget(last).unwrap());
    assert_eq!(s.vector_rows(last).unwrap(), 0);
}

fn a_failing_embedder_never_loses_a_store(f: Fixture) {
    let mut s = f.open().with_embedder(Box::new(Words { id: "down".into(), dim: 8, fail: true })).unwrap();
    let id = s.store("deploys go through CI", "ops", "note", "").unwrap();
    let warnings = s.take_warnings();
    assert!(warnings.iter().any(|w| w.contains("stored without a vector") && w.contains("down")), "{warnings:?}");
    let hits = s.search("deploys", &Filter::default(), 5).unwrap();
    assert_eq!(ids(&hits), vec![id], "full text still answers");
    assert!(s.take_warnings().iter().any(|w| w.contains("searched full text only")));
}

#[test]
fn settings_pick_the_embedder_with_errors_that_say_what_to_do() {
    let none = MemorySettings::default();
    assert!(none.embedder(|_| None).unwrap().is_none());
    let err = |s: MemorySettings| s.embedder(|_| None).err().unwrap().to_string();
    let bad = err(MemorySettings { embedder: "bert".into(), ..Default::default() });
    assert!(bad.contains("one of none, openai, model2vec"), "{bad}");
    let no_model = err(MemorySettings { embedder: "openai".into(), ..Default::default() });
    assert!(no_model.contains("memory.model"), "{no_model}");
    let no_path = err(MemorySettings { embedder: "model2vec".into(), ..Default::default() });
    assert!(no_path.contains("memory.path") && no_path.contains("make-minilm-model2vec"), "{no_path}");
    let missing =
        err(MemorySettings { embedder: "model2vec".into(), path: "/no/such/dir".into(), ..Default::default() });
    assert!(missing.contains("/no/such/dir") && missing.contains("scripts/make-minilm-model2vec.py"), "{missing}");
    let openai = MemorySettings { embedder: "openai".into(), model: "m".into(), ..Default::default() };
    let e = openai.embedder(|k| (k == "OPENAI_API_KEY").then(|| "sk-test".to_string())).unwrap().unwrap();
    assert_eq!(e.id(), "openai:https://api.openai.com/v1:m");
}

fn past_the_coarse_pool_the_two_stage_knn_still_finds_the_nearest(f: Fixture) {
    let mut s = f.open().with_embedder(words("words:a", 64)).unwrap();
    let mut ids = Vec::new();
    for i in 0..(clix_memory::COARSE_MIN * 2) {
        let topic = if i % 2 == 0 { "even" } else { "odd" };
        ids.push(s.store(&format!("memo {i} w{} w{} w{}", i % 7, i % 11, i % 13), topic, "note", "").unwrap());
    }
    let target = ids[123];
    let text = s.get(target).unwrap().unwrap().text;
    let near = s.nearest(&text, &Filter::default(), 3).unwrap();
    assert_eq!(near.first().map(|n| n.0), Some(target), "{near:?}");
    assert!(near[0].1 > 0.999, "{near:?}");
    let odd = s.nearest(&text, &Filter { topic: "odd", keyword: "" }, 5).unwrap();
    assert_eq!(odd.len(), 5);
    assert!(odd.iter().all(|(id, _)| s.get(*id).unwrap().unwrap().topic == "odd"), "{odd:?}");
    assert_eq!(odd[0].0, target);
}

fn zero_vectors_never_break_hybrid_search(first: Fixture) {
    // SQLite: 64 dimensions take the sign bits and exact cosine, 12 vec0's
    // float KNN. PostgreSQL: the same HNSW index for both.
    for (dim, f) in [(64, first.another()), (12, first)] {
        let mut s = f.open().with_embedder(words("words:a", dim)).unwrap();
        let deploy = s.store("deploys go through CI", "ops", "note", "").unwrap();
        assert!(s.take_warnings().is_empty());
        let emoji = s.store("🎉🚀", "ops", "note", "").unwrap();
        let unknown = s.store("xyzzy plugh", "ops", "note", "").unwrap();
        let warnings = s.take_warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings.iter().all(|w| w.contains("stored without a vector") && w.contains("words only")),
            "{warnings:?}"
        );
        assert_eq!((s.vector_rows(emoji).unwrap(), s.vector_rows(unknown).unwrap()), (0, 0), "dim {dim}");
        assert_eq!(s.spaces().unwrap(), vec![("words:a".to_string(), dim, 1)]);

        let hits = s.search("deploys", &Filter::default(), 5).unwrap();
        assert_eq!(ids(&hits), vec![deploy], "dim {dim}");
        assert!(hits[0].similarity.is_some());
        let hits = s.search("deploys", &Filter { topic: "ops", keyword: "ci" }, 5).unwrap();
        assert_eq!(ids(&hits), vec![deploy], "keyword path, dim {dim}");
        assert!(s.take_warnings().is_empty(), "the memories without vectors are not embedded again");

        // A query the embedder has no vector for: full text alone.
        let hits = s.search("xyzzy", &Filter::default(), 5).unwrap();
        assert_eq!(ids(&hits), vec![unknown]);
        assert!(hits[0].similarity.is_none() && hits[0].bm25.is_some());
        assert!(s.take_warnings().iter().any(|w| w.contains("searched full text only")));
        assert!(s.nearest("plugh", &Filter::default(), 5).unwrap().is_empty());
        assert_eq!(ids(&s.search("deploys", &Filter::default(), 5).unwrap()), vec![deploy]);
    }
}

/// SQLite only: files written before zero vectors were refused may hold
/// some; no PostgreSQL store was ever written by such a clix.
#[test]
fn a_zero_vector_stored_before_is_left_out_of_the_vector_search() {
    for dim in [64, 12] {
        let f = Fixture::new(Backend::Sqlite, "a_zero_vector_stored_before_is_left_out_of_the_vector_search").unwrap();
        let mut s = f.open().with_embedder(words("words:a", dim)).unwrap();
        let deploy = s.store("deploys go through CI", "ops", "note", "").unwrap();
        let emoji = s.store("🎉", "ops", "note", "").unwrap();
        drop(s);
        let db = rusqlite::Connection::open(f.file()).unwrap();
        let zero: Vec<u8> = vec![0; dim * 4];
        let sql = if dim % 8 == 0 {
            "INSERT INTO memories_vec_1 (rowid, topic, bits, embedding) VALUES (?1, 'ops', vec_quantize_binary(vec_f32(?2)), ?2)"
        } else {
            "INSERT INTO memories_vec_1 (rowid, topic, embedding) VALUES (?1, 'ops', ?2)"
        };
        let mut s = f.open().with_embedder(words("words:a", dim)).unwrap();
        db.execute(sql, rusqlite::params![emoji, zero]).unwrap();
        db.execute("INSERT INTO embedded (embedder, id) VALUES (1, ?1)", [emoji]).unwrap();
        assert_eq!(s.vector_rows(emoji).unwrap(), 1);
        assert_eq!(ids(&s.search("deploys", &Filter::default(), 5).unwrap()), vec![deploy], "dim {dim}");
        assert_eq!(ids(&s.search("deploys", &Filter { topic: "", keyword: "ci" }, 5).unwrap()), vec![deploy]);
        let near = s.nearest("deploys", &Filter::default(), 5).unwrap();
        assert_eq!(near.iter().map(|n| n.0).collect::<Vec<_>>(), vec![deploy], "dim {dim}");
    }
}

fn empty_text_is_not_stored(f: Fixture) {
    let mut s = f.open();
    for text in ["", "  \n\t "] {
        let err = s.store(text, "t", "note", "").unwrap_err();
        assert!(matches!(err, MemoryError::Empty), "{err:?}");
        assert_eq!(err.to_string(), "nothing to store: the text is empty");
    }
    assert!(s.recent(10, "").unwrap().is_empty());
}

/// Rejects (as an API would, with an error for the whole request) any
/// batch holding a text that contains `bad`; logs every call.
struct Picky {
    bad: &'static str,
    calls: Arc<Mutex<Vec<Vec<String>>>>,
}

impl Embedder for Picky {
    fn id(&self) -> String {
        "picky".into()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.lock().unwrap().push(texts.to_vec());
        if texts.iter().any(|t| t.contains(self.bad)) {
            return Err(EmbedError::Request { url: "http://picky".into(), message: "input rejected".into() });
        }
        Words { id: String::new(), dim: 16, fail: false }.embed(texts)
    }
}

/// Calls of `calls` that held a text containing `word`.
fn calls_with(calls: &Mutex<Vec<Vec<String>>>, word: &str) -> usize {
    calls.lock().unwrap().iter().filter(|c| c.iter().any(|t| t.contains(word))).count()
}

fn a_memory_the_embedder_always_rejects_does_not_stall_the_others(f: Fixture) {
    let mut s = f.open();
    let poison = s.store("a poison text first", "t", "note", "").unwrap();
    let mut others = Vec::new();
    for i in 0..5 {
        others.push(s.store(&format!("deploy note {i}"), "t", "note", "").unwrap());
    }
    drop(s);

    let calls: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let picky = Picky { bad: "poison", calls: Arc::clone(&calls) };
    let mut s = f.open().with_embedder(Box::new(picky)).unwrap();
    s.search("deploy", &Filter::default(), 3).unwrap();
    assert_eq!(s.spaces().unwrap(), vec![("picky".to_string(), 16, 5)], "the others are embedded");
    assert!(others.iter().all(|id| s.vector_rows(*id).unwrap() == 1));
    assert_eq!(s.vector_rows(poison).unwrap(), 0);
    let warnings = s.take_warnings().join("\n");
    assert!(warnings.contains(&format!("#{poison}")) && warnings.contains("input rejected"), "{warnings}");
    let tried = calls_with(&calls, "poison");
    assert_eq!(tried, 2, "the batch, then the memory alone");

    // Later stores and searches leave it alone.
    for i in 0..3 {
        s.store(&format!("another deploy note {i}"), "t", "note", "").unwrap();
        s.search("deploy", &Filter::default(), 3).unwrap();
    }
    assert_eq!(calls_with(&calls, "poison"), tried, "not asked again");
    assert_eq!(s.spaces().unwrap(), vec![("picky".to_string(), 16, 8)]);
    assert!(s.take_warnings().is_empty());
    drop(s);

    // Stored while the embedder is configured: left alone once it is seen to answer other texts.
    let calls: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let picky = Picky { bad: "venom", calls: Arc::clone(&calls) };
    let mut s = f.open().with_embedder(Box::new(picky)).unwrap();
    let venom = s.store("venom too", "t", "note", "").unwrap();
    assert!(s.take_warnings().iter().any(|w| w.contains("stored without a vector")));
    for i in 0..3 {
        s.store(&format!("yet another deploy note {i}"), "t", "note", "").unwrap();
        s.search("deploy", &Filter::default(), 3).unwrap();
    }
    assert!(calls_with(&calls, "venom") <= 3, "{:?}", calls.lock().unwrap());
    assert_eq!(s.vector_rows(venom).unwrap(), 0);
    assert_eq!(s.spaces().unwrap(), vec![("picky".to_string(), 16, 11)]);
}

fn an_embedder_that_is_down_marks_nothing_as_unembeddable(f: Fixture) {
    let up = |fail| Box::new(Words { id: "flaky".into(), dim: 8, fail });
    let mut s = f.open().with_embedder(up(false)).unwrap();
    s.store("deploys go through CI", "ops", "note", "").unwrap();
    drop(s);
    let mut s = f.open().with_embedder(up(true)).unwrap();
    for i in 0..4 {
        s.store(&format!("stored while it was down {i}"), "ops", "note", "").unwrap();
        s.search("deploys", &Filter::default(), 3).unwrap();
    }
    assert!(!s.take_warnings().is_empty());
    drop(s);
    let mut s = f.open().with_embedder(up(false)).unwrap();
    s.search("deploys", &Filter::default(), 3).unwrap();
    assert_eq!(s.spaces().unwrap(), vec![("flaky".to_string(), 8, 5)], "every memory embedded once it is back");
    assert!(s.take_warnings().is_empty());
}

#[test]
fn settings_debug_never_prints_the_api_key() {
    let settings = MemorySettings {
        embedder: "openai".into(),
        api_key: clix_common::Secret::new("sk-secret-123"),
        ..Default::default()
    };
    for shown in [format!("{settings:?}"), serde_json::to_string(&settings).unwrap()] {
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("***") && shown.contains("openai"), "{shown}");
    }
    let embedder = clix_memory::OpenAiEmbedder::new("http://x/v1", "m", Some(settings.api_key.clone()));
    assert!(!format!("{embedder:?}").contains("sk-secret-123"));
}

/// `Words` whose dimension can change while a store uses it (a server
/// that switched models behind the same name).
struct Resizing(Arc<std::sync::atomic::AtomicUsize>);

impl Embedder for Resizing {
    fn id(&self) -> String {
        "resizing".into()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let dim = self.0.load(std::sync::atomic::Ordering::SeqCst);
        Words { id: String::new(), dim, fail: false }.embed(texts)
    }
}

fn a_dimension_change_mid_session_re_embeds_every_memory_into_the_new_space(f: Fixture) {
    let dim = Arc::new(std::sync::atomic::AtomicUsize::new(16));
    let mut s = f.open().with_embedder(Box::new(Resizing(Arc::clone(&dim)))).unwrap();
    let key = s.store("credentials are replaced every Friday", "ops", "note", "").unwrap();
    s.store("lunch is at noon", "ops", "note", "").unwrap();
    assert_eq!(s.spaces().unwrap(), vec![("resizing".to_string(), 16, 2)]);
    dim.store(24, std::sync::atomic::Ordering::SeqCst);
    s.store("the release job tags the commit", "ops", "note", "").unwrap();
    assert_eq!(s.spaces().unwrap(), vec![("resizing".to_string(), 16, 2), ("resizing".to_string(), 24, 3)]);
    let near = s.nearest("when does the key rotate", &Filter::default(), 1).unwrap();
    assert_eq!(near.first().map(|n| n.0), Some(key), "{near:?}");
    assert!(s.take_warnings().is_empty());
}

fn the_keyword_filter_ignores_case_beyond_ascii(f: Fixture) {
    let mut fts = f.open();
    let umlaut = fts.store("Ärger mit dem Deploy am Freitag", "t", "note", "").unwrap();
    let greek = fts.store("deploy notes: ΣΟΦΊΑ signs the release", "t", "note", "").unwrap();
    fts.store("deploy without trouble", "t", "note", "").unwrap();
    let mut hybrid = f.open().with_embedder(words("words:a", 64)).unwrap();
    for s in [&mut fts, &mut hybrid] {
        let hits = s.search("deploy", &Filter { topic: "", keyword: "ärger" }, 5).unwrap();
        assert_eq!(ids(&hits), vec![umlaut]);
        let hits = s.search("deploy", &Filter { topic: "", keyword: "ÄRGER MIT" }, 5).unwrap();
        assert_eq!(ids(&hits), vec![umlaut]);
        let hits = s.search("deploy", &Filter { topic: "", keyword: "σοφία" }, 5).unwrap();
        assert_eq!(ids(&hits), vec![greek]);
    }
    let near = hybrid.nearest("deploy", &Filter { topic: "", keyword: "Σοφία" }, 5).unwrap();
    assert_eq!(near.iter().map(|n| n.0).collect::<Vec<_>>(), vec![greek]);
}

/// Answers every text but those containing "busy", for which the server
/// is overloaded (HTTP 429) until `recovered` is set.
struct Overloaded {
    recovered: Arc<std::sync::atomic::AtomicBool>,
}

impl Embedder for Overloaded {
    fn id(&self) -> String {
        "overloaded".into()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let busy = texts.iter().any(|t| t.contains("busy"));
        if busy && !self.recovered.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(EmbedError::Unavailable { url: "http://overloaded".into(), message: "HTTP 429".into() });
        }
        Words { id: String::new(), dim: 16, fail: false }.embed(texts)
    }
}

fn a_busy_server_marks_no_memory_as_unembeddable(f: Fixture) {
    let mut s = f.open();
    let busy = s.store("a deploy note sent while the server was busy", "t", "note", "").unwrap();
    let other = s.store("a deploy note", "t", "note", "").unwrap();
    drop(s);

    let recovered = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut s = f.open().with_embedder(Box::new(Overloaded { recovered: Arc::clone(&recovered) })).unwrap();
    s.search("deploy", &Filter::default(), 3).unwrap();
    assert_eq!(s.vector_rows(busy).unwrap(), 0, "not embedded while the server is busy");
    s.take_warnings();
    recovered.store(true, std::sync::atomic::Ordering::SeqCst);
    s.store("one more deploy note", "t", "note", "").unwrap();
    s.search("deploy", &Filter::default(), 3).unwrap();
    assert_eq!(s.vector_rows(busy).unwrap(), 1, "embedded once the server answers: it was never marked failed");
    assert_eq!(s.vector_rows(other).unwrap(), 1);
}

fn a_confined_store_reads_and_forgets_only_its_topics(first: Fixture) {
    // SQLite: 64 takes the two-stage (sign bits) KNN, 36 vec0's exact KNN.
    for (dim, f) in [(64, first.another()), (36, first)] {
        let mut s = f.open().with_embedder(words("words:a", dim)).unwrap();
        let mine = s.store("credentials of alpha are replaced every Friday", "alpha", "fact", "").unwrap();
        let theirs = s.store("credentials of beta are replaced every Monday", "beta", "fact", "").unwrap();
        let shared = s.store("credentials are never pasted into chat", clix_memory::GLOBAL_TOPIC, "fact", "").unwrap();
        s.confine_to(&["alpha", clix_memory::GLOBAL_TOPIC]);
        assert_eq!(s.confined_to(), Some(vec!["alpha".to_string(), "global".to_string()]));

        let all = Filter::default();
        let mut found = ids(&s.search("credentials replaced", &all, 10).unwrap());
        found.sort();
        assert_eq!(found, vec![mine, shared], "dim {dim}: full text and vectors, beta left out");
        let mut near: Vec<i64> = s.nearest("secret renewed", &all, 10).unwrap().into_iter().map(|n| n.0).collect();
        near.sort();
        assert_eq!(near, vec![mine, shared], "dim {dim}: each topic's partition, merged");
        let keyword = Filter { topic: "", keyword: "credentials" };
        assert!(!ids(&s.search("secret renewed", &keyword, 10).unwrap()).contains(&theirs), "dim {dim}");
        let beta = Filter { topic: "beta", keyword: "" };
        assert!(s.search("credentials replaced", &beta, 10).unwrap().is_empty(), "dim {dim}");
        assert!(s.nearest("credentials replaced", &beta, 10).unwrap().is_empty(), "dim {dim}");
        let only_mine = Filter { topic: "alpha", keyword: "" };
        assert_eq!(ids(&s.search("credentials replaced", &only_mine, 10).unwrap()), vec![mine], "dim {dim}");

        let listed = |list: Vec<clix_memory::Memory>| list.iter().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!(listed(s.recent(10, "").unwrap()), vec![shared, mine]);
        assert_eq!(listed(s.facts("").unwrap()), vec![shared, mine]);
        assert!(s.recent(10, "beta").unwrap().is_empty() && s.facts("beta").unwrap().is_empty());

        assert_eq!(s.get(theirs).unwrap(), None);
        assert!(!s.forget(theirs).unwrap(), "another topic's memory is out of reach");
        let mut everything = f.open();
        assert_eq!(everything.get(theirs).unwrap().map(|m| m.topic), Some("beta".into()), "and still there");
        assert_eq!(everything.search("Monday", &all, 5).map(|h| ids(&h)).unwrap(), vec![theirs]);
        assert!(s.forget(mine).unwrap());
    }
}
