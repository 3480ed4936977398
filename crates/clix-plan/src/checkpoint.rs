//! Finished tasks of a plan, saved as each finishes, so `--resume` reruns
//! only what had not finished (failed, skipped, stopped or unstarted), and
//! what the plan's edits since made stale. Kept in a file of clix's state
//! folder, or, with `[storage] url`, in the store every replica shares (so
//! another machine with the same workspace path resumes the plan).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clix_agent::stream::RunResult;
use clix_postgres::SharedStore;
use serde::{Deserialize, Serialize};

use crate::plan::{Plan, Task};

/// The kind of a checkpoint's document in the shared store.
pub const DOCUMENT_KIND: &str = "plan-checkpoint";

/// A plan's checkpoint (under clix's state folder or in the shared store,
/// never the workspace).
#[derive(Debug)]
pub struct Checkpoint {
    place: Place,
    done: BTreeMap<String, Finished>,
    /// For the person, when `--resume` could not take every finished task
    /// (the plan changed since) or found nothing to take.
    pub note: Option<String>,
    /// Why the last save failed, if it did: the run goes on, `--resume` will redo more.
    pub save_error: Option<String>,
}

/// One finished task: its result, and the task as it was then.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Finished {
    /// [`fingerprint`] of the task that made `result`.
    task: String,
    result: RunResult,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    /// When it was last saved, Unix milliseconds.
    saved_ms: u64,
    done: BTreeMap<String, Finished>,
}

/// [`OnDisk::version`]; 1 was keyed by the plan's text and held results only.
const VERSION: u32 = 2;

/// Where a checkpoint is kept.
#[derive(Debug)]
enum Place {
    /// A file of its own.
    File(PathBuf),
    /// The document `key` of [`DOCUMENT_KIND`] in the shared store.
    Shared { store: Arc<SharedStore>, key: String },
}

/// The checkpoint's name for the plan file at `plan_path` (absolute): one
/// per plan file, whatever its text, the same on every machine that has
/// the plan at that path.
pub fn checkpoint_key(plan_path: &Path) -> String {
    clix_common::sha256_hex_prefix(
        format!("plan checkpoint v{VERSION}\0{}", plan_path.to_string_lossy()).as_bytes(),
        12,
    )
}

/// Where the checkpoint of the plan file at `plan_path` (absolute) lives
/// without a shared store: `<state>/plans/<key>.json` ([`checkpoint_key`]).
pub fn checkpoint_path(state_dir: &Path, plan_path: &Path) -> PathBuf {
    state_dir.join("plans").join(format!("{}.json", checkpoint_key(plan_path)))
}

impl Checkpoint {
    /// The checkpoint at `path` for `plan`. With `resume`, it holds the
    /// tasks a run saved there that are still good for `plan`: a finished
    /// task is taken when its `[[task]]` is as it was and every task it
    /// depends on is taken too (else its inputs and the files it read may
    /// change); [`Checkpoint::note`] says what runs again, and why. Without
    /// `resume` it starts empty (an old file is replaced at the first save).
    pub fn open(path: &Path, plan: &Plan, resume: bool) -> io::Result<Checkpoint> {
        Checkpoint::open_at(Place::File(path.to_path_buf()), plan, resume)
    }

    /// [`Checkpoint::open`] of the document `key` ([`checkpoint_key`]) in
    /// the shared store: the same JSON as the file, saved there instead.
    /// A store that cannot be read is an error (nothing ran yet).
    pub fn open_shared(store: Arc<SharedStore>, key: &str, plan: &Plan, resume: bool) -> io::Result<Checkpoint> {
        Checkpoint::open_at(Place::Shared { store, key: key.to_string() }, plan, resume)
    }

