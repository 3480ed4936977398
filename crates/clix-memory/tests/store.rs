//! The store on real SQLite files: full text, vectors from a small
//! deterministic embedder, filters, forgetting, embedder changes.

use std::sync::{Arc, Mutex};

use clix_memory::{EmbedError, Embedder, Filter, MemoryError, MemorySettings, Store};

/// Bag-of-words vectors: each word (lowercased, crude plural folding) adds
/// to one of `dim` buckets; synonyms listed together share a bucket.
struct Words {
    id: String,
    dim: usize,
    fail: bool,
}

const SYNONYMS: &[&[&str]] = &[&["credentials", "key", "secret"], &["rotate", "replaced", "renewed"]];

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

fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("memory.sqlite")).unwrap()
}

fn ids(hits: &[clix_memory::Hit]) -> Vec<i64> {
    hits.iter().map(|h| h.memory.id).collect()
}

#[test]
fn store_search_filter_and_forget_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(&dir);
    let a = s.store("The deploy script needs the staging token rotated weekly", "ops", "fact", "s1").unwrap();
    let b = s.store("Deploys run from CI on every merge to main", "ops", "note", "s1").unwrap();
    let c = s.store("Deploying the docs site uses a different script", "docs", "note", "s2").unwrap();
    let hits = s.search("deploying scripts", &Filter::default(), 5).unwrap();
    assert_eq!(hits.len(), 3, "porter stemming: deploy/deploys/deploying, script/scripts");
    assert!(hits[0].memory.id == a || hits[0].memory.id == c, "two-word matches rank first: {:?}", ids(&hits));
    assert!(hits[0].snippet.contains('['), "{}", hits[0].snippet);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hits.iter().all(|h| h.similarity.is_none() && h.bm25 == Some(h.score)), "no embedder: BM25 alone");

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

#[test]
fn queries_are_never_fts_syntax_and_stopwords_do_not_match() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(&dir);
    s.store("a NEAR(b c) \"quoted\" col:value -minus", "t", "note", "").unwrap();
    s.store("the cat is on the mat", "t", "note", "").unwrap();
    for q in ["NEAR(b", "\"", "col:value", "-minus", "*", "AND OR NOT", ""] {
        assert!(s.search(q, &Filter::default(), 5).is_ok(), "{q}");
    }
    assert_eq!(s.search("col:value", &Filter::default(), 5).unwrap().len(), 1);
    assert!(s.search("when does the deploy run", &Filter::default(), 5).unwrap().is_empty(), "only 'the' is shared");
    assert_eq!(s.search("the", &Filter::default(), 5).unwrap().len(), 1, "a query of stopwords alone keeps them");
}

#[test]
fn bad_kind_and_reopen_keep_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(&dir);
    assert!(matches!(s.store("x", "t", "memo", ""), Err(MemoryError::Kind(_))));
    let id = s.store("kept across opens", "t", "note", "").unwrap();
    drop(s);
    assert_eq!(open(&dir).get(id).unwrap().unwrap().text, "kept across opens");
}

#[test]
fn hybrid_finds_synonyms_and_forget_removes_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(&dir).with_embedder(words("words:a", 64)).unwrap();
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

#[test]
fn hybrid_filters_apply_before_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(&dir).with_embedder(words("words:a", 64)).unwrap();
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

#[test]
fn a_new_embedder_re_embeds_lazily_into_its_own_space() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(&dir);
    let first = s.store("credentials are replaced every Friday", "ops", "note", "").unwrap();
    s.store("lunch is at noon", "ops", "note", "").unwrap();
    s.store("the release job tags the commit", "ops", "note", "").unwrap();
    drop(s);

    let seen: Arc<Mutex<Vec<(usize, usize)>>> = Arc::default();
    let mut s = open(&dir).with_embedder(words("words:a", 32)).unwrap();
    let log = Arc::clone(&seen);
    s.set_progress(Arc::new(move |done, total| log.lock().unwrap().push((done, total))));
    assert!(s.spaces().unwrap().is_empty(), "nothing embedded until used");
    let hits = s.search("rotate key", &Filter::default(), 3).unwrap();
    assert_eq!(hits.first().map(|h| h.memory.id), Some(first));
    assert_eq!(*seen.lock().unwrap(), vec![(3, 3)]);
    assert_eq!(s.spaces().unwrap(), vec![("words:a".to_string(), 32, 3)]);
    drop(s);

    // Another embedder, another dimension: its own table, the old one kept.
    let mut s = open(&dir).with_embedder(words("words:b", 48)).unwrap();
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
    let s = open(&dir);
    let last = s.recent(1, "").unwrap()[0].id;
    assert!(s.forget(last).unwrap());
    assert_eq!(s.vector_rows(last).unwrap(), 0);
}

#[test]
fn a_failing_embedder_never_loses_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(&dir).with_embedder(Box::new(Words { id: "down".into(), dim: 8, fail: true })).unwrap();
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
    assert!(bad.contains("none, openai or model2vec"), "{bad}");
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

#[test]
fn past_the_coarse_pool_the_two_stage_knn_still_finds_the_nearest() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(&dir).with_embedder(words("words:a", 64)).unwrap();
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
