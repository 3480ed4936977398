//! A run's results in the store every replica shares (`[storage] url`):
//! saved under the name of the run's output folder beside its
//! `results.json`, so `clix eval compare` on any machine reads a run by
//! name.

use std::path::Path;
use std::sync::Arc;

use clix_postgres::SharedStore;

use crate::report::Results;

/// The kind of a run's document in the shared store.
pub const DOCUMENT_KIND: &str = "eval-run";

/// Why the shared store's runs cannot be read or saved.
#[derive(Debug, thiserror::Error)]
pub enum SharedRunsError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] clix_postgres::StoreError),
    /// A stored run cannot be read back.
    #[error(transparent)]
    Results(#[from] crate::ResultsError),
    /// Results that cannot be written as JSON.
    #[error("the results cannot be written as JSON: {0}")]
    Encode(#[from] serde_json::Error),
}

/// The runs saved in one shared store.
#[derive(Debug, Clone)]
pub struct SharedRuns {
    store: Arc<SharedStore>,
}

impl SharedRuns {
    /// The runs of `store`.
    pub fn new(store: Arc<SharedStore>) -> SharedRuns {
        SharedRuns { store }
    }

    /// The store as messages name it (password as `***`).
    pub fn shown(&self) -> &str {
        self.store.shown()
    }

    /// Saves `results` as the run `name`, replacing one of that name.
    pub fn save(&self, name: &str, results: &Results) -> Result<(), SharedRunsError> {
        let json = serde_json::to_string(results)?;
        Ok(self.store.save_document(DOCUMENT_KIND, name, &json)?)
    }

    /// The run `name`'s results, `None` when no run of that name was saved.
    pub fn get(&self, name: &str) -> Result<Option<Results>, SharedRunsError> {
        let Some(text) = self.store.document(DOCUMENT_KIND, name)? else {
            return Ok(None);
        };
        Ok(Some(Results::parse(&text, &format!("{DOCUMENT_KIND} {name} in {}", self.shown()))?))
    }

    /// The names of the saved runs, sorted.
    pub fn names(&self) -> Result<Vec<String>, SharedRunsError> {
        Ok(self.store.document_keys(DOCUMENT_KIND)?)
    }
}

/// Saves the results just written into `out` in the shared store too,
/// under the folder's name; what was done or why not, as a line for the
/// person (the folder has the results either way).
pub fn share(runs: &SharedRuns, results: &Results, out: &Path) -> String {
    let Some(name) = run_name(out) else {
        return format!("clix: {} has no name to save the run under in {}", out.display(), runs.shown());
    };
    match runs.save(&name, results) {
        Ok(()) => format!("saved as {name} in {}", runs.shown()),
        Err(e) => format!("clix: cannot save the run as {name}: {e}"),
    }
}

/// Why a run to compare cannot be found.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// The folder or file is there, and cannot be read.
    #[error(transparent)]
    Local(#[from] crate::ResultsError),
    /// The shared store cannot be connected to or read.
    #[error("{0}")]
    Store(String),
    /// No such folder, and no shared store to look the name up in.
    #[error(
        "{}: no such folder; give a run's output folder (its --out) or its results.json, or, with [storage] url \
         set, the name a run was saved under",
        .0.display()
    )]
    NoSuchFolder(std::path::PathBuf),
    /// No such folder, nor a run of that name in the store.
    #[error("{name}: no such folder, and no run of that name in {store}; `clix eval runs` lists the saved ones")]
    NoSuchRun {
        /// The name given.
        name: String,
        /// The store, as it is shown.
        store: String,
    },
}

/// A run given as its folder or `results.json`, else as the name it was
/// saved under in the shared store (`shared` connects to it, only for a
/// name that is no local file); with how to show where it came from.
pub fn find_results(
    given: &Path,
    shared: &mut dyn FnMut() -> Result<Option<SharedRuns>, String>,
) -> Result<(Results, String), FindError> {
    if given.exists() {
        return Ok((crate::read_run(given)?, given.display().to_string()));
    }
    let Some(runs) = shared().map_err(FindError::Store)? else {
        return Err(FindError::NoSuchFolder(given.to_path_buf()));
    };
    let name = given.to_string_lossy().into_owned();
    match runs.get(&name).map_err(|e| FindError::Store(e.to_string()))? {
        Some(results) => Ok((results, format!("{name} (saved in {})", runs.shown()))),
        None => Err(FindError::NoSuchRun { name, store: runs.shown().to_string() }),
    }
}

/// The name a run written into the folder `out` is saved under: the
/// folder's own name (`--out runs/nightly` is `nightly`; without `--out`,
/// the time it started, `20261202-141500`). `None` when the folder is not
/// there or has no name (`/`).
pub fn run_name(out: &Path) -> Option<String> {
    let folder = std::fs::canonicalize(out).ok()?;
    folder.file_name().map(|name| name.to_string_lossy().into_owned())
}
