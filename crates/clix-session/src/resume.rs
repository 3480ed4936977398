//! Which earlier run an `ask` or `chat` goes on with, and its conversation
//! rebuilt from its file.

use std::path::Path;

use clix_config::Paths;

/// Which earlier run an `ask` or `chat` goes on with.
pub enum Resume {
    /// This workspace's run written to last.
    Latest,
    /// The run a person named (an id, its start, `last`).
    Named(String),
}

impl Resume {
    /// From `--continue` and `--resume [RUN_ID]` (empty: the latest).
    pub fn from_flags(continue_last: bool, resume: Option<&str>) -> Option<Resume> {
        match resume {
            Some("") => Some(Resume::Latest),
            Some(named) => Some(Resume::Named(named.to_string())),
            None => continue_last.then_some(Resume::Latest),
        }
    }

    /// The run's conversation, rebuilt from its file (up to step
    /// `from_step` when given).
    pub fn load(
        &self,
        paths: &Paths,
        workspace: &Path,
        from_step: Option<u32>,
    ) -> Result<clix_agent::Resumable, clix_agent::RunError> {
        let runs = crate::runs_dir(paths);
        let id = match self {
            Resume::Latest => clix_agent::latest_resumable(&runs, &workspace.display().to_string()),
            Resume::Named(named) => clix_agent::find_run(&runs, named),
        };
        let id = id?;
        Ok(match from_step {
            Some(step) => clix_agent::resumable_before(&runs, &id, step)?,
            None => clix_agent::resumable(&runs, &id)?,
        })
    }
}
