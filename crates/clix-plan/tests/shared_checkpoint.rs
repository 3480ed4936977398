//! A plan's checkpoint in the store every replica shares, against a real
//! PostgreSQL (clix-testkit's): what one machine saves another resumes, a
//! save while the store is down is said and the run's tasks are kept, and
//! the next save after the restart holds them all.
//!
//! One test: it stops and restarts this binary's server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::Path;
use std::sync::Arc;

use clix_agent::stream::RunResult;
use clix_plan::{Checkpoint, DOCUMENT_KIND, Plan, checkpoint_key};
use clix_store::SharedStore;
use clix_testkit::Postgres;

const PLAN: &str = "[[task]]\nid = \"a\"\nprompt = \"collect\"\n[[task]]\nid = \"b\"\nprompt = \"left\"\ndepends_on = [\"a\"]\n[[task]]\nid = \"c\"\nprompt = \"right\"\ndepends_on = [\"a\"]\n[[task]]\nid = \"d\"\nprompt = \"join\"\ndepends_on = [\"b\", \"c\"]\n";

fn answered(id: &str) -> RunResult {
    RunResult {
        is_error: false,
        stop_reason: clix_agent::StopReason::Answered,
        answer: format!("{id} answered"),
        steps: 1,
        usage: clix_agent::Usage { input_tokens: 1, output_tokens: 1, ..Default::default() },
        cost: None,
        duration_ms: 1,
        artifacts: vec![],
        run_id: None,
    }
}

fn ids(checkpoint: &Checkpoint) -> Vec<String> {
    checkpoint.done().into_iter().map(|(id, _)| id).collect()
}

#[test]
fn a_checkpoint_in_the_shared_store_resumes_on_another_machine_and_survives_a_store_outage() {
    let Some(pg) = Postgres::shared() else {
        return clix_testkit::skip_missing(
            "a_checkpoint_in_the_shared_store_resumes_on_another_machine_and_survives_a_store_outage",
            clix_testkit::postgres::MISSING,
        );
    };
    let url = pg.database();
    let db = url.rsplit('/').next().unwrap().to_string();
    SharedStore::migrate(&url).unwrap();
    let plan = Plan::parse(PLAN, "PLAN.toml").unwrap();
    let key = checkpoint_key(Path::new("/srv/project/PLAN.toml"));

    // Machine A finishes a and b.
    let on_a = Arc::new(SharedStore::connect(&url).unwrap());
    let mut first = Checkpoint::open_shared(on_a.clone(), &key, &plan, false).unwrap();
    assert!(first.location().starts_with(&format!("{DOCUMENT_KIND} {key} in ")), "{}", first.location());
    for id in ["a", "b"] {
        first.record(plan.task(id).unwrap(), &answered(id));
    }
    assert_eq!(first.save_error, None);
    // The document is the file's JSON: its version and the finished tasks.
    let saved = pg.psql(&db, &format!("SELECT body->'version', body->'done' ? 'b' FROM clix_documents WHERE kind = '{DOCUMENT_KIND}' AND key = '{key}'"));
    assert_eq!(saved.trim(), "2|t", "{saved}");

    // Machine B, its own connection, resumes them; another plan file has nothing.
    let on_b = Arc::new(SharedStore::connect(&url).unwrap());
    let mut resumed = Checkpoint::open_shared(on_b.clone(), &key, &plan, true).unwrap();
    assert_eq!((ids(&resumed), resumed.note.clone()), (vec!["a".to_string(), "b".to_string()], None));
    for (id, result) in resumed.done() {
        assert_eq!(result, answered(&id));
    }
    let other =
        Checkpoint::open_shared(on_b.clone(), &checkpoint_key(Path::new("/srv/project/OTHER.toml")), &plan, true)
            .unwrap();
    assert!(other.done().is_empty());
    assert_eq!(other.note.as_deref(), Some("no earlier run of this plan was saved, so every task runs"));

    // The store goes down while B runs c: said, and the run keeps c.
    pg.stop();
    resumed.record(plan.task("c").unwrap(), &answered("c"));
    let why = resumed.save_error.clone().expect("a failed save is said");
    assert!(why.starts_with(&format!("cannot save the checkpoint {DOCUMENT_KIND} {key} in ")), "{why}");
    assert!(why.contains("unreachable"), "{why}");
    assert_eq!(ids(&resumed), ["a", "b", "c"]);
    // A resume cannot start from a store it cannot read.
    let err = Checkpoint::open_shared(on_a.clone(), &key, &plan, true).unwrap_err();
    assert!(err.to_string().contains("unreachable"), "{err}");

    // Back up: the next save holds everything finished, c included.
    pg.start_again();
    resumed.record(plan.task("d").unwrap(), &answered("d"));
    assert_eq!(resumed.save_error, None);
    let again = Checkpoint::open_shared(on_a, &key, &plan, true).unwrap();
    assert_eq!(ids(&again), ["a", "b", "c", "d"]);

    // Without --resume nothing is taken, and the first save replaces the document.
    let mut fresh = Checkpoint::open_shared(on_b.clone(), &key, &plan, false).unwrap();
    assert!(fresh.done().is_empty());
    fresh.record(plan.task("a").unwrap(), &answered("a"));
    assert_eq!(ids(&Checkpoint::open_shared(on_b, &key, &plan, true).unwrap()), ["a"]);
}