    fn open_at(place: Place, plan: &Plan, resume: bool) -> io::Result<Checkpoint> {
        let mut checkpoint = Checkpoint { place, done: BTreeMap::new(), note: None, save_error: None };
        if !resume {
            return Ok(checkpoint);
        }
        let Some(bytes) = checkpoint.load()? else {
            checkpoint.note = Some("no earlier run of this plan was saved, so every task runs".into());
            return Ok(checkpoint);
        };
        let disk: OnDisk = serde_json::from_slice(&bytes).map_err(|e| {
            let remedy = match checkpoint.place {
                Place::File(_) => "remove it to start over",
                Place::Shared { .. } => "run the plan without --resume to start over",
            };
            io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}; {remedy}", checkpoint.location()))
        })?;
        let mut stale: Vec<String> = Vec::new();
        for id in plan.layers().into_iter().flatten() {
            let (Some(task), Some(finished)) = (plan.task(id), disk.done.get(id)) else { continue };
            let why = if finished.task != fingerprint(task) {
                Some("changed".to_string())
            } else {
                let taken: BTreeSet<&str> = checkpoint.done.keys().map(String::as_str).collect();
                task.depends_on.iter().find(|d| !taken.contains(d.as_str())).map(|d| format!("after `{d}`"))
            };
            match why {
                None => {
                    checkpoint.done.insert(id.to_string(), finished.clone());
                }
                Some(why) => stale.push(format!("`{id}` ({why})")),
            }
        }
        if !stale.is_empty() {
            let kept: Vec<String> = checkpoint.done.keys().map(|id| format!("`{id}`")).collect();
            checkpoint.note = Some(format!(
                "the plan changed since its checkpoint of {}: {} finished task{} run{} again: {}; {}",
                when(disk.saved_ms),
                stale.len(),
                if stale.len() == 1 { "" } else { "s" },
                if stale.len() == 1 { "s" } else { "" },
                stale.join(", "),
                if kept.is_empty() { "none is kept".to_string() } else { format!("kept: {}", kept.join(", ")) },
            ));
        }
        Ok(checkpoint)
    }

    /// The tasks finished in earlier runs (and still good for this plan).
    pub fn done(&self) -> Vec<(String, RunResult)> {
        self.done.iter().map(|(k, v)| (k.clone(), v.result.clone())).collect()
    }

    /// Saves `task` as finished with `result`, at once: a kill after this keeps it.
    pub fn record(&mut self, task: &Task, result: &RunResult) {
        self.done.insert(task.id.clone(), Finished { task: fingerprint(task), result: result.clone() });
        match self.save() {
            Ok(()) => self.save_error = None,
            Err(e) => self.save_error = Some(format!("cannot save the checkpoint {}: {e}", self.location())),
        }
    }

    /// Where it is saved, for messages: the file, or the document and the
    /// store (its password as `***`).
    pub fn location(&self) -> String {
        match &self.place {
            Place::File(path) => path.display().to_string(),
            Place::Shared { store, key } => format!("{DOCUMENT_KIND} {key} in {}", store.shown()),
        }
    }

    /// The saved JSON, `None` when nothing was saved.
    fn load(&self) -> io::Result<Option<Vec<u8>>> {
        match &self.place {
            Place::File(path) => match std::fs::read(path) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            },
            Place::Shared { store, key } => store
                .document(DOCUMENT_KIND, key)
                .map(|body| body.map(String::into_bytes))
                .map_err(|e| io::Error::other(e.to_string())),
        }
    }

    fn save(&self) -> io::Result<()> {
        let disk = OnDisk { version: VERSION, saved_ms: clix_agent::trajectory::now_ms(), done: self.done.clone() };
        match &self.place {
            Place::File(path) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
                std::fs::write(&tmp, serde_json::to_vec_pretty(&disk)?)?;
                // A rename is atomic: a kill mid-save leaves the previous file whole.
                std::fs::rename(&tmp, path)
            }
            // One statement replaces the whole document: a kill mid-save leaves the previous one.
            Place::Shared { store, key } => store
                .save_document(DOCUMENT_KIND, key, &serde_json::to_string(&disk)?)
                .map_err(|e| io::Error::other(e.to_string())),
        }
    }
}

/// A task as written (every field: any of them may change what its agent
/// does), hashed.
fn fingerprint(task: &Task) -> String {
    let text = serde_json::to_string(task).unwrap_or_default();
    clix_common::sha256_hex(text.as_bytes())
}

