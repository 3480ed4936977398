//! `clix diff` and `clix undo`: what an agent changed in the workspace, and
//! putting it back; and the terminal's `review` question.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clix_checkpoint::CheckpointStore;
use clix_config::Paths;
use clix_workspace::Workspace;

/// Which run, which steps, which workspace.
#[derive(clap::Args)]
pub(crate) struct ChangesArgs {
    /// The run: its id (as `clix runs` and each change summary name it), or
    /// `last`, the newest run that changed this workspace.
    #[arg(value_name = "RUN", default_value = "last")]
    run: String,
    /// Only step N (diff), or from step N on (undo): the run's calls count from 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    step: Option<u32>,
    /// The workspace (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
}

/// `clix diff`'s own flags.
#[derive(clap::Args)]
pub(crate) struct DiffArgs {
    #[command(flatten)]
    which: ChangesArgs,
    /// One line per path with its lines added and removed, instead of the diff.
    #[arg(long)]
    stat: bool,
}

/// `clix undo`'s own flags.
#[derive(clap::Args)]
pub(crate) struct UndoArgs {
    #[command(flatten)]
    which: ChangesArgs,
    /// Put back paths the person changed since too, keeping their version
    /// beside each as PATH.clix-undo-backup.
    #[arg(long)]
    force: bool,
}

/// The workspace at `dir`, checked and opened as a handle, and its checkpoint store.
fn open(paths: &Paths, args: &ChangesArgs) -> Result<(Workspace, CheckpointStore, String)> {
    let dir = crate::cli::workspace_or_cwd(args.workspace.clone())?;
    let (workspace, store) = clix_session::checkpoints(paths, &dir)?;
    let run = store.resolve(&args.run)?;
    Ok((workspace, store, run))
}

/// `clix diff [RUN|last] [--step N] [--stat]`.
pub(crate) fn diff(paths: &Paths, args: DiffArgs) -> Result<ExitCode> {
    let (_, store, run) = open(paths, &args.which)?;
    let mut sets = store.changes_of(&run)?;
    if let Some(step) = args.which.step {
        sets.retain(|s| s.step == step);
        if sets.is_empty() {
            anyhow::bail!("run {run} has no step {step} that changed something; `clix diff {run} --stat` lists them");
        }
    }
    let text = if args.stat { clix_checkpoint::stat(&store, &sets)? } else { clix_checkpoint::diff(&store, &sets)? };
    clix_terminal::out(clix_terminal::changes_view::diff(&sets, &text).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// `clix undo [RUN|last] [--step N] [--force]`.
pub(crate) fn undo(paths: &Paths, args: UndoArgs) -> Result<ExitCode> {
    let (workspace, store, run) = open(paths, &args.which)?;
    let from = args.which.step.unwrap_or(1);
    let report = clix_checkpoint::undo(&store, &workspace, &run, from, args.force)?;
    let what = if from > 1 { format!("run {run} from step {from} on") } else { format!("run {run}") };
    clix_terminal::out(clix_terminal::changes_view::undone(&what, &report).as_bytes())?;
    for (path, why) in &report.left {
        eprintln!("  left {path}: {why}");
    }
    Ok(if report.left.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
