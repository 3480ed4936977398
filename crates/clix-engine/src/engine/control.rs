//! The person's control of the workspace around each call: a checkpoint
//! before and after it, the `review` question, and the read-only mode.

use std::path::PathBuf;
use std::sync::Arc;

use clix_checkpoint::{ChangeSet, CheckpointSettings, Checkpoints, Reviewer, WorkMode};
use clix_shell::Workspace;

/// How the workspace is kept under the person's control (`[checkpoints]`,
/// `--mode`).
#[derive(Clone)]
pub struct WorkspaceControl {
    /// clix's state folder: the store lives in its `checkpoints/`.
    pub state_dir: PathBuf,
    /// The run the calls belong to until an agent names its own.
    pub run: String,
    /// `[checkpoints]`.
    pub settings: CheckpointSettings,
    /// `auto`, `review` or `read-only`.
    pub mode: WorkMode,
    /// Who answers `review`; required in that mode.
    pub reviewer: Option<Arc<dyn Reviewer>>,
}

impl std::fmt::Debug for WorkspaceControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceControl")
            .field("run", &self.run)
            .field("mode", &self.mode)
            .field("settings", &self.settings)
            .field("reviewer", &self.reviewer.is_some())
            .finish()
    }
}

/// Where a read-only session may still write: clix's own spilled outputs.
pub(super) const SPILLS: &str = ".clix/out";

/// The refusal of a write in read-only mode, as the handle gives it.
pub(super) const READ_ONLY: &str = "the workspace is read-only in this session (--mode read-only): nothing in it \
     can change. Answer from what you can read, or ask the person to start clix with --mode auto";

/// What an engine does around each call.
pub(super) struct Control {
    pub(super) mode: WorkMode,
    checkpoints: Option<Checkpoints>,
    reviewer: Option<Arc<dyn Reviewer>>,
}

/// What the control saw of one call.
#[derive(Debug, Clone, Default)]
pub struct CallChanges {
    /// The call's changes (empty when it changed nothing), `None` when no
    /// checkpoint is kept.
    pub set: Option<ChangeSet>,
    /// `review`: the person declined them and the workspace is as before the call.
    pub declined: bool,
    /// Why the call's changes could not be kept, when they could not.
    pub problem: Option<String>,
}

/// Why a mode cannot be had, or the checkpoints cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum ModeError {
    /// Read-only is entered or left only when clix starts.
    #[error(
        "read-only is chosen when clix starts (its shell and sandbox open the workspace read-only): start it again \
         with --mode read-only, or without it"
    )]
    ReadOnlyAtStart,
    /// Review asks a person, and there is none.
    #[error(
        "review mode asks a person about each call's changes, and this session has no one to ask (no terminal); use \
         --mode auto (changes kept, `clix undo` puts them back) or --mode read-only"
    )]
    NoPerson,
    /// Review puts changes back, which needs checkpoints.
    #[error("review mode needs checkpoints, and [checkpoints] enabled = false; enable them or use --mode auto")]
    NoCheckpoints,
    /// The checkpoint store cannot be opened.
    #[error("the checkpoint store in {}: {source}", dir.display())]
    Store {
        /// The state folder.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The read-only handle (and its spills folder) cannot be made.
    #[error("{0}")]
    ReadOnly(std::io::Error),
}