/// `2026-11-30 03:45 UTC`.
fn when(ms: u64) -> String {
    let stamp = clix_agent::trajectory::rfc3339(ms);
    format!("{} {} UTC", &stamp[..10], &stamp[11..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIAMOND: &str = "[[task]]\nid = \"a\"\nprompt = \"collect\"\n[[task]]\nid = \"b\"\nprompt = \"left\"\ndepends_on = [\"a\"]\n[[task]]\nid = \"c\"\nprompt = \"right\"\ndepends_on = [\"a\"]\n[[task]]\nid = \"d\"\nprompt = \"join\"\ndepends_on = [\"b\", \"c\"]\n";

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

    /// `--resume` of a plan edited since its checkpoint keeps each
    /// finished task whose `[[task]]` and dependencies are as they were,
    /// and says which run again and why.
    #[test]
    fn resume_keeps_what_the_edit_left_alone_and_says_what_runs_again() {
        // What finished before, the plan as edited, what is kept, how the note ends.
        type Case<'a> = (&'a str, &'a [&'a str], &'a str, &'a [&'a str], Option<&'a str>);
        let cases: &[Case] = &[
            ("the same text", &["a", "b"], DIAMOND, &["a", "b"], None),
            (
                "a comment, and a task that had not finished, edited",
                &["a", "b", "c"],
                &DIAMOND.replace("join", "join both").replace("[[task]]\nid = \"b\"", "# left\n[[task]]\nid = \"b\""),
                &["a", "b", "c"],
                None,
            ),
            (
                "a finished task edited",
                &["a", "b", "c"],
                &DIAMOND.replace("left", "left half"),
                &["a", "c"],
                Some("1 finished task runs again: `b` (changed); kept: `a`, `c`"),
            ),
            (
                "the first task edited: everything after it runs again",
                &["a", "b", "c"],
                &DIAMOND.replace("collect", "collect more"),
                &[],
                Some("3 finished tasks run again: `a` (changed), `b` (after `a`), `c` (after `a`); none is kept"),
            ),
            (
                "a new dependency is a change",
                &["a", "b", "c"],
                &format!("{DIAMOND}[[task]]\nid = \"z\"\nprompt = \"new\"\n").replace(
                    "prompt = \"right\"\ndepends_on = [\"a\"]",
                    "prompt = \"right\"\ndepends_on = [\"a\", \"z\"]",
                ),
                &["a", "b"],
                Some("1 finished task runs again: `c` (changed); kept: `a`, `b`"),
            ),
            (
                "a finished task removed from the plan",
                &["a", "b"],
                &DIAMOND
                    .replace("\"b\", \"c\"", "\"c\"")
                    .replace("[[task]]\nid = \"b\"\nprompt = \"left\"\ndepends_on = [\"a\"]\n", ""),
                &["a"],
                None,
            ),
        ];
        for (name, finished, edited, kept, note) in cases {
            let state = tempfile::tempdir().unwrap();
            let path = checkpoint_path(state.path(), Path::new("/work/PLAN.toml"));
            let before = Plan::parse(DIAMOND, "before").unwrap();
            let mut first = Checkpoint::open(&path, &before, false).unwrap();
            for id in *finished {
                first.record(before.task(id).unwrap(), &answered(id));
            }
            assert_eq!(first.save_error, None);
            let after = Plan::parse(edited, name).unwrap();
            let resumed = Checkpoint::open(&path, &after, true).unwrap();
            let ids: Vec<String> = resumed.done().into_iter().map(|(id, _)| id).collect();
            assert_eq!(ids, *kept, "{name}");
            for (id, result) in resumed.done() {
                assert_eq!(result, answered(&id), "{name}");
            }
            match (note, &resumed.note) {
                (None, None) => {}
                (Some(says), Some(note)) => {
                    assert!(note.starts_with("the plan changed since its checkpoint of 20"), "{name}: {note}");
                    assert!(note.contains(" UTC: "), "{name}: {note}");
                    assert!(note.ends_with(says), "{name}: {note}");
                }
                (want, got) => panic!("{name}: note {got:?}, expected {want:?}"),
            }
            // Without --resume nothing is taken, and nothing said.
            let fresh = Checkpoint::open(&path, &after, false).unwrap();
            assert!(fresh.done().is_empty() && fresh.note.is_none(), "{name}");
        }
    }

    #[test]
    fn resume_without_a_checkpoint_says_every_task_runs() {
        let state = tempfile::tempdir().unwrap();
        let plan = Plan::parse(DIAMOND, "p").unwrap();
        let path = checkpoint_path(state.path(), Path::new("/work/PLAN.toml"));
        let resumed = Checkpoint::open(&path, &plan, true).unwrap();
        assert!(resumed.done().is_empty());
        assert_eq!(resumed.note.as_deref(), Some("no earlier run of this plan was saved, so every task runs"));
        // One checkpoint per plan file: its text is not in the key.
        assert_ne!(path, checkpoint_path(state.path(), Path::new("/work/OTHER.toml")));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{not json").unwrap();
        let err = Checkpoint::open(&path, &plan, true).unwrap_err();
        assert!(err.to_string().contains("remove it to start over"), "{err}");
    }
    fn ids(checkpoint: &Checkpoint) -> Vec<String> {
        checkpoint.done().into_iter().map(|(id, _)| id).collect()
    }

    /// A plan's checkpoint in the store every replica shares, against a
    /// real PostgreSQL (clix-testkit's): what one machine saves another
    /// resumes, a save while the store is down is said and the run's tasks
    /// are kept, and the next save after the restart holds them all. The
    /// only test of this binary that uses its server, which it stops and
    /// restarts.
    #[test]
    fn a_checkpoint_in_the_shared_store_resumes_on_another_machine_and_survives_a_store_outage() {
        let test = "a_checkpoint_in_the_shared_store_resumes_on_another_machine_and_survives_a_store_outage";
        let Some(pg) = clix_testkit::Postgres::for_test(test) else { return };
        let url = pg.database();
        let db = url.rsplit('/').next().unwrap().to_string();
        SharedStore::migrate(&url).unwrap();
        let plan = Plan::parse(DIAMOND, "PLAN.toml").unwrap();
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
}
