//! Finished tasks of a plan, saved as each finishes, so `--resume` reruns
//! only what had not finished (failed, skipped, stopped or unstarted).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use clix_agent::stream::RunResult;
use serde::{Deserialize, Serialize};

/// A plan's checkpoint file (under clix's state folder, never the workspace).
#[derive(Debug)]
pub struct Checkpoint {
    path: PathBuf,
    done: BTreeMap<String, RunResult>,
    /// Why the last save failed, if it did: the run goes on, `--resume` will redo more.
    pub save_error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    done: BTreeMap<String, RunResult>,
}

impl Checkpoint {
    /// The checkpoint at `path`: what it holds with `resume`, else a new
    /// one (an old file is replaced at the first save).
    pub fn open(path: &Path, resume: bool) -> io::Result<Checkpoint> {
        let done = if resume {
            match std::fs::read(path) {
                Ok(bytes) => {
                    let disk: OnDisk = serde_json::from_slice(&bytes).map_err(|e| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{}: {e}; remove it to start over", path.display()),
                        )
                    })?;
                    disk.done
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
                Err(e) => return Err(e),
            }
        } else {
            BTreeMap::new()
        };
        Ok(Checkpoint { path: path.to_path_buf(), done, save_error: None })
    }

    /// The tasks finished in earlier runs.
    pub fn done(&self) -> Vec<(String, RunResult)> {
        self.done.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Saves `id` as finished, at once: a kill after this keeps it.
    pub fn record(&mut self, id: &str, result: &RunResult) {
        self.done.insert(id.to_string(), result.clone());
        if let Err(e) = self.save() {
            self.save_error = Some(format!("cannot save the checkpoint {}: {e}", self.path.display()));
        }
    }

    /// Where it is saved.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn save(&self) -> io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let disk = OnDisk { version: 1, done: self.done.clone() };
        let tmp = self.path.with_extension(format!("tmp.{}", std::process::id()));
        std::fs::write(&tmp, serde_json::to_vec_pretty(&disk)?)?;
        // A rename is atomic: a kill mid-save leaves the previous file whole.
        std::fs::rename(&tmp, &self.path)
    }
}