impl Control {
    /// The control `config` asks for over `workspace`; in read-only mode
    /// the workspace handed back is the read-only one.
    pub(super) fn open(
        config: Option<WorkspaceControl>,
        workspace: Workspace,
    ) -> Result<(Control, Workspace), ModeError> {
        let Some(config) = config else {
            return Ok((Control { mode: WorkMode::Auto, checkpoints: None, reviewer: None }, workspace));
        };
        if config.mode == WorkMode::ReadOnly {
            workspace.create_dir(std::path::Path::new(SPILLS), true).map_err(ModeError::ReadOnly)?;
            let read_only = workspace.read_only(&[PathBuf::from(SPILLS)], READ_ONLY).map_err(ModeError::ReadOnly)?;
            return Ok((Control { mode: config.mode, checkpoints: None, reviewer: None }, read_only));
        }
        if config.mode == WorkMode::Review {
            review_possible(config.reviewer.is_some(), config.settings.enabled)?;
        }
        let checkpoints = if config.settings.enabled {
            let folder = (*workspace).clone();
            let places = folder.writable();
            let checkpoints = Checkpoints::open(&config.state_dir, folder, &config.run, config.settings)
                .map_err(|source| ModeError::Store { dir: config.state_dir.clone(), source })?;
            // A plan task's changes are those in its own places.
            Some(match places {
                Some(places) => checkpoints.within(&places),
                None => checkpoints,
            })
        } else {
            None
        };
        Ok((Control { mode: config.mode, checkpoints, reviewer: config.reviewer }, workspace))
    }

    /// Switches between `auto` and `review` (see `Engine::set_mode`).
    pub(super) fn set_mode(&mut self, mode: WorkMode) -> Result<(), ModeError> {
        if mode == self.mode {
            return Ok(());
        }
        if mode == WorkMode::ReadOnly || self.mode == WorkMode::ReadOnly {
            return Err(ModeError::ReadOnlyAtStart);
        }
        if mode == WorkMode::Review {
            review_possible(self.reviewer.is_some(), self.checkpoints.is_some())?;
        }
        self.mode = mode;
        Ok(())
    }

    /// Names the run the next calls belong to.
    pub(super) fn set_run(&mut self, run: &str) {
        if let Some(cp) = &mut self.checkpoints {
            cp.set_run(run);
        }
    }

    /// Before a call: the tree brought up to date. A failure is said after the call.
    pub(super) fn before(&mut self) -> Option<String> {
        let cp = self.checkpoints.as_mut()?;
        cp.before_call().err().map(|e| format!("no checkpoint before this call: {e}"))
    }

    /// After a call: its changes, and in `review` the person's answer.
    pub(super) fn after(&mut self, line: &str, problem: Option<String>) -> CallChanges {
        let Some(cp) = self.checkpoints.as_mut() else { return CallChanges::default() };
        let set = match cp.after_call(line) {
            Ok(set) => set,
            Err(e) => {
                let problem = problem.unwrap_or_else(|| format!("this call's changes were not kept: {e}"));
                return CallChanges { set: None, declined: false, problem: Some(problem) };
            }
        };
        let mut changes = CallChanges { set: None, declined: false, problem };
        let reviewer = self.reviewer.as_ref().filter(|_| self.mode == WorkMode::Review && !set.changes.is_empty());
        if let Some(reviewer) = reviewer {
            let diff = clix_checkpoint::diff(cp.store(), std::slice::from_ref(&set))
                .unwrap_or_else(|e| format!("(the diff could not be made: {e})\n"));
            if !reviewer.keep(line, &set, &diff) {
                decline(cp, &set, &mut changes);
            }
        }
        changes.set = Some(set);
        changes
    }
}

/// Whether `review` can run: a person to ask, and checkpoints to put a
/// declined call's changes back from.
fn review_possible(person: bool, checkpoints: bool) -> Result<(), ModeError> {
    match (person, checkpoints) {
        (false, _) => Err(ModeError::NoPerson),
        (true, false) => Err(ModeError::NoCheckpoints),
        (true, true) => Ok(()),
    }
}

/// The person said no: the call's changes put back, and what could not be.
fn decline(cp: &mut Checkpoints, set: &ChangeSet, changes: &mut CallChanges) {
    match cp.decline(set) {
        Ok(report) if report.left.is_empty() => changes.declined = true,
        Ok(report) => {
            changes.declined = true;
            let left: Vec<String> = report.left.iter().map(|(p, why)| format!("{p} ({why})")).collect();
            changes.problem = Some(format!("declined, but not all was put back: {}", left.join("; ")));
        }
        Err(e) => changes.problem = Some(format!("declined, but the changes could not be put back: {e}")),
    }
}
